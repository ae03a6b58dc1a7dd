/**
 * Warm `tools/call` over stdio with a client that costs next to nothing: newline-delimited JSON-RPC
 * written to the server's stdin and read from its stdout by this script (no SDK on the client's
 * side), one call at a time. Every target is spawned once, handshakes (`initialize` 2025-11-25,
 * `notifications/initialized`), lists its tools, makes `--warmup` calls, and then the targets take
 * turns: `--rounds` rounds of `--calls` calls each, the order of the targets turning round by
 * round. Reports p50, p95 and p99 of every round and the server process tree's CPU per call.
 *
 *   deno run -A bench/stdio_calls.ts [--svc [label=]<checkout>]... [--stdio "[label=]<command line>"]...
 *     [--calls 200] [--rounds 2] [--warmup 2000] [--log-level Warning] [--pwsh <path>] [--tool label=<name>]
 *
 * The warm-up is long on purpose: after 100 calls .NET is still compiling the worker's hot code
 * (measured: the worker's CPU per call 1.2 ms after 100 calls, 0.47 ms after 3,000).
 *
 * With no target given it measures this checkout's svc. Prints markdown with the load average.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { loadAverage, ProcessTracker, TICK_US, treeCpuTicks } from "./lib/proc.ts";
import { summarize } from "./lib/stats.ts";
import {
  checkoutCommand,
  chooseWorker,
  cleanupTempDirs,
  labelled,
  REPO_ROOT,
  resolveTool,
  splitCommandLine,
  type ToolInfo,
} from "./lib/targets.ts";

const { values } = parseArgs({
  options: {
    svc: { type: "string", multiple: true },
    stdio: { type: "string", multiple: true },
    calls: { type: "string", default: "200" },
    rounds: { type: "string", default: "2" },
    warmup: { type: "string", default: "2000" },
    "log-level": { type: "string", default: "Warning" },
    pwsh: { type: "string" },
    tool: { type: "string", multiple: true },
  },
});
const calls = Number(values.calls);
const rounds = Number(values.rounds);
const warmup = Number(values.warmup);
const tracker = new ProcessTracker();

function print(line = ""): void {
  Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));
}
const load = loadAverage;
const overrides = Object.fromEntries((values.tool ?? []).map((v) => labelled(v, "")));

/** A stdio server and a newline-delimited JSON-RPC client of it. */
class Peer {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #waiting = new Map<number, (message: Record<string, unknown>) => void>();
  readonly #encoder = new TextEncoder();
  #next = 1;
  tool = "";

  constructor(readonly label: string, argv: string[], env: Record<string, string>, cwd?: string) {
    this.#child = new Deno.Command(argv[0]!, {
      args: argv.slice(1),
      env: { ...Deno.env.toObject(), ...env },
      ...(cwd ? { cwd } : {}),
      stdin: "piped",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    tracker.add(this.#child.pid, argv.join(" "));
    this.#writer = this.#child.stdin.getWriter();
    void this.#read();
  }

  get pid(): number {
    return this.#child.pid;
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of this.#child.stdout) {
      text += decoder.decode(chunk, { stream: true });
      for (let end = text.indexOf("\n"); end >= 0; end = text.indexOf("\n")) {
        const line = text.slice(0, end).trim();
        text = text.slice(end + 1);
        if (line === "") continue;
        const message = JSON.parse(line) as Record<string, unknown>;
        const id = message.id as number | undefined;
        if (id !== undefined && "method" in message === false) {
          this.#waiting.get(id)?.(message);
          this.#waiting.delete(id);
        }
      }
    }
  }

  /** Sends a request and resolves with its answer. */
  request(method: string, params: unknown): Promise<Record<string, unknown>> {
    const id = this.#next++;
    const answered = new Promise<Record<string, unknown>>((resolve) => {
      this.#waiting.set(id, resolve);
    });
    void this.#writer.write(
      this.#encoder.encode(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`),
    );
    return answered;
  }

  async notify(method: string): Promise<void> {
    await this.#writer.write(
      this.#encoder.encode(`${JSON.stringify({ jsonrpc: "2.0", method })}\n`),
    );
  }

  async call(): Promise<number> {
    const start = performance.now();
    const answer = await this.request("tools/call", { name: this.tool, arguments: {} });
    const ms = performance.now() - start;
    const result = answer.result as { isError?: boolean } | undefined;
    if (!result || result.isError) throw new Error(`${this.label}: ${JSON.stringify(answer)}`);
    return ms;
  }

  async start(): Promise<void> {
    await this.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "stdio-bench", version: "1" },
    });
    await this.notify("notifications/initialized");
    const listed = await this.request("tools/list", {});
    const tools = (listed.result as { tools: ToolInfo[] }).tools;
    const explicit = overrides[this.label];
    const tool = explicit && tools.some((t) => t.name === explicit)
      ? explicit
      : resolveTool(tools, "date");
    if (!tool) throw new Error(`${this.label} lists no tool for Get-Date`);
    this.tool = tool;
  }

  ticks(): number {
    return treeCpuTicks(this.pid);
  }

  async stop(): Promise<void> {
    await this.#writer.close().catch(() => {});
    const timer = setTimeout(() => {
      try {
        this.#child.kill("SIGKILL");
      } catch {
        // gone
      }
    }, 10_000);
    await this.#child.status;
    clearTimeout(timer);
  }
}

const peers: Peer[] = [];
try {
  const svcRoots = values.svc ?? [];
  if (svcRoots.length === 0 && !values.stdio?.length) svcRoots.push(`svc=${REPO_ROOT}`);
  const worker = svcRoots.length > 0 ? chooseWorker(values.pwsh) : null;
  if (worker) print(`PowerShell: ${worker.path} (${worker.reason})`);
  for (const value of svcRoots) {
    const { label, argv, env, cwd } = await checkoutCommand("stdio", value, {
      worker: worker!,
      logLevel: values["log-level"],
    });
    peers.push(new Peer(label, argv, env, cwd));
  }
  for (const [i, value] of (values.stdio ?? []).entries()) {
    const [label, line] = labelled(value, `stdio${i + 1}`);
    peers.push(new Peer(label, splitCommandLine(line), {}));
  }
  for (const peer of peers) {
    await peer.start();
    for (let i = 0; i < warmup; i++) await peer.call();
  }
  print(
    `stdio, 2025-11-25, warm tools/call one at a time: ${warmup} warm-up calls, then ${rounds} rounds of ${calls}; targets: ${
      peers.map((p) => `${p.label} (${p.tool})`).join(", ")
    }`,
  );
  print(`load average at the start: ${load()}`);
  print();
  print("| round | target | load average | p50 ms | p95 ms | p99 ms | server CPU µs/call |");
  print("| -- | -- | -- | -- | -- | -- | -- |");
  const p50s = new Map<string, number[]>();
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < peers.length; k++) {
      const peer = peers[(k + r) % peers.length]!;
      const before = peer.ticks();
      const samples: number[] = [];
      for (let i = 0; i < calls; i++) samples.push(await peer.call());
      const cpu = (peer.ticks() - before) * TICK_US / calls;
      const s = summarize(samples);
      p50s.set(peer.label, [...(p50s.get(peer.label) ?? []), s.median]);
      print(
        `| ${r + 1} | ${peer.label} | ${load()} | ${s.median.toFixed(2)} | ${s.p95.toFixed(2)} | ${
          s.p99.toFixed(2)
        } | ${cpu.toFixed(0)} |`,
      );
    }
  }
  print();
  for (const [label, list] of p50s) {
    print(`${label}: p50 ${list.map((x) => x.toFixed(2)).join(", ")} ms`);
  }
} finally {
  for (const peer of peers) await peer.stop().catch(() => {});
  await cleanupTempDirs();
  const survivors = tracker.survivors();
  if (survivors.length > 0) {
    print(`orphans ended: ${survivors.map((s) => s.pid).join(", ")}`);
    tracker.killAll(survivors);
  }
}
