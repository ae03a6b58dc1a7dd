/**
 * Where svc keeps what it can reuse between runs: cached catalogs (`lib/discovery.ts`) and the
 * compiled half of the worker host (`lib/host/assembly.ps1`).
 *
 * @module
 */
import type { ShellSettings } from "./config.ts";

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
 * Where workers keep the compiled half of the host: `HostCacheDirectory`, else `CacheDirectory`, else
 * undefined (the worker then uses {@linkcode defaultCacheDirectory}).
 */
export function hostCacheDirectory(
  shell: Pick<ShellSettings, "cacheDirectory" | "hostCacheDirectory">,
): string | undefined {
  return shell.hostCacheDirectory ?? shell.cacheDirectory ?? undefined;
}
