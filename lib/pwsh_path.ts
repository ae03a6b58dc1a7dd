/**
 * Finding the pwsh executable svc runs its workers with.
 *
 * @module
 */
import { StartupError } from "./errors.ts";

const IS_WINDOWS = Deno.build.os === "windows";

/** Options of {@linkcode resolvePwsh}. */
export interface ResolvePwshOptions {
  /** Environment whose PATH (and PATHEXT on Windows) is searched. @default Deno.env.toObject() */
  env?: Record<string, string>;
}

/**
 * Finds the pwsh executable: the configured value (`--pwsh`, `SVC_PWSH`, `ShellConfiguration:PwshPath`)
 * if given, else `pwsh` on PATH. Throws a `PWSH_NOT_FOUND` StartupError with guidance when absent.
 */
export async function resolvePwsh(
  configured: string | null,
  options: ResolvePwshOptions = {},
): Promise<string> {
  const { env = Deno.env.toObject() } = options;
  const name = configured ?? "pwsh";
  const hasSeparator = name.includes("/") || (IS_WINDOWS && name.includes("\\"));
  const candidates: string[] = [];
  const extensions = IS_WINDOWS ? ["", ...(env["PATHEXT"] ?? ".EXE;.CMD;.BAT").split(";")] : [""];
  if (hasSeparator) {
    candidates.push(...extensions.map((ext) => name + ext));
  } else {
    const dirs = (env["PATH"] ?? env["Path"] ?? "").split(IS_WINDOWS ? ";" : ":").filter(Boolean);
    for (const dir of dirs) candidates.push(...extensions.map((ext) => `${dir}/${name}${ext}`));
  }
  for (const candidate of candidates) {
    try {
      const stat = await Deno.stat(candidate);
      if (stat.isFile && (IS_WINDOWS || ((stat.mode ?? 0) & 0o111) !== 0)) return candidate;
    } catch { /* not there */ }
  }
  const given = configured === null
    ? ""
    : ` ('${configured}' was configured but is not an executable file)`;
  throw new StartupError(
    "PWSH_NOT_FOUND",
    `PowerShell 7.4 or later was not found${given}: svc looked at --pwsh, SVC_PWSH, ShellConfiguration:PwshPath and 'pwsh' on PATH; install PowerShell 7.4+ (https://aka.ms/powershell) or point svc at it with --pwsh <path>`,
  );
}
