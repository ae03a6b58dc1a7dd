/**
 * Noticing, while svc runs, that its configuration file changed. svc reads its configuration once,
 * at start: authentication, roles, limits and the pool's shape cannot change under calls and
 * sessions in flight without a window where neither the old nor the new rules hold. So a change is
 * said, not applied: one Warning per change of content, naming the file and that a restart applies
 * it, so an edit is never silently ignored. The tools' own code reloads by itself
 * (`lib/catalog_watch.ts`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { basename, dirname } from "node:path";
import { logger } from "./log.ts";

const log = logger("config");

/** Options of {@linkcode watchConfigFile}. */
export interface ConfigWatchOptions {
  /** Quiet time after the last event before the file is read, in ms. @default 300 */
  settleMs?: number;
  /** Told of each change of content, after the Warning. @default nothing */
  onChange?: (path: string) => void;
}

/**
 * Watches `path` (its folder, for editors that save by renaming) and says at Warning each change of
 * its content. Returns what stops the watch.
 */
export function watchConfigFile(path: string, options: ConfigWatchOptions = {}): Disposable {
  let digest = digestOf(path);
  let timer: ReturnType<typeof setTimeout> | null = null;
  let watcher: Deno.FsWatcher | null = null;
  try {
    watcher = Deno.watchFs(dirname(path), { recursive: false });
  } catch (error) {
    log.warning("Cannot watch the configuration file {Path} for changes: {Error}", {
      Path: path,
      Error: String(error),
    });
  }
  const check = () => {
    timer = null;
    const now = digestOf(path);
    if (now === digest) return;
    digest = now;
    log.warning(
      "The configuration file {Path} changed; svc reads its configuration at start, so restart it to apply the change (until then the settings it started with hold).",
      { Path: path },
    );
    options.onChange?.(path);
  };
  if (watcher) {
    const name = basename(path);
    (async () => {
      try {
        for await (const event of watcher) {
          if (!event.paths.some((changed) => basename(changed) === name)) continue;
          if (timer !== null) clearTimeout(timer);
          timer = setTimeout(check, options.settleMs ?? 300);
        }
      } catch {
        // Closed, or the folder went away.
      }
    })();
  }
  return {
    [Symbol.dispose]() {
      if (timer !== null) clearTimeout(timer);
      watcher?.close();
      watcher = null;
    },
  };
}

/** The content's digest, or "missing" when it cannot be read (a change too, once it is back). */
function digestOf(path: string): string {
  try {
    return createHash("sha256").update(Deno.readFileSync(path)).digest("hex");
  } catch {
    return "missing";
  }
}
