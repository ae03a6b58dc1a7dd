/**
 * Time limits for every wait a test makes on a worker, a socket or a server, so that a test fails
 * with what it waited for instead of hanging the suite.
 *
 * @module
 */

/** The limit for one wait when a test names none: long enough for a cold real pwsh on 2 busy cores. */
export const DEFAULT_WAIT_MS = 60_000;

/** Why a wait ended early: the awaited thing cannot happen any more (e.g. the process exited). */
export class WaitFailed extends Error {}

/**
 * Resolves as `promise` does, or rejects after `ms` with "timed out after N s waiting for <what>".
 * The timer is cleared either way, so it never outlives the test.
 */
export async function within<T>(
  promise: Promise<T>,
  what: string,
  ms: number = DEFAULT_WAIT_MS,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new WaitFailed(`timed out after ${ms / 1000} s waiting for ${what}`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits for `promise` unless `child` exits first; then fails at once with the exit code and what the
 * child wrote to stderr (read through `stderr()`, which the caller collects).
 */
export async function unlessExited<T>(
  promise: Promise<T>,
  what: string,
  child: { status: Promise<Deno.CommandStatus> },
  stderr: () => string | Promise<string>,
  ms: number = DEFAULT_WAIT_MS,
): Promise<T> {
  let settled = false;
  const exited = child.status.then(async (status) => {
    if (settled) return new Promise<never>(() => {});
    throw new WaitFailed(
      `the process exited with code ${status.code} while the test waited for ${what}; stderr: ` +
        ((await stderr()).trim() || "(empty)"),
    );
  });
  try {
    return await within(Promise.race([promise, exited]), what, ms);
  } finally {
    settled = true;
  }
}

/**
 * Runs a command to its end like `Deno.Command#output`, but kills it after `ms` and then fails with
 * "<what> did not finish within N s" and what it wrote to stderr so far.
 */
export async function outputWithin(
  command: string | URL,
  options: Omit<Deno.CommandOptions, "signal">,
  what: string,
  ms: number = DEFAULT_WAIT_MS,
): Promise<Deno.CommandOutput> {
  const signal = AbortSignal.timeout(ms);
  const output = await new Deno.Command(command, { ...options, signal }).output();
  if (signal.aborted) {
    const stderr = options.stderr === "piped" ? new TextDecoder().decode(output.stderr) : "";
    throw new WaitFailed(
      `${what} did not finish within ${ms / 1000} s and was killed; stderr: ${
        stderr.trim() || "(not captured)"
      }`,
    );
  }
  return output;
}
