/**
 * P7, what per-principal process isolation costs (issue 30, "Process isolation stays affordable"):
 * svc over HTTP with API-key authentication, where a pwsh process serves one principal at a time
 * (`lib/pool_tenancy.ts`), against the same load with authentication off (every caller the shared
 * tenant). Three parts, each on freshly started servers:
 *
 * - **load**: for K principals (`--principals`, default 1, 2, 4, 8), `--clients-per-principal`
 *   (default 2) closed-loop MCP clients per principal calling `get_date`; calls/s, latency, the
 *   pwsh processes and the process-tree RSS at the peak and when idle after, per
 *   `--runspaces-per-process` value (default 8, svc's); authentication off and on back to back.
 * - **first call**: the first call of a new principal while every process serves another one (a
 *   process spawn on its path), against the first call of a principal that finds a freed process
 *   (a warm worker there) and a principal's second call.
 * - **alternating**: one client each for principals A and B calling in turn (A, B, A, B, ...) on
 *   one pool, against A alone, in alternating blocks.
 *
 * @module
 */
import { type Bench, closeAll, closedLoop, healthOnce, sequential } from "./common.ts";
import { mb, summarize, type Summary } from "./stats.ts";
import { isWorkerCommand, sleep, treeMemory, treeMemoryAsync } from "./proc.ts";
import { connectHttp, type HttpProcess, type McpClient } from "./targets.ts";
import { counts, statCells, STATS } from "./scenario.ts";

/** The API key of principal `i` (its entry is named `p<i>`). */
function keyOf(i: number): string {
  return `bench-isolation-${i}-5d1f7a20c3`;
}

/**
 * Starts svc over HTTP (warm: `/health/ready`) with `RunspacesPerProcess` `rpp` and, when
 * `principals` > 0, API-key authentication required for that many principals.
 */
async function startSvc(
  b: Bench,
  rpp: number,
  principals: number,
  root = b.options.svcRoot,
): Promise<HttpProcess> {
  const options = b.svcOptions({}, { RunspacesPerProcess: rpp }, {
    cacheDir: await b.svcCache(),
    root,
  });
  if (principals > 0) {
    options.config.Authentication = {
      Enabled: true,
      DefaultScheme: "keys",
      DefaultPolicy: { RequireAuthentication: true },
      Schemes: {
        keys: {
          Type: "ApiKey",
          Keys: Object.fromEntries(
            Array.from({ length: principals }, (_, i) => [`p${i}`, { Value: keyOf(i) }]),
          ),
        },
      },
    };
  }
  return await b.startSvc(options);
}

/** An MCP client of `proc`, as principal `principal` (null: no key). */
function connect(proc: HttpProcess, principal: number | null): Promise<McpClient> {
  return connectHttp(
    `${proc.base}/mcp`,
    "2026-07-28",
    proc.pid,
    principal === null ? {} : { "x-api-key": keyOf(principal) },
  );
}

/** The worker (pwsh) processes below svc now, with the tree's RSS. */
function workers(pid: number): { pids: number[]; total: number } {
  const tree = treeMemory(pid);
  return {
    pids: tree.children.filter((c) => c.rss > 0 && isWorkerCommand(c.args)).map((c) => c.pid),
    total: tree.total,
  };
}

/** Samples the tree every 250 ms: the largest RSS sum, the most pwsh processes, every pwsh seen. */
function sampleTree(pid: number) {
  const found = { peak: 0, processes: 0, seen: new Set<number>() };
  let running = true;
  const loop = (async () => {
    while (running) {
      const tree = await treeMemoryAsync(pid);
      const pwsh = tree.children.filter((c) => c.rss > 0 && isWorkerCommand(c.args));
      found.peak = Math.max(found.peak, tree.total);
      found.processes = Math.max(found.processes, pwsh.length);
      for (const c of pwsh) found.seen.add(c.pid);
      await sleep(250);
    }
  })();
  return {
    found,
    stop: async () => {
      running = false;
      await loop;
      return found;
    },
  };
}

/**
 * Keeps `call` going on every client until the pool has grown to what the load needs (no worker
 * starting, and the worker and process counts unchanged, for 2 s), at least `minMs`, at most 60 s.
 * Returns how long that took.
 */
async function warmUp(
  proc: HttpProcess,
  clients: number,
  call: (i: number) => Promise<{ isError?: boolean | undefined }>,
  minMs: number,
): Promise<number> {
  const stop = new AbortController();
  const loop = closedLoop({ workers: clients, call, durationMs: 60_000, stop: stop.signal });
  const begin = performance.now();
  let state = "";
  let stableSince = begin;
  while (performance.now() - begin < 60_000) {
    await sleep(250);
    const { pool } = await healthOnce(`${proc.base}/health`);
    const now = `${pool?.total}/${pool?.creating}/${workers(proc.pid).pids.length}`;
    if (now !== state || (pool?.creating ?? 0) > 0) [state, stableSince] = [now, performance.now()];
    if (performance.now() - begin >= minMs && performance.now() - stableSince >= 2_000) break;
  }
  stop.abort();
  await loop;
  return performance.now() - begin;
}

/** Part 1: the load table, authentication off and on back to back for each K. */
async function load(b: Bench): Promise<void> {
  const { p4Seconds, p6Warmup } = counts(b);
  const per = b.options.clientsPerPrincipal;
  const settle = b.options.settleSeconds * 1000;
  const rows: (string | number)[][] = [];
  const raw: Record<string, unknown>[] = [];
  const builds = [b.options.svcRoot, ...b.options.compareRoots];
  const buildName = (root: string) =>
    builds.length === 1 ? [] : [builds.indexOf(root) === 0 ? "this" : root];
  const notes = [
    `get_date (HTTP 2026-07-28, one MCP session per client), ${per} closed-loop clients per principal; auth on: API key i for clients of principal i; auth off: the same clients without keys (one shared tenant). Every row on a fresh svc (MinPoolSize 2, MaxPoolSize 16), warmed with the same load until the pool, its creations and the pwsh count stood still for 2 s (at least ${p6Warmup} s, at most 60 s; "warm-up s"), then ${p4Seconds} s measured.`,
    `pwsh peak: the most worker processes seen (every 250 ms) during warm-up and measurement; started: pwsh processes first seen during the measured seconds; peak MB: the largest sum of VmRSS over svc and its descendants; idle: ${b.options.settleSeconds} s after the clients closed (IdleTtl is 5 min, so nothing is reclaimed yet); MB/pwsh: (idle tree − svc's own RSS) / pwsh processes.`,
  ];
  for (const k of b.options.principals) {
    for (const rpp of b.options.runspacesPerProcess) {
      for (
        const [build, auth] of builds.flatMap((root) => [[root, false], [root, true]] as const)
      ) {
        const proc = await startSvc(b, rpp, auth ? k : 0, build);
        let clients: McpClient[] = [];
        try {
          for (let i = 0; i < k * per; i += 8) {
            const n = Math.min(8, k * per - i);
            clients.push(
              ...await Promise.all(
                Array.from({ length: n }, (_, j) => connect(proc, auth ? (i + j) % k : null)),
              ),
            );
          }
          const tool = (await b.tool(clients[0]!, "date"))!;
          const call = (i: number) => clients[i]!.call(tool, {});
          const sampler = sampleTree(proc.pid);
          const warmMs = await warmUp(proc, clients.length, call, p6Warmup * 1000);
          const before = new Set(sampler.found.seen);
          const loop = await closedLoop({
            workers: clients.length,
            call,
            durationMs: p4Seconds * 1000,
          });
          const peak = await sampler.stop();
          const started = [...peak.seen].filter((pid) => !before.has(pid)).length;
          const pool = (await healthOnce(`${proc.base}/health`)).pool;
          b.tracker.addTree(proc.pid);
          await closeAll(clients);
          clients = [];
          await sleep(settle);
          const idle = workers(proc.pid);
          const server = treeMemory(proc.pid).server;
          const s = loop.summary;
          rows.push([
            ...buildName(build),
            k,
            auth ? "on" : "off",
            rpp,
            k * per,
            (warmMs / 1000).toFixed(1),
            loop.throughput.toFixed(0),
            s.median.toFixed(2),
            s.p95.toFixed(2),
            s.p99.toFixed(2),
            loop.errors,
            pool?.total ?? "",
            peak.processes,
            started,
            mb(peak.peak),
            idle.pids.length,
            mb(idle.total),
            idle.pids.length ? mb((idle.total - server) / idle.pids.length) : "",
          ]);
          raw.push({
            build,
            k,
            auth,
            rpp,
            warmMs,
            loop: { ...loop, records: undefined },
            peak,
            idle,
          });
          if (loop.errors > 0) {
            notes.push(
              `K = ${k}, auth ${auth ? "on" : "off"}, RunspacesPerProcess ${rpp}: ${
                JSON.stringify(loop.errorKinds).slice(0, 300)
              }`,
            );
          }
        } finally {
          await closeAll(clients);
          await b.stopHttp(proc);
        }
      }
    }
  }
  b.add({
    id: "P7",
    title: "per-principal isolation under load (get_date, HTTP)",
    columns: [
      ...(builds.length === 1 ? [] : ["build"]),
      "K",
      "auth",
      "rpp",
      "c",
      "warm-up s",
      "calls/s",
      "p50",
      "p95",
      "p99",
      "errors",
      "workers",
      "pwsh peak",
      "started",
      "peak MB",
      "pwsh idle",
      "idle MB",
      "MB/pwsh",
    ],
    rows,
    notes,
  }, raw);
}

/**
 * Part 2: the first call of a new principal. Per trial, on a fresh svc with authentication:
 * principal 0 keeps the only process busy (two clients, `Start-Sleep` 1.5 s each, 0.75 s apart, so
 * one call of its is always running), then principal 1's first `get_date` (no process it may use:
 * one is spawned on the path), its second (its process, warm), and principal 2's first (principal
 * 1's process is free again: a warm worker, no spawn).
 */
async function firstCall(b: Bench): Promise<void> {
  const trials = b.options.full ? 10 : 3;
  const rpp = b.options.runspacesPerProcess[0]!;
  const cases = [
    "new principal, every process busy for another",
    "the same principal's second call",
    "new principal, a freed process",
  ] as const;
  const ms: Record<string, number[]> = Object.fromEntries(cases.map((c) => [c, []]));
  const processes: Record<string, number[]> = Object.fromEntries(cases.map((c) => [c, []]));
  const notes: string[] = [];
  for (let t = 0; t < trials; t++) {
    const proc = await startSvc(b, rpp, 3);
    const clients: McpClient[] = [];
    let holding = true;
    let holders: Promise<unknown> = Promise.resolve();
    try {
      for (const p of [0, 0, 1, 2]) clients.push(await connect(proc, p));
      const tools = await clients[0]!.listTools();
      const date = (await b.tool(clients[0]!, "date", tools))!;
      const sleepTool = (await b.tool(clients[0]!, "sleepMs", tools))!;
      const hold = async (i: number) => {
        await sleep(i * 750);
        while (holding) await clients[i]!.call(sleepTool, { Milliseconds: 1500 });
      };
      holders = Promise.all([hold(0), hold(1)]);
      await sleep(1_000);
      b.tracker.addTree(proc.pid);
      for (const [name, client] of [[cases[0], 2], [cases[1], 2], [cases[2], 3]] as const) {
        const run = await sequential(1, 0, () => clients[client]!.call(date, {}));
        if (run.errors > 0) notes.push(`trial ${t + 1}, ${name}: ${run.firstError}`);
        else ms[name]!.push(run.summary.median);
        processes[name]!.push(workers(proc.pid).pids.length);
      }
      b.tracker.addTree(proc.pid);
    } finally {
      holding = false;
      await holders.catch(() => {});
      await closeAll(clients);
      await b.stopHttp(proc);
    }
  }
  const rows = cases.map((c) => {
    const list = ms[c]!;
    const sorted = [...list].sort((x, y) => x - y);
    return [
      c,
      list.length,
      sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)]!.toFixed(1) : "",
      sorted.length ? sorted[0]!.toFixed(1) : "",
      sorted.length ? sorted.at(-1)!.toFixed(1) : "",
      list.map((v) => v.toFixed(0)).join(", "),
      processes[c]!.join(", "),
    ];
  });
  notes.unshift(
    `One fresh svc per trial (API keys for 3 principals, MinPoolSize 2 in one process, RunspacesPerProcess ${rpp}). Principal 0 keeps that process busy: two clients calling Start-Sleep -Milliseconds 1500 back to back, started 0.75 s apart. Then, one after the other: principal 1's first get_date (every process serves principal 0: svc spawns a process for it), principal 1's second call, principal 2's first call (principal 1's process is free again: a warm worker, nothing spawned). pwsh after: worker processes after each call.`,
  );
  b.add({
    id: "P7",
    title: "first call of a new principal (ms)",
    columns: ["case", "N", "median", "min", "max", "each", "pwsh after"],
    rows,
    notes,
  }, { ms, processes });
}

/**
 * Part 3: sequential calls of principals A and B in turn on one pool (MaxPoolSize 16) against A
 * alone, in alternating blocks on the same svc.
 */
async function alternating(b: Bench): Promise<void> {
  const { p3 } = counts(b);
  const rpp = b.options.runspacesPerProcess[0]!;
  const blocks = 4;
  const per = Math.max(10, Math.round(p3 / blocks));
  const proc = await startSvc(b, rpp, 2);
  const clients: McpClient[] = [];
  const variants = { "A only": [] as number[], "A, B, A, B": [] as number[] };
  const started = { "A only": 0, "A, B, A, B": 0 };
  let summaries: Record<string, Summary> = {};
  try {
    clients.push(await connect(proc, 0), await connect(proc, 1));
    const date = (await b.tool(clients[0]!, "date"))!;
    for (let i = 0; i < 20; i++) await clients[i % 2]!.call(date, {});
    for (let block = 0; block < blocks; block++) {
      for (const name of ["A only", "A, B, A, B"] as const) {
        const before = new Set(workers(proc.pid).pids);
        let turn = 0;
        const run = await sequential(per, 0, () => {
          const client = name === "A only" ? clients[0]! : clients[turn++ % 2]!;
          return client.call(date, {});
        });
        variants[name].push(...run.records.filter((r) => r.ok).map((r) => r.ms));
        started[name] += workers(proc.pid).pids.filter((pid) => !before.has(pid)).length;
      }
    }
    b.tracker.addTree(proc.pid);
    summaries = Object.fromEntries(Object.entries(variants).map(([k, v]) => [k, summarize(v)]));
  } finally {
    await closeAll(clients);
    await b.stopHttp(proc);
  }
  b.add({
    id: "P7",
    title: "alternating principals on one pool (get_date, sequential, ms)",
    columns: ["calls", ...STATS, "pwsh started"],
    rows: Object.entries(summaries).map(([name, s]) => [
      name,
      ...statCells(s),
      started[name as keyof typeof started],
    ]),
    notes: [
      `One svc (API keys for 2 principals, MaxPoolSize 16, RunspacesPerProcess ${rpp}), 20 unmeasured calls alternating, then ${blocks} blocks of ${per} calls of each variant, the variants taking turns. pwsh started: worker processes that appeared during that variant's blocks.`,
    ],
  }, summaries);
}

/** P7: per-principal isolation's cost in throughput, latency, processes and memory. */
export async function p7(b: Bench): Promise<void> {
  if (!b.options.targets.some((t) => t.kind === "svc")) return;
  // The shared instances of P2–P5 would add their memory and load.
  await b.stopShared();
  await load(b);
  await firstCall(b);
  await alternating(b);
}
