/**
 * Performance scenarios P1–P7 (P1–P6 of issue 7: cold start, floors, warm latency against the SDK floor,
 * the throughput curve, payload sizes and memory; P7 of issue 30: per-principal isolation). Run with `deno task bench` (quick counts; `--full`
 * for the issue's counts); see bench/README.md. Results: markdown tables on stdout, plus
 * `bench/results/perf-<time>.md` and `.json`.
 *
 * @module
 */
import {
  type Bench,
  type CallRecord,
  closeAll,
  closedLoop,
  connectMany,
  healthOnce,
  main,
  probeHealth,
  record,
  sequential,
} from "./lib/common.ts";
import { ms, summarize, type Summary } from "./lib/stats.ts";
import { sleep } from "./lib/proc.ts";
import {
  connectHttp,
  connectStdio,
  floorStdioCommand,
  type McpClient,
  REPO_ROOT,
} from "./lib/targets.ts";
import { RunspaceWorker } from "../lib/worker.ts";
import { counts, sleepCeiling, statCells, STATS } from "./lib/scenario.ts";
import { p1 } from "./lib/cold_start.ts";
import { p6 } from "./lib/memory.ts";
import { p7 } from "./lib/isolation.ts";

/**
 * Keeps calling for `seconds` (P3's `--warmup-seconds`, after its 50 warm-up calls): .NET and V8
 * keep tiering up hot code for a while, and issue 30 compares servers after 30 s of calls.
 */
async function warmFor(seconds: number, call: () => Promise<unknown>): Promise<void> {
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) await call().catch(() => {});
}

// ---------------------------------------------------------------- P2 floors and the SDK floor

const floorRuns = new Map<string, { summary: Summary; errors: number }>();

/** Sequential get_date calls on the floor's endpoints (run once; P2 and P3 both show them). */
async function measureFloor(b: Bench): Promise<void> {
  if (floorRuns.size > 0 || !b.options.floor) return;
  const { p3, warmup } = counts(b);
  for (const endpoint of await b.endpoints({ kind: "floor", label: "floor" })) {
    const client = await endpoint.connect();
    try {
      const tool = (await b.tool(client, "date"))!;
      await warmFor(b.options.warmupSeconds, () => client.call(tool, {}));
      const run = await sequential(p3, warmup, () => client.call(tool, {}));
      floorRuns.set(`${endpoint.transport} ${endpoint.era}`, run);
    } finally {
      await client.close();
    }
  }
}

async function p2(b: Bench): Promise<void> {
  const { p2: n, warmup, pwsh: pwshN } = counts(b);
  const rows: (string | number)[][] = [];
  const raw: Record<string, Summary> = {};
  const notes: string[] = [];
  const add = (what: string, s: Summary, note = "") => {
    raw[what] = s;
    rows.push([what, ...statCells(s), note]);
  };
  const fetchText = async (url: string) => {
    const response = await fetch(url);
    await response.text();
    return { isError: !response.ok };
  };
  if (b.options.floor) {
    const floor = await b.sharedFloor();
    const loop = await sequential(n, warmup, () => fetchText(`${floor.base}/raw`));
    add("loopback HTTP GET (bare Deno.serve)", loop.summary, "floor process, /raw");
  }
  const svcTarget = b.options.targets.some((t) => t.kind === "svc");
  if (svcTarget && b.options.transports.includes("http")) {
    const svc = await b.sharedSvc();
    const health = await sequential(n, warmup, () => fetchText(`${svc.base}/health`));
    add("svc GET /health", health.summary, "HTTP stack without MCP or a worker");
    const probe = await connectHttp(`${svc.base}/mcp`, "2026-07-28");
    const tool = await b.tool(probe, "date");
    await probe.close();
    const call = await sequential(n, warmup, async () => {
      const response = await fetch(`${svc.base}/call`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ tool, arguments: {} }),
      });
      await response.text();
      return { isError: !response.ok };
    });
    if (call.errors === 0) add("svc POST /call Get-Date", call.summary, "a worker, no MCP");
  }
  if (svcTarget) {
    const pwsh = b.options.worker!.path;
    // The control channel svc uses (lib/worker.ts RunspaceWorker): invoke and reset round trips, no HTTP/MCP.
    const worker = await RunspaceWorker.start({
      pwsh,
      stopTimeoutMs: 2_000,
      label: "bench",
    });
    b.tracker.add(worker.pid);
    try {
      await worker.startup({
        modules: [`${b.options.svcRoot}tests/fixtures/SvcFixture/SvcFixture.psd1`],
        scriptPath: null,
        script: null,
      }, 60_000);
      const invoke = (command: string) => async () => {
        const outcome = await worker.invoke({
          command,
          parameters: {},
          credentials: [],
          depth: 4,
        });
        return { isError: outcome.result.hadErrors };
      };
      const inv = await sequential(n, warmup, invoke("Get-Date"));
      add("worker control channel: invoke Get-Date", inv.summary, "lib/worker.ts RunspaceWorker");
      const reset = await sequential(n, warmup, async () => {
        await worker.reset();
        return {};
      });
      add("worker control channel: reset", reset.summary, "runs after each HTTP call");
      const noop = await sequential(n, warmup, invoke("Out-Null"));
      add("no-op call (Out-Null) in a warm pwsh worker", noop.summary);
    } finally {
      await worker.close();
    }
    const starts: number[] = [];
    for (let i = 0; i < pwshN; i++) {
      const started = performance.now();
      await new Deno.Command(pwsh, {
        args: ["-NoProfile", "-Command", "exit"],
        stdout: "null",
        stderr: "null",
      }).output();
      starts.push(performance.now() - started);
    }
    add("pwsh -NoProfile -Command exit", summarize(starts), "process start to exit");
  }
  await measureFloor(b);
  for (const [label, run] of floorRuns) {
    add(`SDK floor tools/call (${label})`, run.summary, "bench/floor_server.ts");
  }
  b.add({
    id: "P2",
    title: "floors (sequential, ms)",
    columns: ["what", ...STATS, "note"],
    rows,
    notes,
  }, raw);
}

// ---------------------------------------------------------------- P3 warm latency

async function p3(b: Bench): Promise<void> {
  const { p3: n, warmup } = counts(b);
  await measureFloor(b);
  const rows: (string | number)[][] = [];
  const raw: Record<string, unknown> = {};
  const notes: string[] = [
    `${warmup} warm-up calls${
      b.options.warmupSeconds > 0 ? ` and ${b.options.warmupSeconds} s of calls` : ""
    }, then ${n} measured sequential \`tools/call\` of Get-Date's default parameter set per row (--warmup-seconds sets the time).`,
    "×floor = svc ÷ SDK floor on the same transport and era. Targets (HTTP): p50 ≤ 1.25×, p99 ≤ 1.5×.",
  ];
  for (const [label, run] of floorRuns) {
    const [transport, era] = label.split(" ");
    rows.push([
      "floor",
      transport!,
      era!,
      "get_date",
      ...statCells(run.summary),
      run.errors,
      "1.00",
      "1.00",
      "",
    ]);
  }
  for (const target of b.options.targets) {
    if (target.kind === "floor") continue;
    for (const endpoint of await b.endpoints(target)) {
      const client = await endpoint.connect();
      try {
        const tool = await b.tool(client, "date");
        if (!tool) {
          notes.push(`${endpoint.label}: no Get-Date tool (use --tool date=<name>).`);
          continue;
        }
        await warmFor(b.options.warmupSeconds, () => client.call(tool, {}));
        const run = await sequential(n, warmup, () => client.call(tool, {}));
        if (endpoint.transport === "http") {
          const ratio = (text: string) => ({
            text,
            rule: { kind: "ratioAtMost" as const, max: 0.75 },
          });
          b.comparison.put(
            {
              label: `warm get_date over HTTP ${endpoint.era}, p50 (ms)`,
              goal: ratio("≤ 0.75× the other"),
            },
            target.label,
            run.summary.median,
          );
          b.comparison.put(
            {
              label: `warm get_date over HTTP ${endpoint.era}, p99 (ms)`,
              goal: ratio("≤ 0.75× the other"),
            },
            target.label,
            run.summary.p99,
          );
        } else {
          b.comparison.put(
            {
              label: "stdio warm get_date p50 (ms)",
              goal: { text: "≤ 0.65 ms", rule: { kind: "atMost", max: 0.65 } },
            },
            target.label,
            run.summary.median,
          );
        }
        raw[endpoint.label] = {
          summary: run.summary,
          errors: run.errors,
          firstError: run.firstError,
        };
        const floor = floorRuns.get(`${endpoint.transport} ${endpoint.era}`);
        const r50 = floor ? run.summary.median / floor.summary.median : Number.NaN;
        const r99 = floor ? run.summary.p99 / floor.summary.p99 : Number.NaN;
        const verdict = !floor || endpoint.transport !== "http"
          ? ""
          : r50 <= 1.25 && r99 <= 1.5
          ? "meets"
          : `misses (${r50 > 1.25 ? "p50" : ""}${r50 > 1.25 && r99 > 1.5 ? ", " : ""}${
            r99 > 1.5 ? "p99" : ""
          })`;
        rows.push([
          target.label,
          endpoint.transport,
          endpoint.era,
          tool,
          ...statCells(run.summary),
          run.errors,
          Number.isFinite(r50) ? r50.toFixed(2) : "–",
          Number.isFinite(r99) ? r99.toFixed(2) : "–",
          verdict,
        ]);
        if (run.firstError) notes.push(`${endpoint.label}: first error: ${run.firstError}`);
      } finally {
        await client.close();
      }
    }
  }
  b.add({
    id: "P3",
    title: "warm latency, sequential get_date (ms)",
    columns: [
      "target",
      "transport",
      "era",
      "tool",
      ...STATS,
      "errors",
      "×floor p50",
      "×floor p99",
      "target",
    ],
    rows,
    notes,
  }, raw);
  if (b.options.targets.some((t) => t.kind === "svc")) await p3ResetOffPath(b);
}

/** How a call's reset looked from `/health` between the answer and the worker's return. */
interface ResetSighting {
  /** A sample between the answer and the worker's return showed a worker resetting. */
  seen: boolean;
  /** ms from the answer until `/health` showed no worker leased or resetting (null: not in 10 s). */
  backMs: number | null;
}

/** Polls `/health` from the moment a call answered until its worker is back. */
async function watchReset(health: string): Promise<ResetSighting> {
  const answered = performance.now();
  let seen = false;
  while (performance.now() - answered < 10_000) {
    const pool = (await healthOnce(health)).pool;
    if (pool && pool.resetting > 0) seen = true;
    else if (pool && pool.leased === 0) return { seen, backMs: performance.now() - answered };
    await sleep(5);
  }
  return { seen, backMs: null };
}

/**
 * Reset stays off the response path: a call whose reset takes 100 ms must answer as fast as one
 * whose reset is quick. Every call is Import-SlowRemoveModule (bench/fixtures/SlowReset), which
 * leaves a module whose removal by the reset takes the given time; the two delays alternate, and
 * each call waits until `/health` shows the previous call's worker back.
 */
async function p3ResetOffPath(b: Bench): Promise<void> {
  if (!b.options.transports.includes("http")) return;
  const n = b.options.full ? 60 : 20;
  const delays = [0, 100] as const;
  const root = b.options.svcRoot;
  const proc = await b.startSvc(b.svcOptions({
    Modules: [
      `${root}tests/fixtures/SvcFixture/SvcFixture.psd1`,
      `${REPO_ROOT}bench/fixtures/SlowReset/SlowReset.psm1`,
    ],
  }));
  const client = await connectHttp(`${proc.base}/mcp`, "2026-07-28");
  const health = `${proc.base}/health`;
  const rows: (string | number)[][] = [];
  const raw: Record<string, { summary: Summary; workerBack: Summary }> = {};
  const notes: string[] = [
    "Sequential calls of Import-SlowRemoveModule (bench/fixtures/SlowReset), alternating 0 and 100 ms: the reset after each call removes the module it imported, and its OnRemove sleeps that long. Each call starts once `/health` shows the previous call's worker back.",
  ];
  try {
    const tool = await b.tool(client, "slowReset");
    if (!tool) throw new Error("svc offers no Import-SlowRemoveModule tool");
    const records = new Map<number, CallRecord[]>(delays.map((d) => [d, []]));
    const sightings = new Map<number, ResetSighting[]>(delays.map((d) => [d, []]));
    for (let i = 0; i < 2 * (n + 5); i++) {
      const delay = delays[i % 2]!;
      const r = await record(() => client.call(tool, { Milliseconds: delay }));
      const sighting = await watchReset(health);
      if (i < 10) continue; // five warm-up calls of each
      records.get(delay)!.push(r);
      sightings.get(delay)!.push(sighting);
    }
    for (const delay of delays) {
      const ok = records.get(delay)!.filter((r) => r.ok);
      const seen = sightings.get(delay)!;
      const s = summarize(ok.map((r) => r.ms));
      const back = summarize(seen.flatMap((x) => x.backMs === null ? [] : [x.backMs]));
      raw[`reset ${delay} ms`] = { summary: s, workerBack: back };
      rows.push([
        `${delay} ms`,
        ...statCells(s),
        records.get(delay)!.length - ok.length,
        `${seen.filter((x) => x.seen).length}/${seen.length}`,
        ms(back.median),
      ]);
      const firstError = records.get(delay)!.find((r) => !r.ok)?.error;
      if (firstError) notes.push(`${delay} ms: first error: ${firstError}`);
    }
    // From one answer to the worker's return: the whole reset when it is off the response path,
    // what is left of it when it is on. Either way the 100 ms row's cycle is ~100 ms longer.
    const [fast, slow] = [raw["reset 0 ms"]!, raw["reset 100 ms"]!];
    const difference = slow.summary.median - fast.summary.median;
    const cycles = slow.summary.median + slow.workerBack.median -
      (fast.summary.median + fast.workerBack.median);
    notes.push(
      cycles < 80
        ? `The 100 ms resets did not make a call and its reset ~100 ms longer (${
          ms(cycles)
        } ms): this run says nothing about the response path.`
        : `If the reset were on the response path, the 100 ms row would be ~100 ms slower; difference of medians: ${
          ms(difference)
        } ms (${
          difference < 20 ? "reset is off the path" : "reset is ON the path"
        }), while call plus reset took ${ms(cycles)} ms longer.`,
    );
  } finally {
    await client.close();
    await b.stopHttp(proc);
  }
  b.add({
    id: "P3",
    title: "reset off the response path (svc http 2026-07-28, a module whose removal is slow)",
    columns: ["reset delay", ...STATS, "errors", "resetting after answer", "worker back, median"],
    rows,
    notes,
  }, raw);
}

// ---------------------------------------------------------------- P4 throughput curve

async function p4(b: Bench): Promise<void> {
  const { p4Seconds, p4Warmup } = counts(b);
  const rows: { order: number[]; cells: (string | number)[] }[] = [];
  const raw: Record<string, unknown> = {};
  const notes: string[] = [
    `Closed loop: c clients (SDK v2, HTTP 2026-07-28), each calling back to back for ${p4Seconds} s after ${p4Warmup} s unmeasured warm-up. Latency columns are of successful calls. /health is probed every 50 ms meanwhile (svc).`,
    "The targets take turns level by level (every target's c = 1, then every target's c = 4, ...), so that load on a shared machine falls on all of them alike.",
    `Start-Sleep 50 ms: the ceiling is c × 1000/50 capped by a pool of 16 (svc's and PoshMcp's default MaxPoolSize), ${
      sleepCeiling(16)
    } calls/s from c = 16 on; issue 30's goal for svc: keep ≥ 95 % of it, with no errors, and /health p99 < 10 ms at c = 64.`,
    "The load generator runs on the same machine (2 cores here) as the server and its workers.",
  ];
  const targets = b.options.targets.filter((t) => t.kind !== "stdio");
  if (b.options.floor && !targets.some((t) => t.kind === "floor")) {
    targets.push({ kind: "floor", label: "floor" });
  }
  if (!b.options.transports.includes("http")) {
    notes.push("skipped for svc and the floor: --transport stdio given.");
  }
  const cases = [
    { label: "Start-Sleep 50 ms", role: "sleepMs", args: { Milliseconds: 50 } },
    { label: "get_date", role: "date", args: {} },
  ] as const;
  const prepared = [];
  for (const target of targets) {
    const own = target.kind === "url" || target.kind === "command";
    if (!b.options.transports.includes("http") && !own) continue;
    const endpoint = (await b.endpoints(target, ["2026-07-28"], [])).find((e) =>
      e.transport === "http"
    );
    if (!endpoint) continue;
    const probe = await endpoint.connect();
    const tools = await probe.listTools();
    await probe.close();
    const roles = new Map<string, string>();
    for (const c of cases) {
      const tool = await b.tool(probe, c.role, tools);
      if (tool) roles.set(c.role, tool);
      else if (target.kind !== "floor") {
        notes.push(`${target.label}: no tool for ${c.label}; skipped.`);
      }
    }
    prepared.push({ target, endpoint, roles });
  }
  for (const [ci, c] of cases.entries()) {
    for (const [li, level] of b.options.levels.entries()) {
      for (const [ti, { target, endpoint, roles }] of prepared.entries()) {
        const tool = roles.get(c.role);
        if (!tool) continue;
        const clients = await connectMany(endpoint, level);
        const health = endpoint.health
          ? await probeHealth(endpoint.health, 50, 10 * 60_000, b.tracker)
          : null;
        let loop;
        try {
          loop = await closedLoop({
            workers: level,
            call: (i) => clients[i]!.call(tool, c.args),
            durationMs: p4Seconds * 1000,
            warmupMs: p4Warmup * 1000,
          });
        } finally {
          await health?.stop();
          await closeAll(clients);
        }
        const hs = health
          ? summarize(health.samples.filter((s) => s.status > 0).map((s) => s.ms))
          : null;
        const lastPool = health?.samples.findLast((s) => s.pool)?.pool;
        const key = `${target.label} ${c.label} c=${level}`;
        raw[key] = {
          throughput: loop.throughput,
          summary: loop.summary,
          errors: loop.errors,
          errorKinds: loop.errorKinds,
          health: hs,
          pool: lastPool,
        };
        const ceiling = c.role === "sleepMs" ? sleepCeiling(level) : null;
        const verdicts: string[] = [];
        if (target.kind === "svc" && ceiling !== null && level >= 16) {
          const ok = loop.throughput >= 0.95 * ceiling && loop.errors === 0;
          verdicts.push(ok ? "meets" : "misses");
        }
        if (target.kind === "svc" && level === 64) {
          verdicts.push(hs && hs.p99 < 10 ? "health ok" : "health slow");
        }
        rows.push({
          order: [ti, ci, li],
          cells: [
            target.label,
            c.label,
            level,
            loop.throughput.toFixed(1),
            ceiling === null ? "" : `${(100 * loop.throughput / ceiling).toFixed(0)} %`,
            ...statCells(loop.summary),
            loop.errors,
            hs ? ms(hs.p99) : "–",
            lastPool ? `${lastPool.total}` : "–",
            verdicts.join("; "),
          ],
        });
        if (target.kind !== "floor") {
          if (ceiling === null) {
            b.comparison.put(
              {
                label: `get_date calls/s at c = ${level}`,
                goal: {
                  text: "≥ 1.3× the other",
                  rule: { kind: "ratioAtLeast", min: 1.3 },
                },
              },
              target.label,
              loop.throughput,
            );
          } else if (level >= 16) {
            b.comparison.put(
              {
                label: `Start-Sleep 50 ms calls/s at c = ${level}`,
                goal: {
                  text: `≥ 95 % of ${ceiling}`,
                  rule: { kind: "atLeast", min: 0.95 * ceiling },
                },
              },
              target.label,
              loop.throughput,
            );
          }
        }
        if (loop.errors > 0) {
          const top = Object.entries(loop.errorKinds).sort((x, y) => y[1] - x[1])[0]!;
          notes.push(`${key}: ${loop.errors} errors, most often: ${top[0]} (${top[1]}×)`);
        }
        await sleep(500);
      }
    }
  }
  const byOrder = (x: number[], y: number[]) => x[0]! - y[0]! || x[1]! - y[1]! || x[2]! - y[2]!;
  b.add({
    id: "P4",
    title: "throughput curve (closed loop, HTTP 2026-07-28)",
    columns: [
      "target",
      "tool",
      "c",
      "calls/s",
      "of ceiling",
      ...STATS,
      "errors",
      "/health p99",
      "workers",
      "goal",
    ],
    rows: rows.sort((x, y) => byOrder(x.order, y.order)).map((r) => r.cells),
    notes,
  }, raw);
}

// ---------------------------------------------------------------- P5 payload

function objects(count: number, properties: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => {
    const o: Record<string, unknown> = {};
    for (let p = 0; p < properties; p++) {
      o[`Property${p}`] = p % 2 === 0 ? `value-${i}-${p}` : i * p;
    }
    return o;
  });
}

async function p5(b: Bench): Promise<void> {
  const { p5: n } = counts(b);
  const rows: (string | number)[][] = [];
  const raw: Record<string, unknown> = {};
  // A varied 1 MB ASCII string (no escapes), so no engine shortcut for repeated text applies.
  const oneMb = Array.from(
    { length: 1024 * 1024 },
    (_, i) => String.fromCharCode(97 + (i * 7) % 26),
  )
    .join("");
  const encodes: number[] = [];
  for (let i = 0; i < 100; i++) {
    const started = performance.now();
    JSON.stringify([oneMb]);
    encodes.push(performance.now() - started);
  }
  const encode = summarize(encodes);
  const message = {
    jsonrpc: "2.0",
    id: 1,
    result: {
      // Above 64 KiB svc sends the output once, in structuredContent; the text block shows what
      // fits 64 KiB of it (result.ts, docs/results.md).
      content: [{ type: "text", text: JSON.stringify([oneMb.slice(0, 65_000)]) }],
      structuredContent: { output: [oneMb] },
    },
  };
  const rounds: number[] = [];
  for (let i = 0; i < 20; i++) {
    const started = performance.now();
    JSON.parse(JSON.stringify(message));
    rounds.push(performance.now() - started);
  }
  const round = summarize(rounds);
  const notes: string[] = [
    `Strings via Get-FixtureLargeResult -Kilobytes; objects via Write-Output -InputObject (the request carries the same objects, so object rows include sending them). ${n} measured calls per row after 2 warm-up calls.`,
    ...(b.options.targets.some((t) => t.kind === "svc")
      ? [
        "svc runs with MaxResultBytes 4 MiB here so that 1 MB is not cut (the default cap is 24 KiB).",
      ]
      : []),
    `JSON.stringify of a 1 MB string in this process: median ${
      ms(encode.median)
    } ms (the '1 MB ≤ 3× JSON-encoding' target compares the marginal cost of the 1 MB row over the 1 KB row with this); stringify + parse of the whole 1 MB result message as svc shapes it (the output once, in the text block): median ${
      ms(round.median)
    } ms.`,
  ];
  const cases: { label: string; role: "large" | "echo"; args: () => Record<string, unknown> }[] = [
    ...[1, 16, 256, 1024].map((kb) => ({
      label: `string ${kb} KB`,
      role: "large" as const,
      args: () => ({ Kilobytes: kb }),
    })),
    ...([[250, 5], [250, 80], [10_000, 5]] as const).map(([count, props]) => {
      const list = objects(count, props);
      return {
        label: `objects ${count} × ${props}`,
        role: "echo" as const,
        args: () => ({ InputObject: list }),
      };
    }),
  ];
  const measure = async (
    label: string,
    client: McpClient,
    quiet = false,
    compared?: { target: string; transport: string },
  ) => {
    const tools = await client.listTools();
    const medians: Record<string, number> = {};
    const skipped: string[] = [];
    for (const c of cases) {
      const tool = await b.tool(client, c.role, tools);
      if (!tool) {
        skipped.push(c.label);
        continue;
      }
      const args = c.args();
      let size = 0;
      let truncated = false;
      const run = await sequential(n, 2, async () => {
        const result = await client.call(tool, args);
        if (size === 0) {
          size = JSON.stringify(result).length;
          truncated = result.structuredContent?.truncated !== undefined;
        }
        return result;
      });
      medians[c.label] = run.summary.median;
      if (compared && c.label === "string 1024 KB") {
        const keep = { text: "keep", rule: { kind: "keep" as const, lowerIsBetter: true } };
        b.comparison.put(
          { label: `1 MB string result over ${compared.transport}: KB on the wire`, goal: keep },
          compared.target,
          size / 1024,
        );
        b.comparison.put(
          { label: `1 MB string result over ${compared.transport}: p50 (ms)`, goal: keep },
          compared.target,
          run.summary.median,
        );
      }
      raw[`${label} ${c.label}`] = {
        summary: run.summary,
        bytes: size,
        errors: run.errors,
      };
      rows.push([
        label,
        c.label,
        (size / 1024).toFixed(0),
        ...statCells(run.summary),
        run.errors,
        truncated ? "cut by MaxResultBytes" : run.firstError ?? "",
      ]);
    }
    if (skipped.length > 0 && !quiet) {
      notes.push(`${label}: no tool for ${skipped.join(", ")} (see --tool); skipped.`);
    }
    const big = medians["string 1024 KB"];
    const small = medians["string 1 KB"];
    if (big !== undefined && small !== undefined) {
      const ratio = (big - small) / encode.median;
      notes.push(
        `${label}: 1 MB costs ${ms(big - small)} ms more than 1 KB = ${
          ratio.toFixed(0)
        }× JSON-encoding 1 MB (target ≤ 3×: ${ratio <= 3 ? "meets" : "misses"}); ${
          ((big - small) / round.median).toFixed(1)
        }× one stringify + parse of the whole result message.`,
      );
    }
  };
  for (const target of b.options.targets) {
    if (target.kind === "floor") continue;
    for (const endpoint of await b.endpoints(target, ["2026-07-28"], ["2025-11-25"])) {
      const client = await endpoint.connect();
      try {
        await measure(endpoint.label, client, false, {
          target: target.label,
          transport: endpoint.transport,
        });
      } finally {
        await client.close();
      }
    }
  }
  if (b.options.floor) {
    // The floor with its payload tool: strings only (it has no Write-Output).
    if (b.options.transports.includes("http")) {
      const proc = await b.startFloor(true);
      const client = await connectHttp(`${proc.base}/mcp`, "2026-07-28");
      try {
        await measure("floor http 2026-07-28", client, true);
      } finally {
        await client.close();
        await b.stopHttp(proc);
      }
    }
    if (b.options.transports.includes("stdio")) {
      const client = await connectStdio(floorStdioCommand(true), "2025-11-25", b.tracker);
      try {
        await measure("floor stdio 2025-11-25", client, true);
      } finally {
        await client.close();
      }
    }
  }
  b.add({
    id: "P5",
    title: "payload size (sequential, ms)",
    columns: ["endpoint", "payload", "response KB", ...STATS, "errors", "note"],
    rows,
    notes,
  }, { ...raw, encode1MB: encode, roundTripResultMessage1MB: round });
}

// ---------------------------------------------------------------- main

await main("perf", async (b) => {
  if (b.wants("P1")) await p1(b);
  if (b.wants("P2")) await p2(b);
  if (b.wants("P3")) await p3(b);
  if (b.wants("P5")) await p5(b);
  if (b.wants("P4")) await p4(b);
  if (b.wants("P6")) await p6(b);
  if (b.wants("P7")) await p7(b);
  const summary = b.comparison.table();
  if (summary) b.add(summary);
}, (o) => (o.full ? 90 : 20));
