/**
 * Finding the pwsh executable svc runs its workers with.
 *
 * @module
 */
import { StartupError } from "./errors.ts";

const IS_WINDOWS = Deno.build.os === "windows";

/**
 * The repository's `bin/pwsh`: it runs `pwsh` from the environment, else installs Microsoft's
 * PowerShell from NuGet into `.tools/` on first use (with the .NET SDK). Absent from a compiled or
 * bundled svc, and not for Windows (a bash script).
 */
const REPOSITORY_PWSH = IS_WINDOWS ? null : (() => {
  const url = new URL("../bin/pwsh", import.meta.url);
  return url.protocol === "file:" ? url.pathname : null;
})();

/** Where the PowerShell svc uses came from. */
export type PwshOrigin = "configured" | "PATH" | "bin/pwsh";

/** The PowerShell svc runs its workers with. */
export interface ResolvedPwsh {
  /** Path of the executable. */
  path: string;
  /**
   * `configured` (`--pwsh`, `SVC_PWSH` or `ShellConfiguration:PwshPath`), `PATH` (`pwsh` found
   * there), or `bin/pwsh` (the repository's script, which installs PowerShell 7.6.9 from NuGet
   * into `.tools/` when nothing else is found).
   */
  origin: PwshOrigin;
}

/** Options of {@linkcode resolvePwsh}. */
export interface ResolvePwshOptions {
  /** Environment whose PATH (and PATHEXT on Windows) is searched. @default Deno.env.toObject() */
  env?: Record<string, string>;
  /** The fallback when neither the setting nor PATH has one. @default the repository's bin/pwsh */
  fallback?: string | null;
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    const stat = await Deno.stat(path);
    return stat.isFile && (IS_WINDOWS || ((stat.mode ?? 0) & 0o111) !== 0);
  } catch {
    return false;
  }
}

/**
 * The executable `bin/pwsh` runs, asked once (`SVC_PWSH_LOCATE=1`) so that workers start without a
 * shell in between; on the first run it installs PowerShell first, saying so on svc's stderr. Null
 * when it finds and installs nothing (it has said why).
 */
async function locate(script: string): Promise<string | null> {
  const { code, stdout } = await new Deno.Command(script, {
    env: { SVC_PWSH_LOCATE: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const path = new TextDecoder().decode(stdout).trim();
  return code === 0 && path !== "" && await isExecutable(path) ? path : null;
}

/**
 * Finds the pwsh executable: the configured value (`--pwsh`, `SVC_PWSH`, `ShellConfiguration:PwshPath`)
 * if given, else `pwsh` on PATH, else the repository's `bin/pwsh`. Throws a `PWSH_NOT_FOUND`
 * StartupError with guidance when none is there.
 */
export async function resolvePwsh(
  configured: string | null,
  options: ResolvePwshOptions = {},
): Promise<ResolvedPwsh> {
  const { env = Deno.env.toObject(), fallback = REPOSITORY_PWSH } = options;
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
    if (await isExecutable(candidate)) {
      return { path: candidate, origin: configured === null ? "PATH" : "configured" };
    }
  }
  if (configured === null && fallback !== null && await isExecutable(fallback)) {
    const located = await locate(fallback);
    if (located !== null) return { path: located, origin: "bin/pwsh" };
  }
  const given = configured === null
    ? ""
    : ` ('${configured}' was configured but is not an executable file)`;
  throw new StartupError(
    "PWSH_NOT_FOUND",
    `PowerShell 7.4 or later was not found${given}: svc looked at --pwsh, SVC_PWSH, ShellConfiguration:PwshPath and 'pwsh' on PATH${
      configured === null && fallback !== null ? ", and its bin/pwsh installed none (above)" : ""
    }; install PowerShell 7.4+ (https://aka.ms/powershell) or point svc at it with --pwsh <path>`,
  );
}

/** One phrase for logs and doctor: where {@linkcode resolvePwsh} found PowerShell. */
export function describeOrigin(origin: PwshOrigin): string {
  switch (origin) {
    case "configured":
      return "configured (--pwsh, SVC_PWSH or ShellConfiguration:PwshPath)";
    case "PATH":
      return "'pwsh' on PATH";
    case "bin/pwsh":
      return "svc's bin/pwsh (PowerShell 7.6.9 from NuGet, installed into .tools/ on first use)";
  }
}
