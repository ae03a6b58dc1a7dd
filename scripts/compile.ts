/**
 * `deno task compile`: self-contained svc binaries (`deno compile`) for the release targets, with
 * the host script and the default configuration embedded (they are imported as text) and narrow
 * permissions instead of `-A`. `deno compile` downloads the Deno runtime for each target from
 * dl.deno.land; where that is unreachable this says so in one sentence and exits 3. A local
 * runtime can be given with `DENORT_BIN` (one target at a time).
 *
 * Usage: deno task compile [--target <triple>]... [--out <dir>]
 *
 * @module
 */

import { resolve } from "node:path";

/** The release targets, as `deno compile --target` names them. */
export const TARGETS = [
  "x86_64-unknown-linux-gnu",
  "aarch64-unknown-linux-gnu",
  "x86_64-apple-darwin",
  "aarch64-apple-darwin",
  "x86_64-pc-windows-msvc",
] as const;

/**
 * What svc needs and nothing more: read and write (config, catalog cache, the worker's private
 * directory), environment, network (HTTP, OIDC discovery and key sets), subprocesses (pwsh), and
 * system information (hostname, memory for health), and FFI for one libc call that keeps workers
 * out of svc's /proc entries (`lib/process_hardening.ts`; `--allow-run` already grants as much).
 * No dynamic imports from the network.
 */
export const PERMISSIONS = [
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "--allow-net",
  "--allow-run",
  "--allow-sys",
  "--allow-ffi",
];

const USAGE = `Usage: deno task compile [--target <triple>]... [--out <dir>]

Builds self-contained svc binaries with deno compile.

  --target <triple>  one of ${TARGETS.join(", ")}; repeatable
                     (default: all five)
  --out <dir>        output directory (default: dist/bin); binaries are named svc-<triple>
                     (.exe on Windows)
  DENORT_BIN         a local Deno runtime to embed instead of downloading one (one target only)
`;

const say = (stream: typeof Deno.stdout, line: string) =>
  stream.writeSync(new TextEncoder().encode(`${line}\n`));

function fail(message: string, code: number): never {
  say(Deno.stderr, `compile: ${message}`);
  Deno.exit(code);
}

function parseArgs(args: string[]): { targets: string[]; out: string } {
  const targets: string[] = [];
  let out = "dist/bin";
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--help" || arg === "-h") {
      say(Deno.stdout, USAGE);
      Deno.exit(0);
    }
    const value = args[i + 1];
    if ((arg === "--target" || arg === "--out") && value === undefined) {
      fail(`${arg} needs a value`, 2);
    }
    if (arg === "--target") {
      if (!(TARGETS as readonly string[]).includes(value!)) {
        fail(`unknown target '${value}'; expected one of ${TARGETS.join(", ")}`, 2);
      }
      targets.push(value!);
      i++;
    } else if (arg === "--out") {
      out = value!;
      i++;
    } else {
      fail(`unknown argument '${arg}' (see --help)`, 2);
    }
  }
  return { targets: targets.length > 0 ? targets : [...TARGETS], out };
}

async function compile(target: string, out: string): Promise<void> {
  const output = `${out}/svc-${target}${target.includes("windows") ? ".exe" : ""}`;
  const root = new URL("../", import.meta.url).pathname;
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["compile", ...PERMISSIONS, "--target", target, "--output", output, "main.ts"],
    cwd: root,
    env: { NO_COLOR: "1" },
    stdout: "inherit",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(result.stderr);
  if (result.code === 0) {
    say(Deno.stderr, `compile: ${output}`);
    return;
  }
  const download = stderr.match(/Download (https:\/\/\S+)/)?.[1];
  if (
    download &&
    /dns error|error sending request|connect|timed out|Writing deno compile/i.test(stderr)
  ) {
    fail(
      `deno compile needs the Deno runtime for ${target} from ${download}, which cannot be reached from this machine; build where dl.deno.land is reachable (the release workflow does), or set DENORT_BIN to a local runtime`,
      3,
    );
  }
  Deno.stderr.writeSync(result.stderr);
  fail(`deno compile for ${target} failed (exit ${result.code})`, 4);
}

if (import.meta.main) {
  const parsed = parseArgs(Deno.args);
  // bin/deno runs tasks from the repository; a relative --out means where the user was.
  const out = resolve(Deno.env.get("SVC_INVOCATION_DIR") ?? Deno.cwd(), parsed.out);
  const targets = parsed.targets;
  await Deno.mkdir(out, { recursive: true });
  for (const target of targets) await compile(target, out);
}
