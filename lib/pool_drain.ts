/**
 * The end of a pool's drain: what a call refused or cut off is told, and closing every worker by
 * the drain's deadline. Idle workers are asked to exit and busy ones killed at once (their calls
 * fail saying svc is shutting down); an idle one that has not exited when the time is up is killed
 * too, so the whole drain keeps to `ShutdownDrainTimeout`.
 *
 * @module
 */
import type { RunspaceWorker } from "./worker.ts";

/** What a call refused or cut off by a drain is told. */
export const SHUTTING_DOWN = "svc is shutting down";

/** Options of `WorkerPool.drain`. */
export interface DrainOptions {
  /**
   * When calls in flight are cut off (ms since the epoch). @default `ShutdownDrainTimeout` from the
   * start of the drain
   */
  deadline?: number;
  /** Aborted (a second Ctrl+C or SIGTERM): calls in flight are cut off at once. @default none */
  force?: AbortSignal;
}

/** The sentence a call cut off by a drain fails with. */
export function cutOffReason(drainMs: number, forced: boolean): string {
  return `${SHUTTING_DOWN}: the call did not end within ShutdownDrainTimeout (${
    Math.round(drainMs / 1000)
  } s)${forced ? " or was stopped by a second signal" : ""} and was stopped`;
}

/**
 * Waits for `closing` (the workers being closed), killing at `deadline` (at once when `force` is
 * aborted) any of `workers` that is still there, their calls failing with `reason`.
 */
export async function closeByDeadline(
  closing: Promise<unknown>[],
  workers: RunspaceWorker[],
  options: { deadline: number; force?: AbortSignal | undefined; reason: string },
): Promise<void> {
  const { deadline, force, reason } = options;
  const late = setTimeout(() => {
    for (const worker of workers) void worker.kill(reason).catch(() => {});
  }, force?.aborted ? 0 : Math.max(0, deadline - Date.now()));
  try {
    await Promise.all(closing);
  } finally {
    clearTimeout(late);
  }
}
