/**
 * A neutral client: `wrk` (Debian's package, C, an event loop per thread) drives `tools/call` over
 * Streamable HTTP against any targets side by side, so that neither the SDK client's own CPU nor its
 * choices (era, headers, connections) weigh on the figures. Every request is one stateless JSON-RPC
 * `tools/call` on a kept-alive connection; wrk's Lua script counts every answer that is not a 200
 * carrying a `result` (or that is a tool error) as an error. The targets take turns level by level,
 * and the order of the targets turns round by round. For each cell: calls/s, p50 and p99 (wrk's own
 * latency histogram), errors, the server process tree's CPU per call (user + system ticks from
 * `/proc` over the measured seconds, every descendant included: Deno and its pwsh workers for svc)
 * and wrk's own CPU per call. Installs wrk with apt-get when it is missing (needs root).
 *
 *   deno run -A bench/wrk.ts [--svc [label=]<checkout>]... [--floor]
 *     [--http-command "[label=]<command line with {port}>"]... [--url [label=]<url> --pid <n>]...
 *     [--levels 1,4,16,64] [--seconds 8] [--warmup 3] [--rounds 2] [--call date|sleep]
 *     [--era 2025-11-25|2026-07-28] [--log-level Warning] [--pwsh <path>] [--tool name=<tool>]
 *
 * With no target given it measures this checkout's svc. `--tool <label>=<name>` names a target's
 * tool where it is not found by its role. Prints markdown with the load average on every table.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { loadAverage, ProcessTracker, sleep, TICK_US, treeCpuTicks } from "./lib/proc.ts";
import {
  checkoutCommand,
  chooseWorker,
  cleanupTempDirs,
  connectWhenListing,
  labelled,
  REPO_ROOT,
  resolveTool,
  type RoleName,
  spawnCommand,
  splitCommandLine,
  startFloorHttp,
  tempDir,
  type ToolInfo,
} from "./lib/targets.ts";

const { values } = parseArgs({
  options: {
    svc: { type: "string", multiple: true },
    floor: { type: "boolean", default: false },
    "http-command": { type: "string", multiple: true },
    "http-path": { type: "string", default: "/mcp" },
    url: { type: "string", multiple: true },
    pid: { type: "string", multiple: true },
    levels: { type: "string", default: "1,4,16,64" },
    seconds: { type: "string", default: "8" },
    warmup: { type: "string", default: "3" },
    rounds: { type: "string", default: "2" },
    call: { type: "string", default: "date" },
    era: { type: "string", default: "2025-11-25" },
    "log-level": { type: "string", default: "Warning" },
    pwsh: { type: "string" },
    tool: { type: "string", multiple: true },
    threads: { type: "string", default: "2" },
  },
});

const levels = values.levels.split(",").map(Number);
const seconds = Number(values.seconds);
const warmup = Number(values.warmup);
const rounds = Number(values.rounds);
const threads = Number(values.threads);
const era = values.era;
const role: RoleName = values.call === "sleep" ? "sleepMs" : "date";
const args = role === "sleepMs" ? { Milliseconds: 50 } : {};
const tracker = new ProcessTracker();

function print(line = ""): void {
  Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));
}
const load = loadAverage;
const TICK_MS = TICK_US / 1000;

/** wrk on PATH, installed from Debian's archive when missing. */
async function ensureWrk(): Promise<string> {
  const found = async () => {
    const out = await new Deno.Command("sh", { args: ["-c", "command -v wrk"], stdout: "piped" })
      .output();
    return out.code === 0 ? new TextDecoder().decode(out.stdout).trim() : null;
  };
  const path = await found();
  if (path) return path;
  print("wrk is missing: installing Debian's package with apt-get");
  for (const argv of [["apt-get", "install", "-y", "wrk"], ["apt-get", "update"]]) {
    const status = await new Deno.Command(argv[0]!, {
      args: argv.slice(1),
      stdout: "null",
      stderr: "inherit",
      env: { DEBIAN_FRONTEND: "noninteractive" },
    }).output();
    if (status.code === 0 && argv[1] === "install") break;
    if (argv[1] === "update") {
      await new Deno.Command("apt-get", { args: ["install", "-y", "wrk"], stdout: "null" })
        .output();
    }
  }
  const installed = await found();
  if (!installed) throw new Error("wrk is not installed and apt-get could not install it");
  return installed;
}

/** One target: where to send, which process tree to charge, how to stop it. */
interface Target {
  label: string;
  url: string;
  pid: number | null;
  tool: string;
  stop(): Promise<unknown>;
}

/** The request wrk sends: the era's headers and envelope, one tools/call. */
function luaScript(tool: string): string {
  const params: Record<string, unknown> = { name: tool, arguments: args };
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": era,
  };
  if (era >= "2026-07-28") {
    params._meta = {
      "io.modelcontextprotocol/protocolVersion": era,
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": { name: "wrk", version: "4.1" },
    };
    headers["Mcp-Method"] = "tools/call";
    headers["Mcp-Name"] = tool;
  }
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params });
  const lua = (s: string) => JSON.stringify(s); // a JSON string is a valid Lua string here
  return [
    `wrk.method = "POST"`,
    `wrk.body = ${lua(body)}`,
    ...Object.entries(headers).map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`),
    `local threads = {}`,
    `function setup(thread) table.insert(threads, thread) end`,
    `bad = 0`,
    // A 200 whose body is a JSON-RPC error, or a tool's error, is not a served call.
    `function response(status, headers, body)`,
    `  if status ~= 200 or not string.find(body, '"result"', 1, true)`,
    `     or string.find(body, '"isError":true', 1, true) then bad = bad + 1 end`,
    `end`,
    `function done(summary, latency, requests)`,
    `  local b = 0`,
    `  for _, t in ipairs(threads) do b = b + t:get("bad") end`,
    `  local e = summary.errors`,
    `  io.write(string.format('WRKJSON {"requests":%d,"us":%d,"p50":%d,"p99":%d,"mean":%f,` +
    `"bad":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\\n',`,
    `    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),`,
    `    latency.mean, b, e.connect, e.read, e.write, e.status, e.timeout))`,
    `end`,
    "",
  ].join("\n");
}

/** What one wrk run gave. */
interface WrkResult {
  requests: number;
  us: number;
  p50: number;
  p99: number;
  mean: number;
  bad: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  /** wrk's own CPU, ms (user + system, from its parent shell's children times). */
  clientMs: number;
}

/**
 * Runs wrk through `sh`, which reads its own children's CPU times once wrk has ended (fields 16 and
 * 17 of `/proc/<sh>/stat`), so wrk's CPU is known without racing its exit.
 */
async function runWrk(
  wrk: string,
  script: string,
  url: string,
  c: number,
  durationS: number,
): Promise<WrkResult> {
  const argv = [
    wrk,
    `-t${Math.min(threads, c)}`,
    `-c${c}`,
    `-d${durationS}s`,
    "--timeout",
    "30s",
    "-s",
    script,
    url,
  ];
  const out = await new Deno.Command("sh", {
    args: ["-c", '"$@"; echo; echo "SHSTAT $(cat /proc/$$/stat)"', "sh", ...argv],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const json = /WRKJSON (\{.*\})/.exec(text);
  const stat = /SHSTAT (.*)/.exec(text);
  if (!json || !stat) {
    throw new Error(`wrk gave no summary: ${text}${new TextDecoder().decode(out.stderr)}`);
  }
  const fields = stat[1]!.slice(stat[1]!.lastIndexOf(")") + 2).split(" ");
  const clientMs = (Number(fields[13]) + Number(fields[14])) * TICK_MS;
  return { ...JSON.parse(json[1]!), clientMs };
}

const overrides = Object.fromEntries(
  (values.tool ?? []).map((v) => labelled(v, "")).filter(([k]) => k !== ""),
);

async function prepare(
  label: string,
  url: string,
  pid: number | null,
  stop: () => Promise<unknown>,
  exited?: Promise<number>,
): Promise<Target> {
  const { client, tools } = await connectWhenListing(url, "2025-11-25", {
    ...(exited ? { exited } : {}),
  });
  await client.close();
  const explicit = overrides[label];
  const tool = explicit && tools.some((t: ToolInfo) => t.name === explicit)
    ? explicit
    : resolveTool(tools, role);
  if (!tool) throw new Error(`${label} lists no tool for ${role}`);
  return { label, url, pid, tool, stop };
}

const targets: Target[] = [];
async function startTargets(): Promise<void> {
  const svcRoots = values.svc ?? [];
  if (
    svcRoots.length === 0 && !values.floor && !values["http-command"]?.length &&
    !values.url?.length
  ) svcRoots.push(`svc=${REPO_ROOT}`);
  const worker = svcRoots.length > 0 ? chooseWorker(values.pwsh) : null;
  if (worker) print(`PowerShell: ${worker.path} (${worker.reason})`);
  for (const value of svcRoots) {
    // Spawned as a command with {port}: at log level Warning svc does not log "listening on".
    const { label, argv, env, cwd } = await checkoutCommand("http", value, {
      worker: worker!,
      logLevel: values["log-level"],
    });
    const at = argv.indexOf("--port");
    argv[at + 1] = "{port}";
    const proc = spawnCommand(argv, "/mcp", tracker, { env, cwd });
    targets.push(await prepare(label, proc.mcpUrl, proc.pid, () => proc.stop(), proc.exited));
  }
  if (values.floor) {
    const proc = await startFloorHttp(tracker);
    targets.push(await prepare("floor", `${proc.base}/mcp`, proc.pid, () => proc.stop()));
  }
  for (const [i, value] of (values["http-command"] ?? []).entries()) {
    const [label, line] = labelled(value, `command${i + 1}`);
    const proc = spawnCommand(splitCommandLine(line), values["http-path"], tracker);
    targets.push(
      await prepare(label, proc.mcpUrl, proc.pid, () => proc.stop(), proc.exited),
    );
  }
  for (const [i, value] of (values.url ?? []).entries()) {
    const [label, url] = labelled(value, `url${i + 1}`);
    const pid = values.pid?.[i] ? Number(values.pid[i]) : null;
    targets.push(await prepare(label, url, pid, () => Promise.resolve()));
  }
}

interface Cell {
  round: number;
  level: number;
  target: string;
  load: string;
  callsPerS: number;
  p50: number;
  p99: number;
  errors: number;
  serverUs: number;
  clientUs: number;
}

const ms = (us: number) => (us / 1000).toFixed(2);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor((s.length - 1) / 2)]!;
};

const cells: Cell[] = [];
try {
  const wrk = await ensureWrk();
  await startTargets();
  const scripts = new Map<string, string>();
  const dir = await tempDir("svc-wrk-");
  for (const t of targets) {
    const file = `${dir}/${t.label}.lua`;
    await Deno.writeTextFile(file, luaScript(t.tool));
    scripts.set(t.label, file);
  }
  print(
    `wrk ${wrk}; ${era} tools/call ${role === "date" ? "get_date" : "Start-Sleep 50 ms"}; ` +
      `${warmup} s warm-up + ${seconds} s a level, ${rounds} rounds; targets: ${
        targets.map((t) => `${t.label} (${t.tool} at ${t.url})`).join(", ")
      }`,
  );
  print(`load average at the start: ${load()}`);
  print();
  print(
    "| round | c | target | load average | calls/s | p50 ms | p99 ms | errors | server CPU µs/call | wrk CPU µs/call |",
  );
  print("| -- | -- | -- | -- | -- | -- | -- | -- | -- | -- |");
  for (let r = 0; r < rounds; r++) {
    const order = targets.map((_, i) => targets[(i + r) % targets.length]!);
    for (const level of levels) {
      for (const t of order) {
        const script = scripts.get(t.label)!;
        if (warmup > 0) await runWrk(wrk, script, t.url, level, warmup);
        const before = t.pid === null ? Number.NaN : treeCpuTicks(t.pid);
        const result = await runWrk(wrk, script, t.url, level, seconds);
        const after = t.pid === null ? Number.NaN : treeCpuTicks(t.pid);
        const served = result.requests - result.bad - result.status;
        const cell: Cell = {
          round: r + 1,
          level,
          target: t.label,
          load: load(),
          callsPerS: served / (result.us / 1e6),
          p50: result.p50,
          p99: result.p99,
          errors: result.bad + result.connect + result.read + result.write + result.timeout,
          serverUs: (after - before) * TICK_MS * 1000 / Math.max(1, result.requests),
          clientUs: result.clientMs * 1000 / Math.max(1, result.requests),
        };
        cells.push(cell);
        print(
          `| ${cell.round} | ${level} | ${t.label} | ${cell.load} | ${
            cell.callsPerS.toFixed(0)
          } | ${ms(cell.p50)} | ${ms(cell.p99)} | ${cell.errors} | ${cell.serverUs.toFixed(0)} | ${
            cell.clientUs.toFixed(0)
          } |`,
        );
        await sleep(300);
      }
    }
  }
  print();
  print(`load average at the end: ${load()}`);
  print();
  print(
    "| c | target | calls/s (each round) | p50 ms | p99 ms | errors | server CPU µs/call | wrk CPU µs/call | calls/s ÷ first target |",
  );
  print("| -- | -- | -- | -- | -- | -- | -- | -- | -- |");
  for (const level of levels) {
    const first = median(
      cells.filter((c) => c.level === level && c.target === targets[0]!.label).map((c) =>
        c.callsPerS
      ),
    );
    for (const t of targets) {
      const mine = cells.filter((c) => c.level === level && c.target === t.label);
      const rate = median(mine.map((c) => c.callsPerS));
      print(
        `| ${level} | ${t.label} | ${mine.map((c) => c.callsPerS.toFixed(0)).join(", ")} | ${
          mine.map((c) => ms(c.p50)).join(", ")
        } | ${mine.map((c) => ms(c.p99)).join(", ")} | ${
          mine.reduce((s, c) => s + c.errors, 0)
        } | ${mine.map((c) => c.serverUs.toFixed(0)).join(", ")} | ${
          mine.map((c) => c.clientUs.toFixed(0)).join(", ")
        } | ${(rate / first).toFixed(2)} |`,
      );
    }
  }
} finally {
  for (const t of targets) await t.stop().catch(() => {});
  await cleanupTempDirs();
  const survivors = tracker.survivors();
  if (survivors.length > 0) {
    print(`orphans ended: ${survivors.map((s) => s.pid).join(", ")}`);
    tracker.killAll(survivors);
  }
}
