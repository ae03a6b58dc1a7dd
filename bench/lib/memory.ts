/**
 * P6, memory: the RSS of every server's process tree (the sum of VmRSS over the server and all its
 * descendants), idle after its start and one call, at the peak of a `Start-Sleep -Milliseconds 50`
 * closed loop of 64 clients (HTTP), and idle again after that loop. Every server is started fresh
 * for it (svc, the floor, `--http-command` and `--stdio` servers); an `--url` server is sampled
 * through `--pid` as it is.
 *
 * @module
 */
import { type Bench, closeAll, closedLoop, healthOnce, type TargetDef } from "./common.ts";
import { mb } from "./stats.ts";
import { samplePeakMemory, sleep, treeMemory } from "./proc.ts";
import { connectHttp, connectStdio, floorStdioCommand, type McpClient } from "./targets.ts";
import { counts, sleepCeiling } from "./scenario.ts";
import type { RowSpec } from "./compare.ts";

/** A server started for P6. */
interface Started {
  /** Root of the process tree. */
  pid: number;
  /** A connected client (the first). */
  client: McpClient;
  /** Opens another client (HTTP only; null over stdio, where the loop is not run). */
  connect: (() => Promise<McpClient>) | null;
  /** svc's `/health`, for the worker count. */
  health: string | null;
  /** Stops the server. */
  stop(): Promise<void>;
}

const LEVEL = 64;
const MB = 1024 * 1024;

/** svc's goals and the summary rows of one phase. */
function rowSpec(transport: string, phase: "idle" | "peak" | "loop"): RowSpec | null {
  if (phase === "idle") {
    return transport === "http"
      ? {
        label: "memory of the process tree, idle, HTTP (MB)",
        goal: { text: "≤ 150 MB", rule: { kind: "atMost", max: 150 } },
      }
      : {
        label: "memory of the process tree, idle, stdio (MB)",
        goal: { text: "keep", rule: { kind: "keep", lowerIsBetter: true } },
      };
  }
  if (transport !== "http") return null;
  return phase === "peak"
    ? {
      label: `memory at the peak of Start-Sleep 50 ms, c = ${LEVEL}, HTTP (MB)`,
      goal: { text: "≤ 200 MB", rule: { kind: "atMost", max: 200 } },
    }
    : {
      label: `Start-Sleep 50 ms calls/s during that peak (c = ${LEVEL})`,
      goal: {
        text: `≥ 95 % of ${sleepCeiling(LEVEL)}`,
        rule: { kind: "atLeast", min: 0.95 * sleepCeiling(LEVEL) },
      },
    };
}

/** Workers (runspaces) svc's `/health` counts; null for other servers. */
async function healthWorkers(url: string | null): Promise<number | null> {
  if (!url) return null;
  const pool = (await healthOnce(url)).pool;
  return pool ? pool.total : null;
}

/** Starts a target for P6 (null: it cannot be measured here, with the reason in `notes`). */
async function start(
  b: Bench,
  target: TargetDef,
  transport: "http" | "stdio",
): Promise<Started | null> {
  if (target.kind === "svc" && transport === "http") {
    const proc = await b.startSvc(b.svcOptions({}, {}, { cacheDir: await b.svcCache() }));
    const connect = () => connectHttp(`${proc.base}/mcp`, "2026-07-28", proc.pid);
    return {
      pid: proc.pid,
      client: await connect(),
      connect,
      health: `${proc.base}/health`,
      stop: async () => void await b.stopHttp(proc),
    };
  }
  if (target.kind === "floor" && transport === "http") {
    const proc = await b.startFloor();
    const connect = () => connectHttp(`${proc.base}/mcp`, "2026-07-28", proc.pid);
    return {
      pid: proc.pid,
      client: await connect(),
      connect,
      health: null,
      stop: async () => void await b.stopHttp(proc),
    };
  }
  if (target.kind === "command") {
    const { proc, client } = await b.startCommand(target, "2026-07-28");
    return {
      pid: proc.pid,
      client,
      connect: () => connectHttp(proc.mcpUrl, "2026-07-28", proc.pid),
      health: null,
      stop: async () => void await b.stopHttp(proc),
    };
  }
  if (target.kind === "url" && target.pid !== null) {
    const connect = () => connectHttp(target.url, "2026-07-28", target.pid);
    return {
      pid: target.pid,
      client: await connect(),
      connect,
      health: target.health,
      stop: async () => {},
    };
  }
  const cmd = target.kind === "svc"
    ? await b.svcStdio()
    : target.kind === "floor"
    ? floorStdioCommand()
    : target.kind === "stdio"
    ? { command: target.argv[0]!, args: target.argv.slice(1) }
    : null;
  if (!cmd) return null;
  const client = await connectStdio(cmd, "2025-11-25", b.tracker);
  return { pid: client.pid!, client, connect: null, health: null, stop: () => client.close() };
}

/** P6: idle, peak under Start-Sleep at c = 64, idle again; one fresh server per target and transport. */
export async function p6(b: Bench): Promise<void> {
  const { p4Seconds, p6Warmup } = counts(b);
  const settle = b.options.settleSeconds * 1000;
  const rows: (string | number)[][] = [];
  const raw: Record<string, unknown>[] = [];
  const notes: string[] = [
    `RSS = the sum of VmRSS over the server and every descendant (ps -A -o pid=,ppid=). idle: after the start and one date call, ${b.options.settleSeconds} s quiet. peak: the largest sum sampled every 250 ms during a closed loop of ${LEVEL} clients calling Start-Sleep -Milliseconds 50 (HTTP 2026-07-28) for ${p6Warmup} + ${p4Seconds} s (the pool grows in the first part); calls/s counts the last ${p4Seconds} s. after: ${b.options.settleSeconds} s after the loop.`,
    `The ceiling of that loop is ${LEVEL} × 1000/50 capped by a pool of 16 (svc's and PoshMcp's default MaxPoolSize) = ${
      sleepCeiling(LEVEL)
    } calls/s. Over stdio only the idle figure is taken (svc serves a stdio connection with one worker).`,
  ];
  // Shared instances of P3–P5 would add their memory and their idle load to the machine.
  await b.stopShared();
  const targets = [...b.options.targets];
  if (b.options.floor && !targets.some((t) => t.kind === "floor")) {
    targets.push({ kind: "floor", label: "floor" });
  }
  const add = (
    target: string,
    transport: string,
    phase: string,
    tree: { total: number; server: number; processes: number },
    extra: { calls?: number; goal?: RowSpec["goal"] } = {},
  ) => {
    const goal = target === "svc" ? extra.goal : undefined;
    const verdicts: string[] = [];
    if (goal?.rule.kind === "atMost") {
      verdicts.push(tree.total / MB <= goal.rule.max ? "meets" : "misses");
    }
    if (target === "svc" && extra.calls !== undefined) {
      verdicts.push(
        `${extra.calls >= 0.95 * sleepCeiling(LEVEL) ? "meets" : "misses"} ≥ 95 % of ceiling`,
      );
    }
    rows.push([
      target,
      transport,
      phase,
      tree.processes,
      mb(tree.server),
      mb(tree.total - tree.server),
      mb(tree.total),
      extra.calls === undefined ? "" : extra.calls.toFixed(1),
      extra.calls === undefined ? "" : `${(100 * extra.calls / sleepCeiling(LEVEL)).toFixed(0)} %`,
      goal?.text ?? "",
      verdicts.join("; "),
    ]);
    raw.push({ target, transport, phase, ...tree, calls: extra.calls });
  };
  const sample = (pid: number) => {
    const tree = treeMemory(pid);
    return {
      total: tree.total,
      server: tree.server,
      processes: 1 + tree.children.filter((c) => c.rss > 0).length,
    };
  };
  for (const target of targets) {
    for (const transport of ["http", "stdio"] as const) {
      if (target.kind === "svc" || target.kind === "floor") {
        if (!b.options.transports.includes(transport)) continue;
      } else if ((target.kind === "stdio") !== (transport === "stdio")) continue;
      if (target.kind === "url" && target.pid === null) {
        notes.push(`${target.label}: skipped (give --pid <server pid> to sample its RSS).`);
        continue;
      }
      const started = await start(b, target, transport);
      if (!started) continue;
      const label = target.label;
      const put = (phase: "idle" | "peak" | "loop", value: number) => {
        const spec = rowSpec(transport, phase);
        if (spec && target.kind !== "floor") b.comparison.put(spec, label, value);
      };
      try {
        const tools = await started.client.listTools();
        const date = await b.tool(started.client, "date", tools);
        if (date) await started.client.call(date, {});
        await sleep(settle);
        const idle = sample(started.pid);
        add(label, transport, "idle", idle, { goal: rowSpec(transport, "idle")?.goal });
        put("idle", idle.total / MB);
        b.tracker.addTree(started.pid);
        const sleepTool = await b.tool(started.client, "sleepMs", tools);
        if (!started.connect || !sleepTool) {
          if (started.connect && target.kind !== "floor") {
            notes.push(`${label}: no tool for Start-Sleep -Milliseconds (see --tool); no peak.`);
          }
          continue;
        }
        const clients: McpClient[] = [];
        for (let i = 0; i < LEVEL; i += 8) {
          clients.push(...await Promise.all(Array.from({ length: 8 }, started.connect)));
        }
        const sampler = samplePeakMemory(started.pid);
        let loop;
        try {
          loop = await closedLoop({
            workers: LEVEL,
            call: (i) => clients[i]!.call(sleepTool, { Milliseconds: 50 }),
            durationMs: p4Seconds * 1000,
            warmupMs: p6Warmup * 1000,
          });
        } finally {
          await closeAll(clients);
        }
        const peak = await sampler.stop();
        const workers = await healthWorkers(started.health);
        b.tracker.addTree(started.pid);
        add(label, transport, "peak", {
          total: peak.peak,
          server: peak.server,
          processes: peak.processes,
        }, {
          calls: loop.throughput,
          goal: rowSpec(transport, "peak")?.goal,
        });
        put("peak", peak.peak / MB);
        put("loop", loop.throughput);
        if (loop.errors > 0) {
          notes.push(`${label}: ${loop.errors} failed calls in the loop.`);
        }
        await sleep(settle);
        const after = treeMemory(started.pid);
        const rest = after.children.filter((c) => c.rss > 0);
        add(label, transport, "after the loop", {
          total: after.total,
          server: after.server,
          processes: 1 + rest.length,
        });
        if (rest.length > 0) {
          notes.push(
            `${label}: at the peak ${peak.processes} processes${
              workers === null ? "" : ` (${workers} workers by /health)`
            }; after the loop the server holds ${
              mb(after.server)
            } MB and its ${rest.length} child process(es) ${
              mb(rest.reduce((s, c) => s + c.rss, 0) / rest.length)
            } MB each on average.`,
          );
        }
      } finally {
        await started.stop();
      }
    }
  }
  b.add({
    id: "P6",
    title: "memory of the process tree (RSS, MB)",
    columns: [
      "target",
      "transport",
      "phase",
      "processes",
      "server",
      "descendants",
      "total",
      "calls/s",
      "of ceiling",
      "goal",
      "verdict",
    ],
    rows,
    notes,
  }, raw);
}
