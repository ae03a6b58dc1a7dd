/**
 * Fault scenarios F1–F3 of issue 7 (crash, timeout and cancel, exhaustion), and the opt-in F4 soak
 * (`--minutes N`). They need svc's process tree (to kill workers and count orphans), so they run
 * against svc spawned here (`--target svc`, the default), on real PowerShell. Run with
 * `deno task bench:faults`; see bench/README.md.
 *
 * @module
 */
import {
  type Bench,
  type CallRecord,
  closeAll,
  healthOnce,
  type HealthSample,
  main,
  probeHealth,
  record,
  resultText,
  say,
} from "./lib/common.ts";
import { ms, slope, summarize, type Summary } from "./lib/stats.ts";
import {
  cpuTicks,
  fdsOf,
  isAlive,
  isWorkerCommand,
  processTable,
  signal,
  sleep,
  threadsOf,
  treeMemory,
  waitFor,
} from "./lib/proc.ts";
import {
  connectHttp,
  connectStdio,
  type HttpProcess,
  type McpClient,
  resolveTool,
  type RoleName,
  tempDir,
  type ToolInfo,
} from "./lib/targets.ts";

const STATS = ["N", "median", "p95", "p99", "mean"];

function statCells(s: Summary): (string | number)[] {
  return [s.n, ms(s.median), ms(s.p95), ms(s.p99), ms(s.mean)];
}

/** Live worker processes directly below a server. */
function workerPids(serverPid: number): number[] {
  return processTable()
    .filter((row) => row.ppid === serverPid && isWorkerCommand(row.args) && isAlive(row.pid))
    .map((row) => row.pid);
}

/** Tools of every role used here, resolved once per connection. */
async function toolsOf(b: Bench, client: McpClient): Promise<Record<RoleName, string>> {
  const tools: ToolInfo[] = await client.listTools();
  const out = {} as Record<RoleName, string>;
  for (const role of ["date", "sleepS", "sleepMs", "exit", "stuck"] as const) {
    const name = resolveTool(tools, role, b.options.tools);
    if (!name) throw new Error(`svc offers no tool for ${role}; is the fixture module configured?`);
    out[role] = name;
  }
  return out;
}

/**
 * After an F2 case: which workers were replaced, which of them outlived it, and, for the stuck
 * command, whether its `sleep` child was killed with its worker (a survivor is killed here).
 */
async function leftovers(
  b: Bench,
  role: RoleName,
  dir: string,
  before: number[],
  serverPid: number,
): Promise<{ replaced: number[]; orphans: number[]; sleepNote: string }> {
  const after = workerPids(serverPid);
  const replaced = before.filter((pid) => !after.includes(pid));
  const orphans = replaced.filter((pid) => isAlive(pid));
  let sleepNote = "";
  if (role === "stuck") {
    const sleepPid = await readPidFile(`${dir}/stuck.pid`, 1000);
    if (sleepPid !== null) {
      b.tracker.add(sleepPid);
      await sleep(300);
      const alive = isAlive(sleepPid);
      if (alive) {
        orphans.push(sleepPid);
        signal(sleepPid, "SIGKILL");
      }
      sleepNote = `; its \`sleep\` child ${alive ? "survived (orphan)" : "was killed"}`;
    }
  }
  return { replaced, orphans, sleepNote };
}

/** Reads the pid that Invoke-FixtureStuck writes (its `sleep 300` child). */
async function readPidFile(path: string, ms: number): Promise<number | null> {
  let pid: number | null = null;
  await waitFor(async () => {
    const text = await Deno.readTextFile(path).catch(() => "");
    if (/^\d+\s*$/.test(text) && text.endsWith("\n")) pid = Number(text.trim());
    return pid !== null;
  }, ms);
  return pid;
}

function outcomeOf(r: CallRecord): string {
  return r.ok ? "ok" : `error: ${(r.error ?? "").replace(/\s+/g, " ").slice(0, 90)}`;
}

function healthSummary(samples: HealthSample[]): { summary: Summary; codes: string } {
  const codes: Record<number, number> = {};
  for (const s of samples) codes[s.status] = (codes[s.status] ?? 0) + 1;
  return {
    summary: summarize(samples.filter((s) => s.status > 0).map((s) => s.ms)),
    codes: Object.entries(codes).map(([code, count]) => `${code}×${count}`).join(" "),
  };
}

// ---------------------------------------------------------------- F1 crash

/**
 * Waits until the pool is back to `size` workers (none creating) in as many live worker processes
 * as it had before the fault (`processes`: one per worker with `RunspacesPerProcess` 1, a single
 * one for six workers with the default eight runspaces per process), and `gone` is dead.
 */
async function waitFullCapacity(
  proc: HttpProcess,
  size: number,
  processes: number,
  gone: number,
  t0: number,
  limitMs: number,
): Promise<number | null> {
  const ok = await waitFor(
    async () => {
      if (isAlive(gone) && workerPids(proc.pid).includes(gone)) return false;
      const pool = (await healthOnce(`${proc.base}/health`)).pool;
      return pool !== undefined && pool.total === size && pool.creating === 0 &&
        workerPids(proc.pid).length === processes;
    },
    limitMs,
    20,
  );
  return ok ? performance.now() - t0 : null;
}

async function f1(b: Bench): Promise<void> {
  const size = 6;
  const rows: (string | number)[][] = [];
  const raw: Record<string, unknown> = {};
  const notes: string[] = [
    `HTTP: a fixed pool (MinPoolSize = EagerWarmCount = MaxPoolSize = ${size}) so that "full capacity" means ${size} workers again, in as many live worker processes as before the faults (a worker process holds up to RunspacesPerProcess workers, so killing one ends every call running in it); 4 clients call get_date back to back throughout; a 5th client carries the faulting call. Collateral errors = the 4 clients' failed calls from the fault until recovery + 1 s.`,
    "Idle worker = the worker with the fewest CPU ticks over 0.5 s while the 4 clients run. Mid-call = the worker running Invoke-FixtureStuck (found as the parent of the `sleep` it starts).",
  ];
  if (b.options.transports.includes("http")) {
    const proc = await b.startSvc(
      b.svcOptions({}, { MinPoolSize: size, EagerWarmCount: size, MaxPoolSize: size }, {
        cacheDir: await b.svcCache(),
      }),
    );
    try {
      await waitFor(
        async () => (await healthOnce(`${proc.base}/health`)).pool?.warm === size,
        30_000,
      );
      const processes = workerPids(proc.pid).length;
      const url = `${proc.base}/mcp`;
      const loopers = await Promise.all(
        Array.from({ length: 4 }, () => connectHttp(url, "2026-07-28", proc.pid)),
      );
      const faulty = await connectHttp(url, "2026-07-28", proc.pid);
      const tools = await toolsOf(b, faulty);
      const records: CallRecord[] = [];
      let running = true;
      const deadline = performance.now() + 120_000;
      const loops = loopers.map(async (client) => {
        while (running && performance.now() < deadline) {
          records.push(await record(() => client.call(tools.date, {})));
        }
      });
      const started = performance.now();
      await sleep(1500);
      const baselineRate = records.filter((r) => r.ok).length /
        ((performance.now() - started) / 1000);
      const faults: {
        name: string;
        t0: number;
        call: CallRecord | null;
        recovery: number | null;
        extra: string;
      }[] = [];

      // (a) kill -9 an idle worker.
      b.tracker.addTree(proc.pid);
      const pids = workerPids(proc.pid);
      const before = pids.map(cpuTicks);
      await sleep(500);
      const deltas = pids.map((pid, i) => cpuTicks(pid) - before[i]!);
      const idle = pids[deltas.indexOf(Math.min(...deltas))]!;
      let t0 = performance.now();
      signal(idle, "SIGKILL");
      let recovery = await waitFullCapacity(proc, size, processes, idle, t0, 20_000);
      faults.push({
        name: "kill -9 idle worker",
        t0,
        call: null,
        recovery,
        extra: `pid ${idle} (CPU ticks over 0.5 s: ${Math.min(...deltas)}; others ${
          deltas.filter((d) => d !== Math.min(...deltas)).join(",")
        })`,
      });
      await sleep(1000);

      // (b) kill -9 a worker mid-call.
      b.tracker.addTree(proc.pid);
      const dir = await tempDir("svc-bench-f1-");
      const pidFile = `${dir}/stuck.pid`;
      const stuck = record(() =>
        faulty.call(tools.stuck, { Seconds: 30, PidFile: pidFile }, { timeoutMs: 60_000 })
      );
      const sleepPid = await readPidFile(pidFile, 15_000);
      let extra = "";
      if (sleepPid !== null) {
        b.tracker.add(sleepPid);
        const worker = processTable().find((r) => r.pid === sleepPid)?.ppid ?? 0;
        t0 = performance.now();
        signal(worker, "SIGKILL");
        const call = await stuck;
        recovery = await waitFullCapacity(proc, size, processes, worker, t0, 20_000);
        await sleep(500);
        const orphan = isAlive(sleepPid);
        extra = `pid ${worker}; its child \`sleep\` ${sleepPid} ${
          orphan ? "is still running (orphan)" : "is gone"
        }`;
        faults.push({ name: "kill -9 worker mid-call", t0, call, recovery, extra });
        if (orphan) signal(sleepPid, "SIGKILL");
      } else {
        faults.push({
          name: "kill -9 worker mid-call",
          t0: performance.now(),
          call: await stuck,
          recovery: null,
          extra: "Invoke-FixtureStuck never wrote its pid file",
        });
      }
      await sleep(1000);

      // (c) a tool that exits the worker process.
      b.tracker.addTree(proc.pid);
      const beforeExit = workerPids(proc.pid);
      t0 = performance.now();
      const exitCall = await record(() => faulty.call(tools.exit, { Code: 1 }));
      const gone = beforeExit.find((pid) => !isAlive(pid)) ?? 0;
      recovery = await waitFullCapacity(proc, size, processes, gone, t0, 20_000);
      faults.push({
        name: "tool exits its worker (Invoke-FixtureExit -Code 1)",
        t0,
        call: exitCall,
        recovery,
        extra: gone ? `pid ${gone}` : "no worker exited",
      });
      await sleep(1000);

      running = false;
      await Promise.all(loops);
      await closeAll([...loopers, faulty]);
      for (const [i, fault] of faults.entries()) {
        const end = fault.recovery !== null
          ? fault.t0 + fault.recovery + 1000
          : faults[i + 1]?.t0 ?? performance.now();
        const window = records.filter((r) => r.start + r.ms >= fault.t0 && r.start <= end);
        const failed = window.filter((r) => !r.ok);
        raw[fault.name] = {
          call: fault.call,
          recoveryMs: fault.recovery,
          collateral: failed.length,
          calls: window.length,
          errors: [...new Set(failed.map((r) => r.error))],
          extra: fault.extra,
        };
        rows.push([
          "http",
          fault.name,
          fault.call ? outcomeOf(fault.call) : "–",
          fault.call ? ms(fault.call.start + fault.call.ms - fault.t0) : "–",
          `${failed.length} / ${window.length}`,
          fault.recovery !== null ? ms(fault.recovery) : "not within 20 s",
          fault.extra,
        ]);
        if (failed.length > 0) {
          notes.push(`${fault.name}: collateral error text: ${failed[0]!.error}`);
        }
      }
      notes.push(
        `Baseline before the faults: ${
          baselineRate.toFixed(0)
        } get_date calls/s from the 4 clients; ${
          records.filter((r) => !r.ok).length
        } of ${records.length} calls failed over the whole run.`,
      );
    } finally {
      await b.stopHttp(proc);
    }
  }

  if (b.options.transports.includes("stdio")) {
    const client = await connectStdio(await b.svcStdio(), "2025-11-25", b.tracker);
    try {
      const tools = await toolsOf(b, client);
      await client.call(tools.date, {});
      const pid = client.pid!;
      // (a) idle worker killed: the next call must start a fresh worker.
      b.tracker.addTree(pid);
      let worker = workerPids(pid)[0];
      if (worker) {
        signal(worker, "SIGKILL");
        await sleep(200);
        const next = await record(() => client.call(tools.date, {}));
        rows.push([
          "stdio",
          "kill -9 idle worker, then get_date",
          outcomeOf(next),
          ms(next.ms),
          "–",
          "–",
          `next call's latency includes a new worker (pid ${workerPids(pid)[0] ?? "?"})`,
        ]);
      }
      // (b) mid-call kill.
      b.tracker.addTree(pid);
      const dir = await tempDir("svc-bench-f1-");
      const pidFile = `${dir}/stuck.pid`;
      const stuck = record(() =>
        client.call(tools.stuck, { Seconds: 30, PidFile: pidFile }, { timeoutMs: 60_000 })
      );
      const sleepPid = await readPidFile(pidFile, 15_000);
      if (sleepPid !== null) {
        b.tracker.add(sleepPid);
        worker = processTable().find((r) => r.pid === sleepPid)?.ppid ?? 0;
        const t0 = performance.now();
        signal(worker, "SIGKILL");
        const call = await stuck;
        const next = await record(() => client.call(tools.date, {}));
        await sleep(500);
        const orphan = isAlive(sleepPid);
        rows.push([
          "stdio",
          "kill -9 worker mid-call",
          outcomeOf(call),
          ms(call.start + call.ms - t0),
          "–",
          "–",
          `next get_date ${outcomeOf(next)} in ${ms(next.ms)} ms; \`sleep\` child ${
            orphan ? "still running (orphan)" : "gone"
          }`,
        ]);
        if (orphan) signal(sleepPid, "SIGKILL");
      } else {
        await stuck;
      }
      // (c) exit tool.
      b.tracker.addTree(pid);
      const exitCall = await record(() => client.call(tools.exit, { Code: 1 }));
      const next = await record(() => client.call(tools.date, {}));
      rows.push([
        "stdio",
        "tool exits its worker (Invoke-FixtureExit -Code 1)",
        outcomeOf(exitCall),
        ms(exitCall.ms),
        "–",
        "–",
        `next get_date ${outcomeOf(next)} in ${ms(next.ms)} ms`,
      ]);
      b.tracker.addTree(pid);
    } finally {
      await client.close();
    }
  }
  b.add({
    id: "F1",
    title: "crash",
    columns: [
      "transport",
      "fault",
      "faulting call",
      "time to error (ms)",
      "collateral errors / calls",
      "time to full capacity (ms)",
      "detail",
    ],
    rows,
    notes,
  }, raw);
}

// ---------------------------------------------------------------- F2 timeout and cancel

async function f2(b: Bench): Promise<void> {
  const rows: (string | number)[][] = [];
  const raw: Record<string, unknown> = {};
  const notes: string[] = [
    "svc runs with ToolCallTimeout 00:00:02 and StopTimeout 00:00:02. 'worker free' = /health shows nothing leased, resetting or creating (HTTP); stdio: the latency of the next get_date call.",
    "Cancel = the client aborts the request after 500 ms (the SDK sends notifications/cancelled; over HTTP 2026-07-28 it also closes the response stream). A worker freed ~2 s after the call started means the time limit, not the cancel, stopped the call.",
  ];
  const shell = { ToolCallTimeout: "00:00:02" };
  if (b.options.transports.includes("http")) {
    const proc = await b.startSvc(b.svcOptions(shell, {}, { cacheDir: await b.svcCache() }));
    const idle = async () => {
      const pool = (await healthOnce(`${proc.base}/health`)).pool;
      return pool !== undefined && pool.leased === 0 && pool.resetting === 0 && pool.creating === 0;
    };
    try {
      await waitFor(idle, 30_000);
      const modern = await connectHttp(`${proc.base}/mcp`, "2026-07-28", proc.pid);
      const era2025 = await connectHttp(`${proc.base}/mcp`, "2025-11-25", proc.pid);
      const tools = await toolsOf(b, modern);
      const cases: {
        name: string;
        client: McpClient;
        role: RoleName;
        args: (dir: string) => Record<string, unknown>;
        cancelMs?: number;
      }[] = [
        {
          name: "Start-Sleep 60 s, 2 s limit (2026-07-28)",
          client: modern,
          role: "sleepS",
          args: () => ({ Seconds: 60 }),
        },
        {
          name: "Invoke-FixtureStuck (ignores stop), 2 s limit",
          client: modern,
          role: "stuck",
          args: (dir) => ({ Seconds: 60, PidFile: `${dir}/stuck.pid` }),
        },
        {
          name: "cancel after 500 ms (2026-07-28)",
          client: modern,
          role: "sleepS",
          args: () => ({ Seconds: 60 }),
          cancelMs: 500,
        },
        {
          name: "cancel after 500 ms (2025-11-25)",
          client: era2025,
          role: "sleepS",
          args: () => ({ Seconds: 60 }),
          cancelMs: 500,
        },
      ];
      for (const c of cases) {
        await waitFor(idle, 10_000);
        b.tracker.addTree(proc.pid);
        const before = workerPids(proc.pid);
        const dir = await tempDir("svc-bench-f2-");
        const controller = new AbortController();
        const timer = c.cancelMs ? setTimeout(() => controller.abort(), c.cancelMs) : undefined;
        const started = performance.now();
        const call = await record(() =>
          c.client.call(tools[c.role], c.args(dir), {
            signal: controller.signal,
            timeoutMs: 90_000,
          })
        );
        clearTimeout(timer);
        const freed = (await waitFor(idle, 15_000, 10)) ? performance.now() - started : null;
        const next = await record(() => modern.call(tools.date, {}));
        b.tracker.addTree(proc.pid);
        const { replaced, orphans, sleepNote } = await leftovers(b, c.role, dir, before, proc.pid);
        raw[c.name] = { call, freedMs: freed, next, replaced, orphans };
        rows.push([
          "http",
          c.name,
          outcomeOf(call),
          ms(call.ms),
          freed !== null ? ms(freed) : "not within 15 s",
          replaced.length > 0 ? `replaced (${replaced.join(",")} gone)` : "reused",
          orphans.length,
          `next get_date ${next.ok ? "ok" : "failed"} in ${ms(next.ms)} ms${sleepNote}`,
        ]);
      }
      await closeAll([modern, era2025]);
    } finally {
      await b.stopHttp(proc);
    }
  }
  if (b.options.transports.includes("stdio")) {
    const cmd = await b.svcStdio({ ...shell });
    const cases: {
      name: string;
      role: RoleName;
      args: (dir: string) => Record<string, unknown>;
      cancelMs?: number;
    }[] = [
      { name: "Start-Sleep 60 s, 2 s limit", role: "sleepS", args: () => ({ Seconds: 60 }) },
      {
        name: "Invoke-FixtureStuck (ignores stop), 2 s limit",
        role: "stuck",
        args: (dir) => ({ Seconds: 60, PidFile: `${dir}/stuck.pid` }),
      },
      { name: "cancel after 500 ms", role: "sleepS", args: () => ({ Seconds: 60 }), cancelMs: 500 },
    ];
    for (const c of cases) {
      const client = await connectStdio(cmd, "2025-11-25", b.tracker);
      try {
        const tools = await toolsOf(b, client);
        await client.call(tools.date, {});
        const pid = client.pid!;
        b.tracker.addTree(pid);
        const before = workerPids(pid);
        const dir = await tempDir("svc-bench-f2-");
        const controller = new AbortController();
        const timer = c.cancelMs ? setTimeout(() => controller.abort(), c.cancelMs) : undefined;
        const started = performance.now();
        const call = await record(() =>
          client.call(tools[c.role], c.args(dir), { signal: controller.signal, timeoutMs: 90_000 })
        );
        clearTimeout(timer);
        const next = await record(() => client.call(tools.date, {}));
        const freed = next.start + next.ms - started;
        b.tracker.addTree(pid);
        const { replaced, orphans, sleepNote } = await leftovers(b, c.role, dir, before, pid);
        raw[`stdio ${c.name}`] = { call, next, replaced, orphans };
        rows.push([
          "stdio",
          c.name,
          outcomeOf(call),
          ms(call.ms),
          ms(freed),
          replaced.length > 0 ? `replaced (${replaced.join(",")} gone)` : "reused",
          orphans.length,
          `next get_date ${next.ok ? "ok" : "failed"} in ${ms(next.ms)} ms${sleepNote}`,
        ]);
      } finally {
        await client.close();
      }
    }
  }
  b.add({
    id: "F2",
    title: "timeout and cancel",
    columns: [
      "transport",
      "case",
      "outcome",
      "time to error (ms)",
      "worker free after (ms from call start)",
      "worker",
      "orphans",
      "detail",
    ],
    rows,
    notes,
  }, raw);
}

// ---------------------------------------------------------------- F3 exhaustion

async function f3(b: Bench): Promise<void> {
  if (!b.options.transports.includes("http")) return;
  const max = b.options.full ? 16 : 4;
  const rows: (string | number)[][] = [];
  const raw: Record<string, unknown> = {};
  const notes: string[] = [
    `MaxPoolSize = MinPoolSize = EagerWarmCount = ${max} (pool full from the start; --full uses 16); ${
      2 * max
    } concurrent sleepers; /health probed every 50 ms from a separate process.`,
    "A: AcquisitionTimeout 15 s (default), 2 s sleeps, all via MCP at once: the second half should queue (≈ 4 s), not fail. B: AcquisitionTimeout 1 s, 3 s sleeps: wave 1 (POST /call) takes every worker, wave 2 (300 ms later, half MCP, half POST /call) should be refused after ≈ 1 s with isError / 503 + Retry-After.",
  ];
  const half = Math.floor(max / 2);
  const phases = [
    {
      name: "A",
      acquisition: "00:00:15",
      seconds: 2,
      waves: [{ label: "", delayMs: 0, mcp: 2 * max, call: 0 }],
    },
    {
      name: "B",
      acquisition: "00:00:01",
      seconds: 3,
      waves: [
        { label: "wave 1", delayMs: 0, mcp: 0, call: max },
        { label: "wave 2", delayMs: 300, mcp: half, call: max - half },
      ],
    },
  ];
  for (const phase of phases) {
    const proc = await b.startSvc(
      b.svcOptions({}, {
        MaxPoolSize: max,
        MinPoolSize: max,
        EagerWarmCount: max,
        AcquisitionTimeout: phase.acquisition,
      }, { cacheDir: await b.svcCache() }),
    );
    try {
      await waitFor(
        async () => (await healthOnce(`${proc.base}/health`)).pool?.warm === max,
        60_000,
      );
      const mcpCount = phase.waves.reduce((sum, w) => sum + w.mcp, 0);
      const clients = await Promise.all(
        Array.from(
          { length: Math.max(1, mcpCount) },
          () => connectHttp(`${proc.base}/mcp`, "2026-07-28", proc.pid),
        ),
      );
      const tools = await toolsOf(b, clients[0]!);
      const health = await probeHealth(`${proc.base}/health`, 50, 120_000, b.tracker);
      const callHttp = async () => {
        const start = performance.now();
        try {
          const response = await fetch(`${proc.base}/call`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ tool: tools.sleepS, arguments: { Seconds: phase.seconds } }),
            signal: AbortSignal.timeout(60_000),
          });
          const body = await response.json().catch(() => null) as { isError?: boolean } | null;
          const retry = response.headers.get("retry-after");
          return {
            ms: performance.now() - start,
            outcome: `HTTP ${response.status}${retry ? ` Retry-After: ${retry}` : ""}${
              response.status === 200 && body?.isError ? " (isError)" : ""
            }`,
          };
        } catch (error) {
          return {
            ms: performance.now() - start,
            outcome: `failed: ${String(error).slice(0, 60)}`,
          };
        }
      };
      let next = 0;
      const pending: Promise<{ key: string; ms: number }>[] = [];
      const waveStart = performance.now();
      for (const wave of phase.waves) {
        const wait = wave.delayMs - (performance.now() - waveStart);
        if (wait > 0) await sleep(wait);
        const suffix = wave.label ? ` (${wave.label})` : "";
        for (let i = 0; i < wave.mcp; i++) {
          const client = clients[next++]!;
          pending.push(
            record(() =>
              client.call(tools.sleepS, { Seconds: phase.seconds }, { timeoutMs: 60_000 })
            ).then((r) => ({
              key: `MCP tools/call${suffix}|${
                r.ok ? "ok" : `isError: ${(r.error ?? "").slice(0, 70)}`
              }`,
              ms: r.ms,
            })),
          );
        }
        for (let i = 0; i < wave.call; i++) {
          pending.push(
            callHttp().then((r) => ({ key: `POST /call${suffix}|${r.outcome}`, ms: r.ms })),
          );
        }
      }
      const results = await Promise.all(pending);
      await sleep(200);
      const samples = await health.stop();
      await closeAll(clients);
      const groups = new Map<string, number[]>();
      for (const r of results) groups.set(r.key, [...(groups.get(r.key) ?? []), r.ms]);
      for (const [key, values] of groups) {
        const [channel, outcome] = key.split("|");
        rows.push([phase.name, channel!, outcome!, ...statCells(summarize(values))]);
      }
      const hs = healthSummary(samples);
      rows.push([phase.name, "GET /health", `status ${hs.codes}`, ...statCells(hs.summary)]);
      raw[`phase ${phase.name}`] = { results, health: hs };
    } finally {
      await b.stopHttp(proc);
    }
  }
  b.add({
    id: "F3",
    title: `exhaustion (2 × MaxPoolSize concurrent sleepers; latency ms)`,
    columns: ["phase", "channel", "outcome", ...STATS],
    rows,
    notes,
  }, raw);
}

// ---------------------------------------------------------------- F4 soak (opt-in)

async function f4(b: Bench): Promise<void> {
  const minutes = b.options.minutes;
  const every = b.options.sampleSeconds * 1000;
  const proc = await b.startSvc(b.svcOptions({}, {}, { cacheDir: await b.svcCache() }));
  const rows: (string | number)[][] = [];
  const samples: Record<string, number>[] = [];
  const counts = { discover: 0, initialize: 0, list: 0, call: 0, errors: 0 };
  const errorKinds = new Map<string, number>();
  const fail = (what: string) => {
    counts.errors++;
    errorKinds.set(what, (errorKinds.get(what) ?? 0) + 1);
  };
  try {
    const url = `${proc.base}/mcp`;
    const clients = await Promise.all(
      Array.from({ length: 4 }, () => connectHttp(url, "2026-07-28", proc.pid)),
    );
    const tools = await toolsOf(b, clients[0]!);
    const started = performance.now();
    const end = started + minutes * 60_000;
    let running = true;
    const loops = clients.map(async (client) => {
      let n = 0;
      while (running && performance.now() < end) {
        await sleep(50 + Math.random() * 150);
        const roll = Math.random();
        try {
          if (roll < 0.1) {
            const era = n++ % 2 === 0 ? "2026-07-28" : "2025-11-25";
            const fresh = await connectHttp(url, era);
            await fresh.close();
            if (era === "2026-07-28") counts.discover++;
            else counts.initialize++;
          } else if (roll < 0.6) {
            await client.listTools();
            counts.list++;
          } else {
            const result = await client.call(tools.date, {});
            counts.call++;
            if (result.isError) fail(`isError: ${resultText(result).slice(0, 60)}`);
          }
        } catch (error) {
          fail(String(error).slice(0, 80));
        }
      }
    });
    const sample = async () => {
      const tree = treeMemory(proc.pid);
      const workers = tree.children.filter((c) => isWorkerCommand(c.args));
      const pool = (await healthOnce(`${proc.base}/health`)).pool;
      const s = {
        minute: (performance.now() - started) / 60_000,
        serverRssMb: tree.server / (1024 * 1024),
        workersRssMb: (tree.total - tree.server) / (1024 * 1024),
        workers: workers.length,
        serverFds: fdsOf(proc.pid),
        workerFds: workers.reduce((s, w) => s + (fdsOf(w.pid) || 0), 0),
        serverThreads: threadsOf(proc.pid),
        workerThreads: workers.reduce((s, w) => s + (threadsOf(w.pid) || 0), 0),
        poolTotal: pool?.total ?? Number.NaN,
        poolWarm: pool?.warm ?? Number.NaN,
        calls: counts.call + counts.list + counts.discover + counts.initialize,
        errors: counts.errors,
      };
      samples.push(s);
      b.tracker.addTree(proc.pid);
      say(
        `F4 t=${s.minute.toFixed(1)} min: server ${
          s.serverRssMb.toFixed(1)
        } MB, ${s.workers} workers ${
          s.workersRssMb.toFixed(1)
        } MB, fds ${s.serverFds}+${s.workerFds}, threads ${s.serverThreads}+${s.workerThreads}, ops ${s.calls}, errors ${s.errors}`,
      );
    };
    await sample();
    while (performance.now() < end) {
      await sleep(Math.min(every, Math.max(0, end - performance.now())));
      await sample();
    }
    running = false;
    await Promise.all(loops);
    await closeAll(clients);
  } finally {
    await b.stopHttp(proc);
  }
  for (const s of samples) {
    rows.push([
      s.minute!.toFixed(1),
      s.serverRssMb!.toFixed(1),
      s.workers!,
      s.workersRssMb!.toFixed(1),
      `${s.serverFds} / ${s.workerFds}`,
      `${s.serverThreads} / ${s.workerThreads}`,
      `${s.poolTotal} / ${s.poolWarm}`,
      s.calls!,
      s.errors!,
    ]);
  }
  const keys = [
    "serverRssMb",
    "workersRssMb",
    "workers",
    "serverFds",
    "workerFds",
    "serverThreads",
    "workerThreads",
    "errors",
  ];
  const slopesOver = (from: number) =>
    Object.fromEntries(keys.map((key) => [
      key,
      slope(samples.filter((s) => s.minute! >= from).map((s) => [s.minute!, s[key]!] as const)),
    ]));
  const slopes = slopesOver(0);
  const steady = slopesOver(1);
  const show = (values: Record<string, number>) =>
    Object.entries(values).map(([k, v]) => `${k} ${Number.isFinite(v) ? v.toFixed(2) : "–"}`)
      .join(", ");
  b.add({
    id: "F4",
    title:
      `soak, ${minutes} min (4 clients, 50–200 ms think time; 10 % discover/initialize, 50 % tools/list, 40 % tools/call)`,
    columns: [
      "minute",
      "server RSS MB",
      "workers",
      "workers RSS MB",
      "fds server / workers",
      "threads server / workers",
      "pool total / warm",
      "ops",
      "errors",
    ],
    rows,
    notes: [
      `Slopes per minute, whole run: ${show(slopes)}.`,
      `Slopes per minute from minute 1 on (after V8 and pool warm-up; needs ≥ 2 samples there): ${
        show(steady)
      }.`,
      `Operations: ${counts.discover} discover, ${counts.initialize} initialize, ${counts.list} tools/list, ${counts.call} tools/call; ${counts.errors} errors${
        errorKinds.size > 0 ? ` (${[...errorKinds].map(([k, v]) => `${k}: ${v}`).join("; ")})` : ""
      }.`,
      `A sample every ${b.options.sampleSeconds} s (--sample-seconds).`,
    ],
  }, { samples, slopes, steady, counts });
}

// ---------------------------------------------------------------- main

await main(
  "faults",
  async (b) => {
    if (!b.options.targets.every((t) => t.kind === "svc")) {
      say(
        "faults.ts needs svc's process tree (to kill workers and count orphans): only --target svc is supported; other targets are ignored.",
      );
    }
    if (b.wants("F1")) await f1(b);
    if (b.wants("F2")) await f2(b);
    if (b.wants("F3")) await f3(b);
    if (b.options.minutes > 0 && b.wants("F4")) await f4(b);
    else say("\nF4 soak: opt-in, run with --minutes N.");
  },
  (o) => 20 + o.minutes * 1.5,
  { alwaysSvc: true },
);
