/**
 * The files a catalog was built from, and whether any has changed since: each file a worker
 * reported as the source of the session's code (a module's `.psm1`, `.psd1` and nested files, a
 * dot-sourced `.ps1`, the startup script) by a digest of its content, and each folder holding one
 * by the names of the PowerShell files in it, which change when one is added, removed or renamed
 * (a new `Public/*.ps1` that a module dot-sources by wildcard). A cached catalog whose sources
 * changed is not served, and a running server watches the same paths (`lib/catalog_watch.ts`).
 *
 * Content, not size and time, for files: an editor can save within the clock's resolution, and a
 * same-length edit (`Loud` to `Soft`) keeps the size. Names, not a folder's modification time:
 * an editor's swap file or svc's own atomic write of `appsettings.json` beside the module changes
 * that time and nothing PowerShell loads.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { dirname } from "node:path";

/** What a catalog was built from: files by content digest, their folders by modification time. */
export interface SourceStamps {
  /** Absolute path and sha-256 (hex, first 32 digits) of each file. */
  files: { path: string; digest: string }[];
  /** Absolute path of each folder holding a file, and a digest of its PowerShell files' names. */
  folders: { path: string; listing: string }[];
}

/** The digest of a file's content, or null when it cannot be read (gone). */
async function digestOf(path: string): Promise<string | null> {
  try {
    return createHash("sha256").update(await Deno.readFile(path)).digest("hex").slice(0, 32);
  } catch {
    return null;
  }
}

/** Files PowerShell loads code or data from: scripts, modules, manifests, format and type data, assemblies. */
export const POWERSHELL_FILE = /\.(ps1|psm1|psd1|ps1xml|dll|cdxml)$/i;

/** A digest of the names of the PowerShell files in a folder, or null when it cannot be read. */
async function listingOf(path: string): Promise<string | null> {
  try {
    const names: string[] = [];
    for await (const entry of Deno.readDir(path)) {
      if (POWERSHELL_FILE.test(entry.name)) names.push(entry.name);
    }
    return createHash("sha256").update(names.sort().join("\n")).digest("hex").slice(0, 32);
  } catch {
    return null;
  }
}

/** Stamps `files` (absolute paths; unreadable ones are left out) and the folders holding them. */
export async function stampSources(files: readonly string[]): Promise<SourceStamps> {
  const unique = [...new Set(files)].sort();
  const stamped = await Promise.all(
    unique.map(async (path) => ({ path, digest: await digestOf(path) })),
  );
  const kept = stamped.filter((s): s is { path: string; digest: string } => s.digest !== null);
  const folderPaths = [...new Set(kept.map((s) => dirname(s.path)))].sort();
  const folders = await Promise.all(
    folderPaths.map(async (path) => ({ path, listing: await listingOf(path) })),
  );
  return {
    files: kept,
    folders: folders.filter((f): f is { path: string; listing: string } => f.listing !== null),
  };
}

/**
 * The first source that is not as stamped (a file changed or gone, a folder whose PowerShell files
 * are others now),
 * or null when none is. A catalog without stamps (built before svc recorded them) counts as changed.
 */
export async function changedSource(stamps: SourceStamps | undefined): Promise<string | null> {
  if (!stamps) return "(no record of the files it was built from)";
  for (const file of stamps.files) {
    if (await digestOf(file.path) !== file.digest) return file.path;
  }
  for (const folder of stamps.folders) {
    if (await listingOf(folder.path) !== folder.listing) return folder.path;
  }
  return null;
}
