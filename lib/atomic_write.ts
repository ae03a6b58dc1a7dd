/**
 * Replacing a file in one step, so a reader (or a crash) never sees half a file: the text is written
 * to a temporary file beside the target, which is then renamed over it (through symlinks, keeping
 * the target's permissions).
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import { ConfigError } from "./errors.ts";

/**
 * Writes `text` to `path` atomically.
 *
 * @throws {ConfigError} `UNREADABLE_FILE` naming the file and the reason when it cannot be written.
 */
export async function writeFileAtomically(path: string, text: string): Promise<void> {
  try {
    await replaceFile(path, text);
  } catch (error) {
    throw cannotWrite(path, error);
  }
}

/**
 * Writes `text` to `path` atomically, throwing the system's error as it is (a cache, where a failed
 * write is only logged, has no configuration error to report). `options.mode` (Unix) is the new
 * file's mode whatever the umask or the file it replaces. @default the replaced file's mode, else
 * 0o666 less the umask
 */
export async function replaceFile(
  path: string,
  text: string,
  options: { mode?: number } = {},
): Promise<void> {
  let target = path;
  let mode: number | null = options.mode ?? null;
  try {
    target = await Deno.realPath(path);
    mode ??= (await Deno.stat(target)).mode;
  } catch { /* a new file */ }
  const temp = join(dirname(target), `.${basename(target)}.${crypto.randomUUID()}.tmp`);
  try {
    await Deno.writeTextFile(temp, text, {
      createNew: true,
      ...(mode !== null ? { mode: mode & 0o700 } : {}),
    });
    if (mode !== null && Deno.build.os !== "windows") await Deno.chmod(temp, mode & 0o7777);
    await Deno.rename(temp, target);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
}

/** The error for a file that cannot be written: names the file and the system's reason. */
export function cannotWrite(path: string, error: unknown): ConfigError {
  return new ConfigError(
    "UNREADABLE_FILE",
    `Cannot write configuration file '${path}': ${
      error instanceof Error ? error.message : String(error)
    }`,
    { cause: error },
  );
}
