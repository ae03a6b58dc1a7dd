/**
 * Where svc keeps what it can reuse between runs: cached catalogs (`lib/discovery.ts`) and the
 * compiled half of the worker host (`lib/host/assembly.ps1`). Every default of those places is
 * decided here; the worker process and discovery take the directory they are given.
 *
 * @module
 */

/** Default cache directory: `$XDG_CACHE_HOME/svc`, `~/.cache/svc`, or `%LOCALAPPDATA%\svc`; null without any of them. */
export function defaultCacheDirectory(
  env: Record<string, string> = Deno.env.toObject(),
): string | null {
  if (env["XDG_CACHE_HOME"]) return `${env["XDG_CACHE_HOME"]}/svc`;
  if (Deno.build.os === "windows" && env["LOCALAPPDATA"]) return `${env["LOCALAPPDATA"]}\\svc`;
  if (env["HOME"]) return `${env["HOME"]}/.cache/svc`;
  return null;
}

/**
 * The two cache settings (`ShellConfiguration:CacheDirectory`, `:HostCacheDirectory`), null when
 * unset. Stated here rather than picked from `ShellSettings`: this module sits below the
 * configuration (the worker process and discovery use it), so it names what it reads instead of
 * importing the configuration.
 */
export interface CacheDirectories {
  cacheDirectory: string | null;
  hostCacheDirectory: string | null;
}

/** Where cached catalogs go: `CacheDirectory`, else {@linkcode defaultCacheDirectory}; null: none. */
export function catalogCacheDirectory(
  shell: Pick<CacheDirectories, "cacheDirectory">,
): string | null {
  return shell.cacheDirectory ?? defaultCacheDirectory();
}

/**
 * Where workers keep the compiled half of the host: `HostCacheDirectory`, else where catalogs go
 * ({@linkcode catalogCacheDirectory}); null: none, so every worker process compiles it.
 */
export function hostCacheDirectory(shell: CacheDirectories): string | null {
  return shell.hostCacheDirectory ?? catalogCacheDirectory(shell);
}
