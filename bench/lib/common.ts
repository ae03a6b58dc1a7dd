/**
 * Shared plumbing of `bench/perf.ts` and `bench/faults.ts`: the command line, the run context (which
 * targets, which worker, the servers started so far, the process tracker), the closed-loop and
 * sequential load drivers, the `/health` prober, and the report (markdown tables on stdout, plus a
 * markdown file and a JSON file in `bench/results/`).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { summarize, type Summary, throughput } from "./stats.ts";
import { ProcessTracker, sleep, waitFor } from "./proc.ts";
import { Comparison } from "./compare.ts";
import {
  benchConfig,
  chooseWorker,
  cleanupTempDirs,
  type CommandProcess,
  connectHttp,
  connectStdio,
  connectWhenListing,
  type Era,
  floorStdioCommand,
  type HttpProcess,
  type McpClient,
  REPO_ROOT,
  resolveTool,
  type RoleName,
  spawnCommand,
  splitCommandLine,
  startFloorHttp,
  startSvcHttp,
  type StdioCommand,
  type SvcOptions,
  svcStdioCommand,
  tempDir,
  type ToolInfo,
  type WorkerChoice,
  WorkerNotFound,
} from "./targets.ts";

/** One target named on the command line. */
export type TargetDef =
  | { kind: "svc"; label: "svc" }
  | { kind: "floor"; label: "floor" }
  | { kind: "url"; label: string; url: string; pid: number | null; health: string | null }
  | { kind: "stdio"; label: string; argv: string[] }
  | { kind: "command"; label: string; argv: string[] };

/** Parsed command line. */
export interface Options {
  /** Targets to measure (the floor is added as a reference where a scenario compares). */
  targets: TargetDef[];
  /** Transports used for `svc` and `floor`. */
  transports: ("http" | "stdio")[];
  /** PowerShell for svc (null when no target is svc: nothing needs it then). */
  worker: WorkerChoice | null;
  /** `--tool role=name` overrides. */
  tools: Record<string, string>;
  /** The issue's iteration counts and durations. */
  full: boolean;
  /** Scenario ids to run (null: all). */
  only: Set<string> | null;
  /** Results directory. */
  out: string;
  /** svc checkout to run. */
  svcRoot: string;
  /** svc log level. */
  logLevel: string;
  /** Measured iterations override. */
  iterations: number | null;
  /** Seconds per throughput level override. */
  seconds: number | null;
  /** Throughput concurrency levels. */
  levels: number[];
  /** Soak minutes (F4), 0 = off. */
  minutes: number;
  /** Soak sample interval, seconds. */
  sampleSeconds: number;
  /** Compare with the SDK floor. */
  floor: boolean;
  /** MCP path of `--http-command` servers. @default "/mcp" */
  httpPath: string;
  /** P3: seconds of warm-up calls per endpoint after the 50 warm-up calls. @default 30 with --full, else 0 */
  warmupSeconds: number;
  /** P6: seconds to let a server settle before an idle sample. @default 5 with --full, else 3 */
  settleSeconds: number;
  /** P7: numbers of principals calling at once. @default [1, 2, 4, 8] */
  principals: number[];
  /** P7: closed-loop clients per principal. @default 2 */
  clientsPerPrincipal: number;
  /** P7: `RunspacesPerProcess` values to compare, the first also for P7's latency parts. @default [8] */
  runspacesPerProcess: number[];
  /** P7: other svc checkouts whose load rows alternate with this one's. @default none */
  compareRoots: string[];
}

const HELP = `Options (perf.ts and faults.ts):
  --target svc|floor      measure svc (spawned here; default) or the SDK floor; repeatable
  --url <http url>        measure any MCP server over Streamable HTTP (e.g. http://127.0.0.1:8080/mcp); repeatable
  --pid <n>               with --url: the server's pid, for RSS/fd/thread sampling
  --health <url>          with --url: a health URL to probe (svc: <base>/health)
  --stdio "<command>"     measure any MCP server over stdio (spawned per connection); repeatable
  --http-command "<command with {port}>"
                          measure any MCP server over Streamable HTTP that the harness spawns itself
                          (P1 cold start, P6 process-tree RSS): {port} is replaced by a free port, the
                          server is ready when a new client's tools/list is answered at
                          http://127.0.0.1:{port}<--http-path>, and its process tree is killed after;
                          e.g. "/work/poshmcp/run-http.sh {port}"; repeatable
  --http-path <path>      MCP path of --http-command servers (default /mcp)
  --transport http|stdio|both   transports for svc and floor (default both)
  --pwsh <path>           PowerShell for svc (default: what bin/pwsh locates: SVC_TEST_PWSH, SVC_PWSH,
                          pwsh on PATH, else 7.6.10 installed from NuGet into .tools/ on first use)
  --tool <role>=<name>    tool to use for a role (date, sleepMs, sleepS, large, echo, exit, stuck,
                          slowReset) on every target that lists it; the others find theirs as usual
  --full                  the issue's counts (P1 N=10, P3 1000 calls, P4 30 s per level, ...)
  --only P3,P4            run only these scenarios
  --iterations <n>        measured iterations (P2/P3) override
  --seconds <s>           seconds per throughput level (P4, and P6's Start-Sleep loop) override
  --warmup-seconds <s>    P3: keep calling for this long after the 50 warm-up calls before measuring
                          (default 30 with --full, else 0; issue 30 measured after 30 s)
  --settle-seconds <s>    P6: quiet seconds before an idle sample (default 3, 5 with --full)
  --levels 1,4,16,64      throughput concurrency levels (P4)
  --principals 1,2,4,8    P7: numbers of API-key principals calling at once
  --clients-per-principal <n>   P7: closed-loop clients per principal (default 2)
  --runspaces-per-process 8[,2,1]  P7: RunspacesPerProcess values to compare (default 8, svc's)
  --compare-root <dir>    P7: another svc checkout measured in the same run, row by row; repeatable
  --minutes <n>           F4 soak length (faults.ts; opt-in)
  --sample-seconds <s>    F4 sample interval (default 30)
  --no-floor              do not run the SDK floor as a reference
  --svc-root <dir>        svc checkout to run (default: this repository)
  --log-level <level>     svc log level (default Information)
  --out <dir>             results directory (default bench/results)
`;

/**
 * Parses the command line shared by both entry points. PowerShell is located only when svc will run:
 * a target is svc, or `alwaysSvc` (faults.ts runs svc whatever the targets). @default alwaysSvc false
 */
export function parseOptions(argv: string[], { alwaysSvc = false } = {}): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      target: { type: "string", multiple: true },
      url: { type: "string", multiple: true },
      pid: { type: "string" },
      health: { type: "string" },
      stdio: { type: "string", multiple: true },
      "http-command": { type: "string", multiple: true },
      "http-path": { type: "string", default: "/mcp" },
      "warmup-seconds": { type: "string" },
      "settle-seconds": { type: "string" },
      transport: { type: "string", default: "both" },
      pwsh: { type: "string" },
      tool: { type: "string", multiple: true },
      full: { type: "boolean", default: false },
      only: { type: "string" },
      iterations: { type: "string" },
      seconds: { type: "string" },
      levels: { type: "string" },
      principals: { type: "string" },
      "clients-per-principal": { type: "string" },
      "runspaces-per-process": { type: "string" },
      "compare-root": { type: "string", multiple: true },
      minutes: { type: "string" },
      "sample-seconds": { type: "string" },
      "no-floor": { type: "boolean", default: false },
      "svc-root": { type: "string" },
      "log-level": { type: "string", default: "Information" },
      out: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    Deno.stdout.writeSync(new TextEncoder().encode(HELP));
    Deno.exit(0);
  }
  const targets: TargetDef[] = [];
  for (const t of values.target ?? []) {
    if (t === "svc") targets.push({ kind: "svc", label: "svc" });
    else if (t === "floor") targets.push({ kind: "floor", label: "floor" });
    else throw new Error(`--target must be svc or floor, got '${t}'`);
  }
  const pid = values.pid ? Number(values.pid) : null;
  for (const url of values.url ?? []) {
    const host = new URL(url).hostname;
    if (!["127.0.0.1", "localhost", "[::1]"].includes(host)) {
      throw new Error(`--url must point at the loopback interface (127.0.0.1), got ${host}`);
    }
    targets.push({ kind: "url", label: `url ${url}`, url, pid, health: values.health ?? null });
  }
  for (const line of values.stdio ?? []) {
    const argv = splitCommandLine(line);
    if (argv.length === 0) throw new Error("--stdio needs a command line");
    targets.push({ kind: "stdio", label: `stdio ${argv[0]!.split("/").pop()}`, argv });
  }
  for (const line of values["http-command"] ?? []) {
    const argv = splitCommandLine(line);
    if (!argv.some((word) => word.includes("{port}"))) {
      throw new Error(`--http-command needs {port} where the port goes, got '${line}'`);
    }
    targets.push({ kind: "command", label: `http ${argv[0]!.split("/").pop()}`, argv });
  }
  if (targets.length === 0) targets.push({ kind: "svc", label: "svc" });
  const httpPath = values["http-path"];
  if (!httpPath.startsWith("/")) {
    throw new Error(`--http-path must start with /, got '${httpPath}'`);
  }
  const seconds = (name: string, text: string | undefined, fallback: number) => {
    const value = text === undefined ? fallback : Number(text);
    if (!Number.isFinite(value) || value < 0) {
      throw new Error(`--${name} wants a number of seconds ≥ 0, got '${text}'`);
    }
    return value;
  };
  const counts = (name: string, text: string | undefined, fallback: number[]) => {
    if (text === undefined) return fallback;
    const list = text.split(",").map(Number);
    if (list.some((n) => !Number.isInteger(n) || n < 1)) {
      throw new Error(`--${name} wants whole numbers ≥ 1 separated by commas, got '${text}'`);
    }
    return list;
  };
  const transport = values.transport;
  if (!["http", "stdio", "both"].includes(transport)) {
    throw new Error(`--transport must be http, stdio or both, got '${transport}'`);
  }
  const tools: Record<string, string> = {};
  for (const pair of values.tool ?? []) {
    const [role, name] = pair.split("=", 2);
    if (!role || !name) throw new Error(`--tool wants role=name, got '${pair}'`);
    tools[role] = name;
  }
  const svcRoot = values["svc-root"] ? `${Deno.realPathSync(values["svc-root"])}/` : REPO_ROOT;
  return {
    targets,
    transports: transport === "both" ? ["http", "stdio"] : [transport as "http" | "stdio"],
    worker: alwaysSvc || targets.some((t) => t.kind === "svc") ? chooseWorker(values.pwsh) : null,
    tools,
    full: values.full,
    only: values.only ? new Set(values.only.split(",").map((s) => s.trim().toUpperCase())) : null,
    out: values.out ?? `${REPO_ROOT}bench/results`,
    svcRoot,
    logLevel: values["log-level"],
    iterations: values.iterations ? Number(values.iterations) : null,
    seconds: values.seconds ? Number(values.seconds) : null,
    levels: values.levels ? values.levels.split(",").map(Number) : [1, 4, 16, 64],
    minutes: values.minutes ? Number(values.minutes) : 0,
    sampleSeconds: values["sample-seconds"] ? Number(values["sample-seconds"]) : 30,
    floor: !values["no-floor"],
    httpPath,
    warmupSeconds: seconds("warmup-seconds", values["warmup-seconds"], values.full ? 30 : 0),
    settleSeconds: seconds("settle-seconds", values["settle-seconds"], values.full ? 5 : 3),
    principals: counts("principals", values.principals, [1, 2, 4, 8]),
    clientsPerPrincipal: counts("clients-per-principal", values["clients-per-principal"], [2])[0]!,
    runspacesPerProcess: counts("runspaces-per-process", values["runspaces-per-process"], [8]),
    compareRoots: (values["compare-root"] ?? []).map((dir) => `${Deno.realPathSync(dir)}/`),
  };
}

/** A table of results. */
export interface Table {
  /** Scenario id, e.g. `P3`. */
  id: string;
  /** Heading. */
  title: string;
  /** Column names. */
  columns: string[];
  /** Rows of cells. */
  rows: (string | number)[][];
  /** Lines printed under the table. */
  notes: string[];
}

/** Renders a table as GitHub markdown. */
export function markdown(table: Table): string {
  const cells = [table.columns, ...table.rows.map((r) => r.map(String))];
  const widths = table.columns.map((_, i) => Math.max(3, ...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  const out = [
    `### ${table.id}: ${table.title}`,
    "",
    line(table.columns),
    `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`,
    ...cells.slice(1).map(line),
  ];
  if (table.notes.length > 0) out.push("", ...table.notes.map((n) => `- ${n}`));
  return out.join("\n") + "\n";
}

/** Prints a line to stdout. */
export function say(text: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(`${text}\n`));
}

/** A named endpoint: a target reached over one transport in one era. */
export interface Endpoint {
  /** The target. */
  target: TargetDef;
  /** e.g. `svc http 2026-07-28`. */
  label: string;
  /** Transport. */
  transport: "http" | "stdio";
  /** Client era. */
  era: Era;
  /** Opens a connection (stdio: spawns the server). */
  connect(): Promise<McpClient>;
  /** Base URL of an HTTP target. */
  base: string | null;
  /** Health URL, when the target has one. */
  health: string | null;
  /** Pid of the HTTP server, when known. */
  pid: number | null;
}

/** The run: options, the report, started servers and every process seen. */
export class Bench {
  readonly options: Options;
  readonly tracker = new ProcessTracker();
  readonly tables: Table[] = [];
  readonly raw: Record<string, unknown> = {};
  /** Figures for the side-by-side summary (issue 30). */
  readonly comparison = new Comparison();
  readonly #http = new Map<string, HttpProcess | CommandProcess>();
  readonly #running = new Set<HttpProcess | CommandProcess>();
  readonly #started = performance.now();
  #svcCache: string | null = null;
  readonly #name: string;

  constructor(name: string, options: Options) {
    this.#name = name;
    this.options = options;
  }

  /** True when scenario `id` is selected. */
  wants(id: string): boolean {
    return this.options.only === null || this.options.only.has(id.toUpperCase());
  }

  /** Records and prints a table; `raw` goes to the JSON file under the table id. */
  add(table: Table, raw?: unknown): void {
    this.tables.push(table);
    if (raw !== undefined) {
      const key = table.id;
      this.raw[key] = this.raw[key] === undefined ? raw : [this.raw[key], raw].flat();
    }
    say("\n" + markdown(table));
  }

  /** svc's standard options with this run's worker, root and log level. */
  svcOptions(
    shell: Record<string, unknown> = {},
    pool: Record<string, unknown> = {},
    extra: Partial<SvcOptions> = {},
  ): SvcOptions {
    if (!this.options.worker) {
      throw new Error("svc was started although no target is svc, so no PowerShell was located");
    }
    return {
      config: benchConfig(shell, pool, this.options.svcRoot),
      worker: this.options.worker,
      root: this.options.svcRoot,
      logLevel: this.options.logLevel,
      ...extra,
    };
  }

  /**
   * Starts svc over HTTP (tracked; stopped by {@linkcode stopHttp} or at the end). svc listens while
   * its pool warms, so unless `warm` is false this waits for `/health/ready` 200 as a load balancer
   * would: scenarios then start from a warm pool. @default warm true
   */
  async startSvc(
    options: SvcOptions,
    { warm = true }: { warm?: boolean } = {},
  ): Promise<HttpProcess> {
    const proc = await startSvcHttp(options, this.tracker);
    this.tracker.addTree(proc.pid);
    this.#running.add(proc);
    if (
      warm && !await waitFor(
        async () => (await healthOnce(`${proc.base}/health/ready`)).status === 200,
        60_000,
        10,
      )
    ) {
      throw new Error(`svc did not become ready within 60 s: ${proc.stderr()}`);
    }
    return proc;
  }

  /** Starts the SDK floor over HTTP (tracked; `payload`: with the large-result tool). */
  async startFloor(payload = false): Promise<HttpProcess> {
    const proc = await startFloorHttp(this.tracker, payload);
    this.#running.add(proc);
    return proc;
  }

  /**
   * Spawns an `--http-command` server and waits until a new client's `tools/list` is answered (the
   * client is returned open, with the moment of the answer). Tracked; stopped by
   * {@linkcode stopHttp} or at the end.
   */
  async startCommand(
    target: Extract<TargetDef, { kind: "command" }>,
    era: Era = "2025-11-25",
  ): Promise<{ proc: CommandProcess; client: McpClient; tools: ToolInfo[]; listedAt: number }> {
    const proc = spawnCommand(target.argv, this.options.httpPath, this.tracker);
    this.#running.add(proc);
    try {
      const { client, tools } = await connectWhenListing(proc.mcpUrl, era, {
        exited: proc.exited,
        pid: proc.pid,
      });
      const listedAt = performance.now();
      this.tracker.addTree(proc.pid);
      return { proc, client, tools, listedAt };
    } catch (error) {
      await this.stopHttp(proc);
      throw new Error(
        `${target.label}: ${(error as Error).message}\n${proc.stderr().slice(-2000)}`,
      );
    }
  }

  /** The shared instance of an `--http-command` target for P3–P5. */
  async sharedCommand(target: Extract<TargetDef, { kind: "command" }>): Promise<CommandProcess> {
    let proc = this.#http.get(target.label) as CommandProcess | undefined;
    if (!proc) {
      const started = await this.startCommand(target);
      await started.client.close();
      proc = started.proc;
      this.#http.set(target.label, proc);
    }
    return proc;
  }

  /** Stops the shared instances (P6 measures fresh ones, and the shared ones would add load). */
  async stopShared(): Promise<void> {
    for (const proc of [...this.#http.values()]) await this.stopHttp(proc);
  }

  /** Stops an HTTP server the harness started, remembering its workers first. */
  async stopHttp(proc: HttpProcess | CommandProcess): Promise<number> {
    this.tracker.addTree(proc.pid);
    for (const [key, value] of this.#http) if (value === proc) this.#http.delete(key);
    this.#running.delete(proc);
    return await proc.stop();
  }

  /** The shared svc HTTP instance for P2–P5 (default pool, 4 MiB result cap). */
  async sharedSvc(): Promise<HttpProcess> {
    let proc = this.#http.get("svc") as HttpProcess | undefined;
    if (!proc) {
      proc = await this.startSvc(
        this.svcOptions({ MaxResultBytes: 4 * 1024 * 1024 }, {}, {
          cacheDir: await this.svcCache(),
        }),
      );
      this.#http.set("svc", proc);
    }
    return proc;
  }

  /** The shared floor HTTP instance. */
  async sharedFloor(): Promise<HttpProcess> {
    let proc = this.#http.get("floor") as HttpProcess | undefined;
    if (!proc) {
      proc = await startFloorHttp(this.tracker);
      this.#http.set("floor", proc);
      this.#running.add(proc);
    }
    return proc;
  }

  /** A catalog cache directory shared by the shared svc instances (warm after the first start). */
  async svcCache(): Promise<string> {
    this.#svcCache ??= await tempDir("svc-bench-cache-");
    return this.#svcCache;
  }

  /** The stdio command of svc with the shared configuration. */
  async svcStdio(
    shell: Record<string, unknown> = { MaxResultBytes: 4 * 1024 * 1024 },
  ): Promise<StdioCommand> {
    return await svcStdioCommand(this.svcOptions(shell, {}, { cacheDir: await this.svcCache() }));
  }

  /** Endpoints of a target: for svc/floor one per selected transport and era, else its own. */
  async endpoints(
    target: TargetDef,
    eras: Era[] = ["2026-07-28", "2025-11-25"],
    stdioEras: Era[] = ["2025-11-25"],
  ): Promise<Endpoint[]> {
    const out: Endpoint[] = [];
    const transports = this.options.transports;
    if (target.kind === "svc" || target.kind === "floor") {
      if (transports.includes("http")) {
        const proc = target.kind === "svc" ? await this.sharedSvc() : await this.sharedFloor();
        for (const era of eras) {
          out.push({
            target,
            label: `${target.label} http ${era}`,
            transport: "http",
            era,
            connect: () => connectHttp(`${proc.base}/mcp`, era, proc.pid),
            base: proc.base,
            health: `${proc.base}/health`,
            pid: proc.pid,
          });
        }
      }
      if (transports.includes("stdio")) {
        const cmd = target.kind === "svc" ? await this.svcStdio() : floorStdioCommand();
        for (const era of stdioEras) {
          out.push({
            target,
            label: `${target.label} stdio ${era}`,
            transport: "stdio",
            era,
            connect: () => connectStdio(cmd, era, this.tracker),
            base: null,
            health: null,
            pid: null,
          });
        }
      }
    } else if (target.kind === "command" || target.kind === "url") {
      // A server the harness spawned, or one already running: the same endpoints, one per era.
      const server = target.kind === "command"
        ? await this.sharedCommand(target).then((proc) => ({
          url: proc.mcpUrl,
          base: proc.base,
          health: null,
          pid: proc.pid,
        }))
        : {
          url: target.url,
          base: new URL(target.url).origin,
          health: target.health,
          pid: target.pid,
        };
      for (const era of eras) {
        out.push({
          target,
          label: `${target.label} ${era}`,
          transport: "http",
          era,
          connect: () => connectHttp(server.url, era, server.pid),
          base: server.base,
          health: server.health,
          pid: server.pid,
        });
      }
    } else {
      const cmd = { command: target.argv[0]!, args: target.argv.slice(1) };
      for (const era of stdioEras) {
        out.push({
          target,
          label: `${target.label} ${era}`,
          transport: "stdio",
          era,
          connect: () => connectStdio(cmd, era, this.tracker),
          base: null,
          health: null,
          pid: null,
        });
      }
    }
    return out;
  }

  /** Resolves the tool of a role on a connection (null when the target has none). */
  async tool(client: McpClient, role: RoleName, tools?: ToolInfo[]): Promise<string | null> {
    return resolveTool(tools ?? await client.listTools(), role, this.options.tools);
  }

  /**
   * Stops every server still running, reports processes that outlived their server (orphans) and
   * ends them, writes the results, and removes temp directories.
   */
  async finish(): Promise<{ orphans: { pid: number; args: string }[] }> {
    for (const proc of [...this.#running]) await this.stopHttp(proc);
    // Give exiting workers a moment, then look for anything still alive.
    let orphans = this.tracker.survivors();
    for (let i = 0; i < 20 && orphans.length > 0; i++) {
      await sleep(250);
      orphans = this.tracker.survivors();
    }
    this.tracker.killAll(orphans);
    const note = orphans.length === 0
      ? "no process the harness started or saw is left running"
      : `${orphans.length} process(es) were still running at the end and were killed by the harness (after an interrupt this includes the harness's own helpers): ${
        orphans.map((o) => `${o.pid} (${o.args.slice(0, 80)})`).join("; ")
      }`;
    say(`\nProcess check: ${note}.`);
    this.raw.orphansAtEnd = orphans;
    this.raw.comparison = this.comparison.toJSON();
    await this.write(note);
    await cleanupTempDirs();
    return { orphans };
  }

  /** Writes `<out>/<name>-<stamp>.md` and `.json` (and `<name>-latest.*`). */
  async write(processNote: string): Promise<void> {
    const stamp = new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19);
    await Deno.mkdir(this.options.out, { recursive: true });
    const meta = {
      name: this.#name,
      date: new Date().toISOString(),
      host: { os: Deno.build.os, arch: Deno.build.arch, cpus: navigator.hardwareConcurrency },
      deno: Deno.version.deno,
      worker: this.options.worker,
      targets: this.options.targets.map((t) => t.label),
      transports: this.options.transports,
      full: this.options.full,
      svcRoot: this.options.svcRoot,
      elapsedSeconds: Math.round((performance.now() - this.#started) / 1000),
      processCheck: processNote,
    };
    const md = [
      `# svc bench: ${this.#name} (${meta.date})`,
      "",
      `- ${describeWorker(meta.worker)}`,
      `- host: ${meta.host.os}/${meta.host.arch}, ${meta.host.cpus} CPUs, Deno ${meta.deno}`,
      `- targets: ${meta.targets.join(", ")}; transports: ${meta.transports.join(", ")}; ${
        meta.full ? "full counts" : "quick counts (use --full for the issue's counts)"
      }`,
      `- elapsed: ${meta.elapsedSeconds} s; process check: ${processNote}`,
      "",
      ...this.tables.map(markdown),
    ].join("\n");
    const json = JSON.stringify({ meta, tables: this.tables, raw: this.raw }, null, 2);
    for (const base of [`${this.#name}-${stamp}`, `${this.#name}-latest`]) {
      await Deno.writeTextFile(`${this.options.out}/${base}.md`, md);
      await Deno.writeTextFile(`${this.options.out}/${base}.json`, json);
    }
    say(`Results: ${this.options.out}/${this.#name}-${stamp}.md and .json`);
  }
}

/** Outcome of one call. */
export interface CallRecord {
  /** performance.now() at start. */
  start: number;
  /** Latency in ms. */
  ms: number;
  /** True when the call returned without isError. */
  ok: boolean;
  /** Error text (isError text or thrown message), shortened. */
  error?: string;
}

/** Text of a result's first content block, shortened. */
export function resultText(result: { content?: { type: string; text?: string }[] }): string {
  return (result.content ?? []).map((c) => c.text ?? "").join(" ").slice(0, 160);
}

/** Runs one call and records it (never throws). */
export async function record(
  call: () => Promise<
    { isError?: boolean | undefined; content?: { type: string; text?: string }[] }
  >,
): Promise<CallRecord> {
  const start = performance.now();
  try {
    const result = await call();
    const ms = performance.now() - start;
    return result.isError
      ? { start, ms, ok: false, error: resultText(result) }
      : { start, ms, ok: true };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { start, ms: performance.now() - start, ok: false, error: message.slice(0, 160) };
  }
}

/** Sequential calls: `warmup` unmeasured, then `n` measured (bounded by `maxMs` overall). */
export async function sequential(
  n: number,
  warmup: number,
  call: () => Promise<
    { isError?: boolean | undefined; content?: { type: string; text?: string }[] }
  >,
  maxMs = 120_000,
): Promise<{ records: CallRecord[]; summary: Summary; errors: number; firstError?: string }> {
  const end = performance.now() + maxMs;
  for (let i = 0; i < warmup && performance.now() < end; i++) await record(call);
  const records: CallRecord[] = [];
  for (let i = 0; i < n && performance.now() < end; i++) records.push(await record(call));
  const ok = records.filter((r) => r.ok);
  const firstError = records.find((r) => !r.ok)?.error;
  return {
    records,
    summary: summarize(ok.map((r) => r.ms)),
    errors: records.length - ok.length,
    ...(firstError ? { firstError } : {}),
  };
}

/** Result of a closed-loop run. */
export interface LoopResult {
  /** Every call. */
  records: CallRecord[];
  /** Latency of successful calls. */
  summary: Summary;
  /** Failed calls. */
  errors: number;
  /** Successful calls per second over the measured window. */
  throughput: number;
  /** Measured window, ms. */
  elapsedMs: number;
  /** Distinct error texts with counts. */
  errorKinds: Record<string, number>;
}

/**
 * Closed loop: each of `workers` loops `call(i)` back to back (plus `thinkMs()`), first for
 * `warmupMs` unmeasured, then for `durationMs` measured; at most `maxCalls` calls per worker.
 */
export async function closedLoop(options: {
  workers: number;
  call: (worker: number) => Promise<{ isError?: boolean | undefined }>;
  durationMs: number;
  warmupMs?: number;
  maxCalls?: number;
  thinkMs?: () => number;
  stop?: AbortSignal;
}): Promise<LoopResult> {
  const { workers, call, durationMs, warmupMs = 0, maxCalls = 1_000_000, thinkMs } = options;
  const records: CallRecord[] = [];
  const warmEnd = performance.now() + warmupMs;
  const end = warmEnd + durationMs;
  const loop = async (worker: number) => {
    for (let i = 0; i < maxCalls && performance.now() < end && !options.stop?.aborted; i++) {
      const r = await record(() => call(worker));
      if (r.start >= warmEnd && r.start + r.ms <= end) records.push(r);
      const think = thinkMs?.() ?? 0;
      if (think > 0) await sleep(think);
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, i) => loop(i)));
  const elapsedMs = Math.max(1, Math.min(performance.now(), end) - warmEnd);
  const ok = records.filter((r) => r.ok);
  const errorKinds: Record<string, number> = {};
  for (const r of records) {
    if (!r.ok) errorKinds[r.error ?? "?"] = (errorKinds[r.error ?? "?"] ?? 0) + 1;
  }
  return {
    records,
    summary: summarize(ok.map((r) => r.ms)),
    errors: records.length - ok.length,
    throughput: throughput(ok.length, elapsedMs),
    elapsedMs,
    errorKinds,
  };
}

/** One `/health` sample. */
export interface HealthSample {
  /** performance.now() at the request. */
  at: number;
  /** Latency, ms. */
  ms: number;
  /** HTTP status (0: failed). */
  status: number;
  /** The pool figures, when svc answered them. */
  pool?: {
    warm: number;
    leased: number;
    resetting: number;
    creating: number;
    total: number;
    min: number;
    max: number;
  };
}

/** GETs a health URL once. */
export async function healthOnce(url: string): Promise<HealthSample> {
  const at = performance.now();
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    const body = await response.json().catch(() => null) as { pool?: HealthSample["pool"] } | null;
    return {
      at,
      ms: performance.now() - at,
      status: response.status,
      ...(body?.pool ? { pool: body.pool } : {}),
    };
  } catch {
    return { at, ms: performance.now() - at, status: 0 };
  }
}

/** A running out-of-process health prober (bench/health_probe.ts). */
export interface HealthProbe {
  /** Samples so far (live). */
  samples: HealthSample[];
  /** Stops the prober and returns every sample. */
  stop(): Promise<HealthSample[]>;
}

/**
 * Probes a health URL every `everyMs` from a separate process (so the load generator's event loop
 * does not inflate the latency), until stopped or `maxMs`. Resolves once the first sample is in.
 */
export async function probeHealth(
  url: string,
  everyMs: number,
  maxMs = 10 * 60_000,
  tracker?: ProcessTracker,
): Promise<HealthProbe> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--quiet",
      `--config=${REPO_ROOT}deno.json`,
      `${REPO_ROOT}bench/health_probe.ts`,
      url,
      String(everyMs),
      String(maxMs),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  tracker?.add(child.pid);
  const samples: HealthSample[] = [];
  let first!: () => void;
  const gotFirst = new Promise<void>((resolve) => (first = resolve));
  const reading = (async () => {
    let buffer = "";
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout) {
      buffer += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          const s = JSON.parse(line) as {
            at: number;
            ms: number;
            status: number;
            pool?: HealthSample["pool"];
          };
          samples.push({
            at: s.at - performance.timeOrigin,
            ms: s.ms,
            status: s.status,
            ...(s.pool ? { pool: s.pool } : {}),
          });
          first();
        } catch { /* partial line */ }
      }
    }
  })().catch(() => {});
  const writer = child.stdin.getWriter();
  const stop = async () => {
    await writer.close().catch(() => {});
    const done = await Promise.race([
      child.status.then(() => true),
      sleep(5_000).then(() => false),
    ]);
    if (!done) {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
      await child.status;
    }
    await reading;
    return samples;
  };
  await Promise.race([gotFirst, child.status, sleep(15_000)]);
  return { samples, stop };
}

/** Closes clients a few at a time. */
export async function closeAll(clients: McpClient[]): Promise<void> {
  for (let i = 0; i < clients.length; i += 8) {
    await Promise.all(clients.slice(i, i + 8).map((c) => c.close().catch(() => {})));
  }
}

/** Opens `count` connections, `batch` at a time. */
export async function connectMany(
  endpoint: Endpoint,
  count: number,
  batch = 8,
): Promise<McpClient[]> {
  const clients: McpClient[] = [];
  try {
    for (let i = 0; i < count; i += batch) {
      const n = Math.min(batch, count - i);
      clients.push(...await Promise.all(Array.from({ length: n }, () => endpoint.connect())));
    }
  } catch (error) {
    await closeAll(clients);
    throw error;
  }
  return clients;
}

/** The PowerShell line of the report. */
function describeWorker(worker: WorkerChoice | null): string {
  return worker
    ? `PowerShell: ${worker.path} (${worker.reason})`
    : "PowerShell: none (no target is svc)";
}

/**
 * Runs the entry point: parses options, runs `body`, always finishes (kills leftovers). Exits 2 on a
 * bad command line and 3 when svc is to run and no PowerShell is found. `alwaysSvc`: the entry point
 * runs svc whatever the targets. @default alwaysSvc false
 */
export async function main(
  name: string,
  body: (bench: Bench) => Promise<void>,
  budgetMinutes: (options: Options) => number,
  { alwaysSvc = false } = {},
): Promise<void> {
  let options: Options;
  try {
    options = parseOptions(Deno.args, { alwaysSvc });
  } catch (error) {
    if (error instanceof WorkerNotFound) {
      say(`${name}: ${error.message}`);
      Deno.exit(3);
    }
    say(`${name}: ${(error as Error).message}\n\n${HELP}`);
    Deno.exit(2);
  }
  const bench = new Bench(name, options);
  say(`svc bench ${name}: ${describeWorker(options.worker)}`);
  say(
    `targets: ${options.targets.map((t) => t.label).join(", ")}; transports: ${
      options.transports.join(", ")
    }; ${options.full ? "full counts" : "quick counts (--full for the issue's counts)"}`,
  );
  let finishing = false;
  const finish = async (code: number) => {
    if (finishing) return;
    finishing = true;
    const { orphans } = await bench.finish();
    Deno.exit(code !== 0 ? code : orphans.length > 0 ? 1 : 0);
  };
  Deno.addSignalListener("SIGINT", () => void finish(130));
  // Watchdog: every loop is bounded, but a hung server must not hang the run.
  const watchdog = setTimeout(() => {
    say(`\n${name}: over its time budget; stopping everything.`);
    void finish(3);
  }, budgetMinutes(options) * 60_000);
  try {
    await body(bench);
  } catch (error) {
    say(`\n${name} failed: ${error instanceof Error ? error.stack : String(error)}`);
    clearTimeout(watchdog);
    await finish(1);
    return;
  }
  clearTimeout(watchdog);
  await finish(0);
}

export { summarize, throughput };
