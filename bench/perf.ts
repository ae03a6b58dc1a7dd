/**
 * Performance scenarios P1–P6 of issue 7: cold start, floors, warm latency against the SDK floor,
 * the throughput curve, payload sizes and memory. Run with `deno task bench` (quick counts; `--full`
 * for the counts); see bench/README.md. Results: markdown tables on stdout, plus
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
import { mb, ms, summarize, type Summary } from "./lib/stats.ts";
import { descendants, processTable, rssOf, sleep, treeMemory, waitFor } from "./lib/proc.ts";
import {
  connectHttp,
  connectStdio,
  floorStdioCommand,
  type McpClient,
  REPO_ROOT,
  svcStdioCommand,
  tempDir,
} from "./lib/targets.ts";
import { RunspaceWorker } from "../lib/worker.ts";

/** Iteration counts: quick by default, the with --full. */
function counts(b: Bench) {
  const { full, iterations, seconds } = b.options;
  return {
    p1: full ? 10 : 5,
    p2: iterations ?? (full ? 1000 : 300),
    p3: iterations ?? (full ? 1000 : 300),
    warmup: 50,
    p4Seconds: seconds ?? (full ? 30 : 5),
    p4Warmup: full ? 3 : 1,
    p5: full ? 100 : 20,
    pwsh: full ? 10 : 5,
  };
}

const STATS = ["N", "median", "p95", "p99", "mean"];

function statCells(s: Summary): (string | number)[] {
  return [s.n, ms(s.median), ms(s.p95), ms(s.p99), ms(s.mean)];
}

const STARTUP_SCRIPT = "Set-Variable -Name benchStartup -Value 'yes'\nGet-FixtureGreeting World";

// ---------------------------------------------------------------- P1 cold start

async function p1(b: Bench): Promise<void> {
  const n = counts(b).p1;
  const rows: (string | number)[][] = [];
  const raw: Record<string, Summary> = {};
  const notes: string[] = [
    "HTTP: spawn → 'listening' log line → `/health/ready` 200 (polled every 5 ms) → a new client's first `tools/list` answer (connect included). stdio: spawn → `initialize` answered → first `tools/list` answered (2025-11-25 client: no probe process).",
    "Every row is measured from the spawn of the server process (Deno start and module load included).",
  ];
  const add = (target: string, transport: string, variant: string, metric: string, v: number[]) => {
    const s = summarize(v);
    raw[`${target} ${transport} ${variant} ${metric}`] = s;
    rows.push([target, transport, variant, metric, ...statCells(s)]);
  };

  for (const target of b.options.targets) {
    if (target.kind === "svc") {
      const variants = [
        { name: "cold cache", shell: {}, warm: false },
        {
          name: "cold cache + startup script",
          shell: { Environment: { StartupScript: STARTUP_SCRIPT } },
          warm: false,
        },
        { name: "warm cache", shell: {}, warm: true },
      ];
      for (const variant of variants) {
        const primed = variant.warm ? await tempDir("svc-bench-p1-") : null;
        if (primed) {
          // One unmeasured start writes the catalog cache.
          const proc = await b.startSvc(b.svcOptions(variant.shell, {}, { cacheDir: primed }));
          const client = await connectHttp(`${proc.base}/mcp`, "2025-11-25");
          await client.listTools();
          await client.close();
          await b.stopHttp(proc);
        }
        if (b.options.transports.includes("http")) {
          const listen: number[] = [];
          const ready: number[] = [];
          const list: number[] = [];
          for (let i = 0; i < n; i++) {
            const cacheDir = primed ?? `${await tempDir("svc-bench-p1-")}/cache`;
            const proc = await b.startSvc(b.svcOptions(variant.shell, {}, { cacheDir }));
            listen.push(proc.listenMs);
            const ok = await waitFor(
              async () => (await healthOnce(`${proc.base}/health/ready`)).status === 200,
              30_000,
              5,
            );
            if (ok) ready.push(performance.now() - proc.spawnedAt);
            const client = await connectHttp(`${proc.base}/mcp`, "2026-07-28");
            await client.listTools();
            list.push(performance.now() - proc.spawnedAt);
            await client.close();
            await b.stopHttp(proc);
          }
          add("svc", "http", variant.name, "listening", listen);
          add("svc", "http", variant.name, "/health/ready 200", ready);
          add("svc", "http", variant.name, "first tools/list", list);
        }
        if (b.options.transports.includes("stdio")) {
          const init: number[] = [];
          const list: number[] = [];
          for (let i = 0; i < n; i++) {
            const cacheDir = primed ?? `${await tempDir("svc-bench-p1-")}/cache`;
            const cmd = await svcStdioCommand(b.svcOptions(variant.shell, {}, { cacheDir }));
            const started = performance.now();
            const client = await connectStdio(cmd, "2025-11-25", b.tracker);
            init.push(performance.now() - started);
            await client.listTools();
            list.push(performance.now() - started);
            await client.close();
          }
          add("svc", "stdio", variant.name, "initialize", init);
          add("svc", "stdio", variant.name, "first tools/list", list);
        }
      }
    } else if (target.kind === "floor") {
      // The floor is measured below (also as the reference when svc is the target).
    } else if (target.kind === "stdio") {
      const init: number[] = [];
      const list: number[] = [];
      for (let i = 0; i < n; i++) {
        const started = performance.now();
        const client = await connectStdio(
          { command: target.argv[0]!, args: target.argv.slice(1) },
          "2025-11-25",
          b.tracker,
        );
        init.push(performance.now() - started);
        await client.listTools();
        list.push(performance.now() - started);
        await client.close();
      }
      add(target.label, "stdio", "-", "initialize", init);
      add(target.label, "stdio", "-", "first tools/list", list);
    } else {
      notes.push(`${target.label}: skipped (the harness cannot start an --url server).`);
    }
  }
  if (b.options.floor || b.options.targets.some((t) => t.kind === "floor")) {
    if (b.options.transports.includes("http")) {
      const listen: number[] = [];
      const list: number[] = [];
      for (let i = 0; i < n; i++) {
        const proc = await b.startFloor();
        listen.push(proc.listenMs);
        const client = await connectHttp(`${proc.base}/mcp`, "2026-07-28");
        await client.listTools();
        list.push(performance.now() - proc.spawnedAt);
        await client.close();
        await b.stopHttp(proc);
      }
      add("floor", "http", "-", "listening", listen);
      add("floor", "http", "-", "first tools/list", list);
    }
    if (b.options.transports.includes("stdio")) {
      const init: number[] = [];
      const list: number[] = [];
      for (let i = 0; i < n; i++) {
        const started = performance.now();
        const client = await connectStdio(floorStdioCommand(), "2025-11-25", b.tracker);
        init.push(performance.now() - started);
        await client.listTools();
        list.push(performance.now() - started);
        await client.close();
      }
      add("floor", "stdio", "-", "initialize", init);
      add("floor", "stdio", "-", "first tools/list", list);
    }
  }
  b.add({
    id: "P1",
    title: "cold start (ms from spawn)",
    columns: ["target", "transport", "variant", "until", ...STATS],
    rows,
    notes,
  }, raw);
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
    `${warmup} warm-up + ${n} measured sequential \`tools/call\` of Get-Date's default parameter set per row.`,
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
        const run = await sequential(n, warmup, () => client.call(tool, {}));
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
  const rows: (string | number)[][] = [];
  const raw: Record<string, unknown> = {};
  const notes: string[] = [
    `Closed loop: c clients (SDK v2, HTTP 2026-07-28), each calling back to back for ${p4Seconds} s after ${p4Warmup} s unmeasured warm-up. Latency columns are of successful calls. /health is probed every 50 ms meanwhile.`,
    "svc targets: MaxPoolSize 16 on the 50 ms tool should reach ≥ 80 % of 16 / 0.05 s = 256 calls/s (≥ 205) at c = 64 with no errors; /health p99 < 10 ms at c = 64.",
    "The load generator runs on the same machine (2 cores here) as the server and its workers.",
  ];
  const targets = b.options.targets.filter((t) => t.kind !== "stdio");
  if (b.options.floor && !targets.some((t) => t.kind === "floor")) {
    targets.push({ kind: "floor", label: "floor" });
  }
  if (!b.options.transports.includes("http")) {
    notes.push("skipped: P4 runs over HTTP only (--transport stdio given).");
  }
  for (const target of targets) {
    if (!b.options.transports.includes("http") && target.kind !== "url") continue;
    const endpoint = (await b.endpoints(target, ["2026-07-28"], [])).find((e) =>
      e.transport === "http"
    );
    if (!endpoint) continue;
    const probe = await endpoint.connect();
    const tools = await probe.listTools();
    await probe.close();
    const cases: { label: string; role: "sleepMs" | "date"; args: Record<string, unknown> }[] = [
      { label: "Start-Sleep 50 ms", role: "sleepMs", args: { Milliseconds: 50 } },
      { label: "get_date", role: "date", args: {} },
    ];
    for (const c of cases) {
      const tool = await b.tool(probe, c.role, tools);
      if (!tool) {
        if (target.kind !== "floor") {
          notes.push(`${target.label}: no tool for ${c.label}; skipped.`);
        }
        continue;
      }
      for (const level of b.options.levels) {
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
        let verdict = "";
        if (target.kind === "svc" && level === 64) {
          const h = hs && hs.p99 < 10 ? "health ok" : "health slow";
          verdict = c.role === "sleepMs"
            ? `${loop.throughput >= 204.8 && loop.errors === 0 ? "meets" : "misses"}; ${h}`
            : h;
        }
        rows.push([
          target.label,
          c.label,
          level,
          loop.throughput.toFixed(1),
          ...statCells(loop.summary),
          loop.errors,
          hs ? ms(hs.p99) : "–",
          lastPool ? `${lastPool.total}` : "–",
          verdict,
        ]);
        if (loop.errors > 0) {
          const top = Object.entries(loop.errorKinds).sort((x, y) => y[1] - x[1])[0]!;
          notes.push(`${key}: ${loop.errors} errors, most often: ${top[0]} (${top[1]}×)`);
        }
        await sleep(500);
      }
    }
  }
  b.add({
    id: "P4",
    title: "throughput curve (closed loop, HTTP 2026-07-28)",
    columns: [
      "target",
      "tool",
      "c",
      "calls/s",
      ...STATS,
      "errors",
      "/health p99",
      "workers",
      "target",
    ],
    rows,
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
      // Above 64 KiB svc sends the output once, in the text block (result.ts).
      content: [{ type: "text", text: JSON.stringify([oneMb]) }],
      structuredContent: { outputInText: true },
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
        "svc runs with MaxResultBytes 4 MiB here so that 1 MB is not cut (the default cap is 1 MiB).",
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
  const measure = async (label: string, client: McpClient, quiet = false) => {
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
        await measure(endpoint.label, client);
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

// ---------------------------------------------------------------- P6 memory

interface MemoryRow {
  target: string;
  phase: string;
  server: number;
  workers: number;
  workersRss: number;
  total: number;
}

function sampleMemory(target: string, phase: string, pid: number): MemoryRow {
  const tree = treeMemory(pid);
  return {
    target,
    phase,
    server: tree.server,
    workers: tree.children.filter((c) => c.rss > 0).length,
    workersRss: tree.total - tree.server,
    total: tree.total,
  };
}

/** Workers (runspaces, which may share a process) svc's `/health` counts; null if it says nothing. */
async function healthWorkers(base: string): Promise<number | null> {
  try {
    const text = await (await fetch(`${base}/health`)).text();
    const m = text.match(/(\d+) warm, (\d+) leased, (\d+) creating/);
    return m ? Number(m[1]) + Number(m[2]) + Number(m[3]) : null;
  } catch {
    return null;
  }
}

async function p6(b: Bench): Promise<void> {
  const samples: MemoryRow[] = [];
  const notes: string[] = [
    "RSS = VmRSS of the server plus every descendant (ps -A -o pid=,ppid=), sampled after 1 s of quiet. 3 × 4 concurrent = three rounds of four concurrent 200 ms Start-Sleep calls (the pool grows to ≥ 4 workers).",
  ];
  const tenCalls = async (client: McpClient) => {
    const tool = (await b.tool(client, "date"))!;
    for (let i = 0; i < 10; i++) await client.call(tool, {});
  };
  for (const target of b.options.targets) {
    if (target.kind === "svc") {
      if (b.options.transports.includes("http")) {
        const proc = await b.startSvc(b.svcOptions({}, {}, { cacheDir: await b.svcCache() }));
        const client = await connectHttp(`${proc.base}/mcp`, "2026-07-28");
        try {
          await sleep(1000);
          samples.push(sampleMemory("svc http", "idle", proc.pid));
          await tenCalls(client);
          await sleep(1000);
          const after10 = sampleMemory("svc http", "after 10 calls", proc.pid);
          samples.push(after10);
          const slots10 = await healthWorkers(proc.base);
          const sleepTool = (await b.tool(client, "sleepMs"))!;
          for (let round = 0; round < 3; round++) {
            await Promise.all(
              Array.from(
                { length: 4 },
                () => record(() => client.call(sleepTool, { Milliseconds: 200 })),
              ),
            );
          }
          await sleep(1000);
          const after = sampleMemory("svc http", "after 3 × 4 concurrent", proc.pid);
          samples.push(after);
          const slots = await healthWorkers(proc.base);
          b.tracker.addTree(proc.pid);
          // Workers are runspaces, several to a process: count them as /health does when it can.
          const added = slots !== null && slots10 !== null
            ? slots - slots10
            : after.workers - after10.workers;
          const table = processTable();
          const perWorker = descendants(proc.pid, table)
            .filter((pid) => table.find((r) => r.pid === pid)?.ppid === proc.pid)
            .map((pid) => rssOf(pid) + descendants(pid, table).reduce((s, d) => s + rssOf(d), 0));
          const mean = perWorker.reduce((s, x) => s + x, 0) / Math.max(1, perWorker.length);
          notes.push(
            `svc http: one more worker costs ${
              added > 0 ? mb((after.total - after10.total) / added) : "–"
            } MB (Δ total ÷ ${added} added workers, ${
              slots ?? "?"
            } in ${after.workers} processes); a worker process's own RSS averages ${
              mb(mean)
            } MB over ${perWorker.length} pwsh processes.`,
          );
        } finally {
          await client.close();
          await b.stopHttp(proc);
        }
      }
      if (b.options.transports.includes("stdio")) {
        const client = await connectStdio(await b.svcStdio(), "2025-11-25", b.tracker);
        try {
          await client.listTools();
          await sleep(1000);
          samples.push(sampleMemory("svc stdio", "idle", client.pid!));
          await tenCalls(client);
          await sleep(1000);
          samples.push(sampleMemory("svc stdio", "after 10 calls", client.pid!));
          b.tracker.addTree(client.pid!);
        } finally {
          await client.close();
        }
      }
    } else if (target.kind === "url" && target.pid === null) {
      notes.push(`${target.label}: skipped (give --pid <server pid> to sample its RSS).`);
    } else if (target.kind === "url" || target.kind === "stdio") {
      const endpoint = (await b.endpoints(target, ["2026-07-28"]))[0]!;
      const client = await endpoint.connect();
      try {
        const pid = client.pid!;
        await sleep(1000);
        samples.push(sampleMemory(target.label, "idle", pid));
        await tenCalls(client);
        await sleep(1000);
        samples.push(sampleMemory(target.label, "after 10 calls", pid));
      } finally {
        await client.close();
      }
    }
  }
  if (b.options.floor) {
    if (b.options.transports.includes("http")) {
      const proc = await b.startFloor();
      const client = await connectHttp(`${proc.base}/mcp`, "2026-07-28");
      try {
        await sleep(1000);
        samples.push(sampleMemory("floor http", "idle", proc.pid));
        await tenCalls(client);
        await sleep(1000);
        samples.push(sampleMemory("floor http", "after 10 calls", proc.pid));
      } finally {
        await client.close();
        await b.stopHttp(proc);
      }
    }
    if (b.options.transports.includes("stdio")) {
      const client = await connectStdio(floorStdioCommand(), "2025-11-25", b.tracker);
      try {
        await sleep(1000);
        samples.push(sampleMemory("floor stdio", "idle", client.pid!));
        await tenCalls(client);
        await sleep(1000);
        samples.push(sampleMemory("floor stdio", "after 10 calls", client.pid!));
      } finally {
        await client.close();
      }
    }
  }
  b.add({
    id: "P6",
    title: "memory (RSS, MB)",
    columns: ["target", "phase", "server", "workers", "workers RSS", "total"],
    rows: samples.map((
      s,
    ) => [s.target, s.phase, mb(s.server), s.workers, mb(s.workersRss), mb(s.total)]),
    notes,
  }, samples);
}

// ---------------------------------------------------------------- main

await main("perf", async (b) => {
  if (b.wants("P1")) await p1(b);
  if (b.wants("P2")) await p2(b);
  if (b.wants("P3")) await p3(b);
  if (b.wants("P5")) await p5(b);
  if (b.wants("P4")) await p4(b);
  if (b.wants("P6")) await p6(b);
}, (o) => (o.full ? 90 : 20));
