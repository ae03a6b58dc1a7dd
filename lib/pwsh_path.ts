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

/**
 * The PowerShell the repository's `bin/pwsh` installs from NuGet when it finds none (its `version=`;
 * `tests/bin_test.ts` checks they agree).
 */
export const BIN_PWSH_VERSION = "7.6.10";

/** Where the PowerShell svc uses came from. */
export type PwshOrigin = "configured" | "PATH" | "bin/pwsh";

/** The PowerShell svc runs its workers with. */
export interface ResolvedPwsh {
  /** Path of the executable. */
  path: string;
  /**
   * `configured` (`--pwsh`, `SVC_PWSH` or `ShellConfiguration:PwshPath`), `PATH` (`pwsh` found
   * there), or `bin/pwsh` (the repository's script, which installs PowerShell
   * {@linkcode BIN_PWSH_VERSION} from NuGet into `.tools/` when nothing else is found).
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

/** What asking `bin/pwsh` for its executable gave: the path, or why there is none. */
type Located = { path: string } | { reason: string };

/**
 * The executable `bin/pwsh` runs, asked once (`SVC_PWSH_LOCATE=1`) so that workers start without a
 * shell in between. On a first run it installs PowerShell, and its line saying so is passed on to
 * svc's stderr as it comes; anything else it says becomes the reason when it finds none.
 */
async function locate(script: string): Promise<Located> {
  const child = new Deno.Command(script, {
    env: { SVC_PWSH_LOCATE: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const said: string[] = [];
  const stderr = (async () => {
    let pending = "";
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) {
      pending += decoder.decode(chunk, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith("bin/pwsh: installing")) {
          await Deno.stderr.write(new TextEncoder().encode(line + "\n"));
        } else if (line.trim() !== "") said.push(line.trim());
      }
    }
    if (pending.trim() !== "") said.push(pending.trim());
  })();
  const [{ code }, stdout] = await Promise.all([
    child.status,
    new Response(child.stdout).text(),
    stderr,
  ]);
  const path = stdout.trim();
  if (code === 0 && path !== "" && await isExecutable(path)) return { path };
  return { reason: (said.at(-1) ?? `it exited with code ${code}`).replace(/^bin\/pwsh: /, "") };
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
  for (const candidate of candidates(configured ?? "pwsh", env)) {
    if (!await isExecutable(candidate)) continue;
    // The repository's bin/pwsh on PATH (README step 1 puts bin/ there) is the fallback below,
    // asked for the executable it runs: else doctor in a shell and a client started without bin/
    // on PATH would name two PowerShells, and two catalog cache keys, for one.
    if (configured === null && await sameFile(candidate, fallback)) break;
    return { path: candidate, origin: configured === null ? "PATH" : "configured" };
  }
  let fellBack = "";
  if (configured === null && fallback !== null && await isExecutable(fallback)) {
    const located = await locate(fallback);
    if ("path" in located) return { path: located.path, origin: "bin/pwsh" };
    fellBack = `, then its bin/pwsh, which said: ${located.reason}`;
  }
  if (configured !== null) {
    const otherwise = await unconfiguredChoice(env, fallback);
    throw new StartupError(
      "PWSH_NOT_FOUND",
      `PowerShell 7.4 or later was not found: '${configured}' was configured (by --pwsh, SVC_PWSH or ShellConfiguration:PwshPath) but is not an executable file; ${
        otherwise === null
          ? "point it at pwsh 7.4+ (https://aka.ms/powershell)"
          : `leave it unset and svc uses ${otherwise}`
      }`,
    );
  }
  throw new StartupError(
    "PWSH_NOT_FOUND",
    `PowerShell 7.4 or later was not found: svc looked at --pwsh, SVC_PWSH, ShellConfiguration:PwshPath and 'pwsh' on PATH${fellBack}; install PowerShell 7.4+ (https://aka.ms/powershell) or point svc at it with --pwsh <path>`,
  );
}

/** Where svc looks for `name`: the path itself when it has a separator, else each PATH folder. */
function candidates(name: string, env: Record<string, string>): string[] {
  const hasSeparator = name.includes("/") || (IS_WINDOWS && name.includes("\\"));
  const extensions = IS_WINDOWS ? ["", ...(env["PATHEXT"] ?? ".EXE;.CMD;.BAT").split(";")] : [""];
  if (hasSeparator) return extensions.map((ext) => name + ext);
  const dirs = (env["PATH"] ?? env["Path"] ?? "").split(IS_WINDOWS ? ";" : ":").filter(Boolean);
  return dirs.flatMap((dir) => extensions.map((ext) => `${dir}/${name}${ext}`));
}

/** Whether two paths name one file (symbolic links followed); false when either is missing. */
async function sameFile(a: string, b: string | null): Promise<boolean> {
  if (b === null) return false;
  try {
    return await Deno.realPath(a) === await Deno.realPath(b);
  } catch {
    return false;
  }
}

/**
 * What svc would use with no PowerShell configured, in words, without installing anything: `pwsh`
 * on PATH, else its bin/pwsh; null when neither is there.
 */
async function unconfiguredChoice(
  env: Record<string, string>,
  fallback: string | null,
): Promise<string | null> {
  for (const candidate of candidates("pwsh", env)) {
    if (await isExecutable(candidate) && !await sameFile(candidate, fallback)) {
      return `'pwsh' on PATH (${candidate})`;
    }
  }
  return fallback !== null && await isExecutable(fallback)
    ? `its own bin/pwsh (${fallback}), which finds or installs PowerShell ${BIN_PWSH_VERSION}`
    : null;
}

/**
 * What `path --version` says when that is not PowerShell's answer ("PowerShell 7.6.10"), else null:
 * asked only after a worker failed to start, so that a start pays nothing for it. An executable
 * that does not answer within `timeoutMs` is killed and counts as not saying.
 *
 * @param env the whole environment it runs with: a worker's (`workerInheritedEnvironment`), since
 *   the executable may be anything and must not get the credentials svc withholds from workers.
 * @param timeoutMs how long to wait for the answer. @default 5000
 */
export async function notPowerShell(
  path: string,
  env: Record<string, string>,
  timeoutMs = 5_000,
): Promise<string | null> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(path, {
      args: ["--version"],
      clearEnv: true,
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch {
    return null; // not startable at all: the start's own error says so
  }
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }, timeoutMs);
  try {
    const output = await child.output();
    const said = new TextDecoder().decode(output.stdout).trim() ||
      new TextDecoder().decode(output.stderr).trim();
    if (/^PowerShell \d/.test(said)) return null;
    const first = said.split("\n")[0]!.trim().slice(0, 120);
    return first === "" ? `nothing (exit code ${output.code})` : `"${first}"`;
  } finally {
    clearTimeout(timer);
  }
}

/** One phrase for logs and doctor: where {@linkcode resolvePwsh} found PowerShell. */
export function describeOrigin(origin: PwshOrigin): string {
  switch (origin) {
    case "configured":
      return "configured (--pwsh, SVC_PWSH or ShellConfiguration:PwshPath)";
    case "PATH":
      return "'pwsh' on PATH";
    case "bin/pwsh":
      return `svc's bin/pwsh (PowerShell ${BIN_PWSH_VERSION} from NuGet, installed into .tools/ on first use)`;
  }
}
