/**
 * Noticing, while svc runs, that a file the tools' code comes from has changed: the folders of a
 * catalog's sources (`lib/catalog_sources.ts`) are watched with `Deno.watchFs`, and an event for a
 * PowerShell file in one of them is checked against the stamps after a short quiet time (an editor
 * writes, renames and touches a file several times per save). Only a real change of content, or of
 * the PowerShell files a folder holds, is reported; what is done about it is the caller's
 * (`ShellConfiguration:ReloadOnChange`, the transports).
 *
 * @module
 */
import { basename } from "node:path";
import {
  changedSource,
  POWERSHELL_FILE,
  type SourceStamps,
  stampSources,
} from "./catalog_sources.ts";
import { logger } from "./log.ts";

const log = logger("catalog");

/** Options of {@linkcode SourceWatch}. */
export interface SourceWatchOptions {
  /**
   * Called with the first changed path once a change is confirmed, one call at a time. A reload
   * that succeeds points the watch at its catalog's sources ({@linkcode SourceWatch.watch}); one
   * that fails leaves it watching the same files, from their content at the change.
   */
  onChange: (path: string) => Promise<void>;
  /** Quiet time after the last event before the sources are checked, in ms. @default 300 */
  settleMs?: number;
}

/** Watches the folders of a catalog's sources; {@linkcode SourceWatch.watch} points it at new ones. */
export class SourceWatch implements Disposable {
  readonly #options: SourceWatchOptions;
  #stamps: SourceStamps | null = null;
  #watcher: Deno.FsWatcher | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #busy = false;
  #again = false;
  #closed = false;

  /** Watches nothing until {@linkcode SourceWatch.watch} is given stamps. */
  constructor(options: SourceWatchOptions) {
    this.#options = options;
  }

  /** Watches the folders of `stamps` (replacing what was watched) and checks against them. */
  watch(stamps: SourceStamps | undefined): void {
    if (this.#closed || !stamps) return;
    this.#stamps = stamps;
    const folders = stamps.folders.map((f) => f.path);
    this.#watcher?.close();
    this.#watcher = null;
    if (folders.length === 0) return;
    try {
      this.#watcher = Deno.watchFs(folders, { recursive: false });
    } catch (error) {
      log.warning("Cannot watch {Folders} for changes: {Error}", {
        Folders: folders.join(", "),
        Error: String(error),
      });
      return;
    }
    log.debug("Watching {Count} folder(s) for changes to {Files} file(s).", {
      Count: folders.length,
      Files: stamps.files.length,
    });
    void this.#listen(this.#watcher);
  }

  async #listen(watcher: Deno.FsWatcher): Promise<void> {
    try {
      for await (const event of watcher) {
        if (event.paths.some((path) => POWERSHELL_FILE.test(basename(path)))) this.#schedule();
      }
    } catch {
      // Closed, or the folder went away: the next watch() starts again.
    }
  }

  #schedule(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#check();
    }, this.#options.settleMs ?? 300);
  }

  /** Checks the stamps; one reload at a time, and one more if events came during it. */
  async #check(): Promise<void> {
    if (this.#busy) {
      this.#again = true;
      return;
    }
    this.#busy = true;
    try {
      const stamps = this.#stamps;
      const changed = stamps ? await changedSource(stamps) : null;
      if (stamps && changed !== null && !this.#closed) {
        // The files as the reload will find them: one that fails (a module broken by the edit) is
        // not tried again until they change again, and the fix is a change from these.
        this.#stamps = await stampSources(stamps.files.map((file) => file.path));
        await this.#options.onChange(changed);
      }
    } catch (error) {
      log.warning("Reloading after a change failed: {Error}", { Error: String(error) });
    } finally {
      this.#busy = false;
      if (this.#again && !this.#closed) {
        this.#again = false;
        this.#schedule();
      }
    }
  }

  /** Stops watching. */
  [Symbol.dispose](): void {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#watcher?.close();
    this.#watcher = null;
  }
}
