/**
 * Test support for end-to-end tests: starts `svc serve` as a real child process and connects a real
 * MCP client to it over stdio (SDK v2 in either era, or the v1 SDK at 2024-11-05). The worker is
 * real PowerShell, found by the repository's `bin/pwsh` (see {@linkcode TEST_PWSH}).
 *
 * @module
 */
import {
  Client,
  type ElicitRequestFormParams,
  type ElicitResult,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client as V1Client } from "sdk1/client/index.js";
import { StdioClientTransport as V1StdioClientTransport } from "sdk1/client/stdio.js";
import type { JSONRPCMessage } from "sdk1/types.js";
import { tmpdir } from "node:os";
import { defaultCacheDirectory } from "../../lib/cache_directory.ts";
import { DEFAULT_WAIT_MS, outputWithin, unlessExited } from "./deadline.ts";

const root = new URL("../../", import.meta.url).pathname;

/** Absolute path of the fixture module manifest. */
export const FIXTURE_MODULE = `${root}tests/fixtures/SvcFixture/SvcFixture.psd1`;

/**
 * The PowerShell every test runs on, as `bin/pwsh` finds it: `SVC_TEST_PWSH`, `SVC_PWSH`, `pwsh` on
 * PATH, else Microsoft's PowerShell 7.6.10 installed from NuGet into `.tools/` on first use. Asked
 * once per test process; a machine where it finds and installs none fails every test that loads
 * this module, with `bin/pwsh`'s reason.
 */
export const TEST_PWSH: string = (() => {
  // bin/pwsh is a bash script; Windows (GitHub's runner) names its own PowerShell.
  if (Deno.build.os === "windows") return Deno.env.get("SVC_TEST_PWSH") || "pwsh.exe";
  const output = new Deno.Command(`${root}bin/pwsh`, {
    env: { SVC_PWSH_LOCATE: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes).trim();
  if (output.code !== 0) throw new Error(`bin/pwsh found no PowerShell: ${decode(output.stderr)}`);
  return decode(output.stdout);
})();

/**
 * Every server a test starts shares the compiled worker host in the user cache (it depends on no
 * configuration): compiling it for each server would add about a second of CPU to every start.
 */
const SHARED_HOST_CACHE: Record<string, string> = defaultCacheDirectory()
  ? { SVC_HOST_CACHE_DIR: defaultCacheDirectory()! }
  : {};

/**
 * When process `pid` started (Linux: field 22 of `/proc/<pid>/stat`, clock ticks since boot), or
 * null when there is no such process or no /proc: with the pid, it names one process for good,
 * where a pid alone is reused.
 */
function startTime(pid: number | "self"): string | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // After the command name in parentheses (which may hold spaces), field 3 onwards.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * The catalog cache the servers of one test run share. Every test module runs in the one `deno test`
 * process, which names the run: its pid and start time (a later run given the same pid must not find
 * this run's catalogs). A server whose shell settings an earlier test of the run already discovered
 * answers `tools/list` from this cache, as a warm start does, instead of discovering again (about a
 * second of pwsh's time for the fixture module); the worker still checks it against its own
 * PowerShell and module versions. Per run, so that no catalog built by older code is ever served:
 * the last test file removes it, and each run sweeps those of runs that ended before getting there.
 * Tests of discovery or of the cache pass an `SVC_CACHE_DIR` of their own.
 */
export const SHARED_CATALOG_CACHE = `${tmpdir()}/svc-test-catalog-${Deno.pid}${
  Deno.build.os === "linux" ? `-${startTime("self")}` : ""
}`;

// Linux only: elsewhere there is no /proc to tell a finished run from a live one.
if (Deno.build.os === "linux") {
  for (const entry of Deno.readDirSync(tmpdir())) {
    const run = /^svc-test-catalog-(\d+)-(\d+)$/.exec(entry.name);
    if (run === null || startTime(Number(run[1])) === run[2]) continue;
    try {
      Deno.removeSync(`${tmpdir()}/${entry.name}`, { recursive: true });
    } catch {
      // Another module of a run swept it first.
    }
  }
}

/** Which client and protocol era to connect with. */
export type Era = "2026-07-28" | "2025-11-25" | "v1-2024-11-05";

/** Options of {@linkcode startSvc}. */
export interface StartSvcOptions {
  /** Contents of the configuration file (written to a temp dir). */
  config?: Record<string, unknown>;
  /** Era of the client. @default "2025-11-25" */
  era?: Era;
  /** Extra environment for svc. */
  env?: Record<string, string>;
  /** Extra command-line arguments for `svc serve`. */
  args?: string[];
  /** Worker executable. @default TEST_PWSH */
  pwsh?: string;
  /**
   * Answers svc's `elicitation/create` requests (SDK v2 client only): given, the client declares
   * form elicitation. @default none, and no elicitation capability
   */
  elicitation?: Elicitor;
}

/** A client's answer to svc's elicitation: what its user would fill in or choose. */
export type Elicitor = (
  params: ElicitRequestFormParams,
  signal: AbortSignal,
) => Promise<ElicitResult>;

/** A connected client and what it takes to tear it down. */
export interface SvcConnection extends AsyncDisposable {
  /** Lists tools. */
  listTools(): Promise<{ tools: ToolInfo[] }>;
  /** Calls a tool; resolves with the raw CallToolResult. */
  callTool(
    name: string,
    args?: Record<string, unknown>,
    options?: { signal?: AbortSignal; onprogress?: (progress: ProgressInfo) => void },
  ): Promise<CallResult>;
  /** Sends a ping. */
  ping(): Promise<unknown>;
  /** The SDK client itself (null for the v1 era), for what these methods do not cover. */
  client: Client | null;
  /** Pid of the svc process. */
  serverPid(): number | null;
  /** The negotiated protocol version. */
  protocolVersion(): string | undefined;
  /** Everything svc wrote to stderr so far (its log). */
  stderr(): string;
  /** The temp directory holding config and cache. */
  dir: string;
  /** Closes the client (svc exits when stdin closes). */
  close(): Promise<void>;
}

/** A tool as listed. */
export interface ToolInfo {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown> | undefined;
}

/** A `notifications/progress` as the client reports it. */
export interface ProgressInfo {
  progress: number;
  total?: number | undefined;
  message?: string | undefined;
}

/** A tool call result as received. */
export interface CallResult {
  content: { type: string; text?: string }[];
  structuredContent?: Record<string, unknown> | undefined;
  isError?: boolean | undefined;
}

/** The default test configuration: a few built-in cmdlets plus the fixture module. */
export function fixtureConfig(shell: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ShellConfiguration: {
      Commands: [
        "Get-Date",
        "Start-Sleep",
        "Write-Output",
        "Write-Error",
        "Set-Variable",
        "Get-Variable",
        "Get-Location",
        "Set-Location",
      ],
      Modules: [FIXTURE_MODULE],
      ...shell,
    },
    McpServer: { RunspacePool: { StopTimeout: "00:00:02" } },
  };
}

/** Starts `svc serve --transport stdio` with a temp config and connects a client of the given era. */
export async function startSvc(options: StartSvcOptions = {}): Promise<SvcConnection> {
  const { config = fixtureConfig(), era = "2025-11-25", env = {}, args = [], pwsh = TEST_PWSH } =
    options;
  const dir = await Deno.makeTempDir({ prefix: "svc-e2e-" });
  const configPath = `${dir}/appsettings.json`;
  await Deno.writeTextFile(configPath, JSON.stringify(config, null, 2));
  const serverArgs = [
    "run",
    "--allow-all",
    "--quiet",
    `${root}main.ts`,
    "serve",
    "--transport",
    "stdio",
    "--config",
    configPath,
    "--pwsh",
    pwsh,
    ...args,
  ];
  const serverEnv: Record<string, string> = {
    ...Deno.env.toObject(),
    SVC_CACHE_DIR: SHARED_CATALOG_CACHE,
    ...SHARED_HOST_CACHE,
    SVC_LOG_LEVEL: "debug",
    ...env,
  };
  let log = "";
  const collect = (stream: ReadableStream<Uint8Array> | null | undefined) => {
    if (!stream) return;
    (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) log += decoder.decode(chunk, { stream: true });
    })().catch(() => {});
  };

  if (era === "v1-2024-11-05") {
    const transport = new V1StdioClientTransport({
      command: Deno.execPath(),
      args: serverArgs,
      env: serverEnv,
      stderr: "pipe",
    });
    collect(webStream(transport.stderr));
    const client = new V1Client({ name: "svc-test-v1", version: "1.0.0" });
    await client.connect(pinInitializeVersion(transport, "2024-11-05"));
    return connection(dir, () => log, {
      listTools: () => client.listTools() as Promise<{ tools: ToolInfo[] }>,
      callTool: (name, args, opts) =>
        client.callTool(
          { name, arguments: args ?? {} },
          undefined,
          {
            ...(opts?.signal ? { signal: opts.signal } : {}),
            ...(opts?.onprogress ? { onprogress: opts.onprogress } : {}),
          },
        ) as Promise<CallResult>,
      ping: () => client.ping(),
      client: null,
      serverPid: () => transport.pid,
      protocolVersion: () => "2024-11-05",
      close: () => client.close(),
    });
  }

  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: serverArgs,
    env: serverEnv,
    stderr: "pipe",
  });
  collect(webStream(transport.stderr));
  const client = new Client(
    { name: "svc-test", version: "1.0.0" },
    {
      ...(era === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
      ...(options.elicitation ? { capabilities: { elicitation: { form: {} } } } : {}),
    },
  );
  answerElicitations(client, options.elicitation);
  await client.connect(transport);
  return connection(dir, () => log, {
    listTools: () => client.listTools() as Promise<{ tools: ToolInfo[] }>,
    callTool: (name, args, opts) =>
      client.callTool(
        { name, arguments: args ?? {} },
        {
          ...(opts?.signal ? { signal: opts.signal } : {}),
          ...(opts?.onprogress ? { onprogress: opts.onprogress } : {}),
        },
      ) as Promise<CallResult>,
    ping: () => client.ping(),
    client,
    serverPid: () => transport.pid,
    protocolVersion: () => client.getNegotiatedProtocolVersion(),
    close: () => client.close(),
  });
}

/**
 * An SDK client connected to svc's MCP endpoint `url` over HTTP, sending an API key when given,
 * speaking `era` (default: the SDK's own negotiation, 2025-11-25).
 */
export async function connectWithKey(
  url: string,
  key: string | null,
  era: "2025-11-25" | "2026-07-28" = "2025-11-25",
): Promise<Client> {
  const client = new Client(
    { name: "svc-test", version: "1.0.0" },
    era === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {},
  );
  const headers: Record<string, string> = key === null ? {} : { "X-API-Key": key };
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }),
  );
  return client;
}

/** Lets `elicitor`, when given, answer the client's elicitation requests. */
export function answerElicitations(client: Client, elicitor: Elicitor | undefined): void {
  if (!elicitor) return;
  client.setRequestHandler(
    "elicitation/create",
    (request, ctx) => elicitor(request.params as ElicitRequestFormParams, ctx.mcpReq.signal),
  );
}

function connection(
  dir: string,
  stderr: () => string,
  api: Omit<SvcConnection, "dir" | "stderr" | typeof Symbol.asyncDispose>,
): SvcConnection {
  const close = async () => {
    await api.close().catch(() => {});
    // Give svc a moment to stop its worker before the temp dir goes away.
    await new Promise((r) => setTimeout(r, 50));
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  return { ...api, dir, stderr, close, [Symbol.asyncDispose]: close };
}

/** The v1 SDK always offers its newest version; this rewrites the initialize request's version. */
function pinInitializeVersion<T extends { send(message: JSONRPCMessage): Promise<void> }>(
  transport: T,
  version: string,
): T {
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage) => {
    if ("method" in message && message.method === "initialize" && message.params) {
      message = { ...message, params: { ...message.params, protocolVersion: version } };
    }
    return send(message);
  };
  return transport;
}

function webStream(stream: unknown): ReadableStream<Uint8Array> | null {
  if (!stream) return null;
  // The SDK exposes a Node stream; Deno's node:stream supports toWeb via the Readable class.
  const readable = stream as { on(event: string, fn: (chunk: Uint8Array) => void): void };
  return new ReadableStream({
    start(controller) {
      readable.on("data", (chunk) => controller.enqueue(new Uint8Array(chunk)));
      readable.on("end", () => controller.close());
      readable.on("error", () => controller.close());
    },
  });
}

/** The JSON of a successful call's first text block. */
export function outputOf(result: CallResult): unknown {
  const text = result.content.find((c) => c.type === "text" && !c.text?.startsWith("Command '"))
    ?.text;
  return JSON.parse(text ?? "null");
}

interface ProcessRow {
  pid: number;
  ppid: number;
  args: string;
  zombie: boolean;
}

/** Every process with its parent and command line: `ps` on Linux and macOS, CIM through pwsh on Windows. */
function processTable(): ProcessRow[] {
  if (Deno.build.os === "windows") {
    const script =
      "Get-CimInstance Win32_Process | ForEach-Object { '{0}\t{1}\t{2}' -f $_.ProcessId, $_.ParentProcessId, $_.CommandLine }";
    const out = new Deno.Command("pwsh", {
      args: ["-NoProfile", "-Command", script],
      stdout: "piped",
      stderr: "null",
    })
      .outputSync();
    return new TextDecoder().decode(out.stdout).split(/\r?\n/).filter(Boolean).map((line) => {
      const [pid, ppid, ...args] = line.split("\t");
      return { pid: Number(pid), ppid: Number(ppid), args: args.join("\t"), zombie: false };
    });
  }
  const out = new Deno.Command("ps", {
    args: ["-A", "-o", "pid=", "-o", "ppid=", "-o", "stat=", "-o", "args="],
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.trim()).map((line) => {
    const [pid, ppid, stat, ...args] = line.trim().split(/\s+/);
    return {
      pid: Number(pid),
      ppid: Number(ppid),
      args: args.join(" "),
      zombie: (stat ?? "").startsWith("Z"),
    };
  });
}

/** Pids of the live child processes of `pid` (for svc: its workers). */
export function childrenOf(pid: number): number[] {
  return processTable().filter((p) => p.ppid === pid && !p.zombie).map((p) => p.pid);
}

/** A size field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, …) in bytes; NaN where there is none. */
export function processMemory(pid: number, field: "VmRSS" | "VmHWM" = "VmRSS"): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) * 1024;
}

/** True while a process with this pid exists (and is not a zombie). */
export function isAlive(pid: number): boolean {
  return processTable().some((p) => p.pid === pid && !p.zombie);
}

/** Pids of live processes whose command line contains `marker`. */
export function processesMatching(marker: string): number[] {
  return processTable()
    .filter((p) =>
      p.args.includes(marker) && !p.zombie && p.pid !== Deno.pid && !p.args.startsWith("ps -A")
    )
    .map((p) => p.pid);
}

/**
 * The private directories of the worker processes whose parent is `parent`, by
 * pid, read from their command lines (`-File <dir>/host.ps1`). @default parent: this test process
 */
export function workerDirectories(parent: number = Deno.pid): Map<number, string> {
  const dirs = new Map<number, string>();
  for (const p of processTable()) {
    const match = /-File (\S+)\/host\.ps1 -Endpoint/.exec(p.args);
    if (match && p.ppid === parent && !p.zombie) dirs.set(p.pid, match[1]!);
  }
  return dirs;
}

/**
 * Worker processes (pwsh running svc's host script) left behind: their parent is gone,
 * is init, or is this test process. Workers of another live svc (a benchmark, say) do not count.
 */
export function orphanedWorkers(): number[] {
  const table = processTable();
  const live = new Set(table.filter((p) => !p.zombie).map((p) => p.pid));
  return table
    .filter((p) => !p.zombie && p.args.includes("host.ps1 -Endpoint"))
    .filter((p) => p.ppid <= 1 || p.ppid === Deno.pid || !live.has(p.ppid))
    .map((p) => p.pid);
}

/**
 * Runs `fn` with this process's environment variables `values` (undefined: unset; workers started
 * meanwhile inherit them), then puts back what was there before.
 */
export async function withEnv<T>(
  values: Record<string, string | undefined>,
  fn: () => Promise<T>,
): Promise<T> {
  const saved = Object.keys(values).map((name) => [name, Deno.env.get(name)] as const);
  const apply = (name: string, value: string | undefined) =>
    value === undefined ? Deno.env.delete(name) : Deno.env.set(name, value);
  try {
    for (const [name, value] of Object.entries(values)) apply(name, value);
    return await fn();
  } finally {
    for (const [name, value] of saved) apply(name, value);
  }
}

/**
 * Waits until `check` returns true, polling every 50 ms, for at most `ms`. The default is long: it
 * bounds only how long a failing test waits, while a pool's new worker can take 10 s to start on a
 * busy 2-core machine. A test whose time bound is the behaviour passes its own `ms`.
 */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  ms = 30_000,
): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return await check();
}

/**
 * Waits until the log that `read()` returns (a child's stderr, collected in the background) matches
 * `pattern`, and returns that log; fails with the log after `ms`. A line a server writes just before
 * it answers can reach the test after the answer does, so a log is never read once and asserted.
 */
export async function logged(
  read: () => string,
  pattern: RegExp,
  ms: number = DEFAULT_WAIT_MS,
): Promise<string> {
  if (!(await eventually(() => pattern.test(read()), ms))) {
    throw new Error(`the log did not show ${pattern} within ${ms / 1000} s; it has:\n${read()}`);
  }
  return read();
}

/** True when a GET of `url` answers 2xx; false for any other status or no answer at all. */
export async function answersOk(url: string): Promise<boolean> {
  try {
    const response = await fetch(url);
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/** What one run of svc printed and how it exited. */
export interface SvcRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` once to completion (stdin empty) and captures its output. */
export async function runSvc(
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<SvcRun> {
  const output = await outputWithin(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", `${root}main.ts`, ...args],
    cwd: options.cwd ?? root,
    env: { ...Deno.env.toObject(), SVC_INVOCATION_DIR: "", ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }, `svc ${args.join(" ")}`);
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/**
 * Runs `svc serve --transport http --port 0` on the configuration `config` until svc exits, as it
 * does when it refuses to start, and returns how it ended. For a start that succeeds, use
 * {@linkcode startHttpSvc}: this one waits for an exit until its deadline.
 */
export async function runHttpSvc(
  config: Record<string, unknown>,
  options: { args?: string[]; env?: Record<string, string> } = {},
): Promise<SvcRun> {
  const dir = await Deno.makeTempDir({ prefix: "svc-http-" });
  try {
    await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config));
    const args = ["--port", "0", "--config", `${dir}/appsettings.json`, "--pwsh", TEST_PWSH];
    return await runSvc(["serve", "--transport", "http", ...args, ...(options.args ?? [])], {
      env: options.env ?? {},
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Options of {@linkcode startHttpSvc}. */
export interface StartHttpSvcOptions {
  /** Contents of the configuration file. @default fixtureConfig() */
  config?: Record<string, unknown>;
  /** Extra environment for svc. */
  env?: Record<string, string>;
  /** Extra command-line arguments for `svc serve`. */
  args?: string[];
  /** Worker executable. @default TEST_PWSH */
  pwsh?: string;
  /** The `main.ts` that runs, e.g. another checkout's for a comparison. @default this repository's */
  main?: string;
  /**
   * A command that runs svc (`deno`) as its last arguments and becomes it (exec), e.g.
   * `["prlimit", "--nofile=256:256", "--"]` for a lower open-files limit. @default none
   */
  wrapper?: string[];
  /**
   * Whether to wait for the pool's warm-up too ("Startup complete" logged), as tests that start
   * from a warm pool need; false returns as soon as svc listens. @default true
   */
  warm?: boolean;
}

/** A running `svc serve --transport http`. */
export interface HttpSvc extends AsyncDisposable {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Pid of svc. */
  pid: number;
  /** svc's stderr so far. */
  stderr(): string;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
  /** The temp directory holding config and cache. */
  dir: string;
}

/** Starts svc over HTTP on a free port and waits until it listens (and its pool has warmed). */
export async function startHttpSvc(options: StartHttpSvcOptions = {}): Promise<HttpSvc> {
  const {
    config = fixtureConfig(),
    env = {},
    args = [],
    pwsh = TEST_PWSH,
    main = `${root}main.ts`,
    warm = true,
  } = options;
  const [command = Deno.execPath(), ...before] = [...(options.wrapper ?? []), Deno.execPath()];
  const dir = await Deno.makeTempDir({ prefix: "svc-http-" });
  await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config, null, 2));
  const child = new Deno.Command(command, {
    args: [
      ...before,
      "run",
      "--allow-all",
      "--quiet",
      main,
      "serve",
      "--transport",
      "http",
      "--port",
      "0",
      "--config",
      `${dir}/appsettings.json`,
      "--pwsh",
      pwsh,
      ...args,
    ],
    env: {
      ...Deno.env.toObject(),
      SVC_CACHE_DIR: SHARED_CATALOG_CACHE,
      ...SHARED_HOST_CACHE,
      SVC_LOG_LEVEL: "debug",
      ...env,
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const serving = await followHttpSvc(child, { warm });
  return {
    ...serving,
    dir,
    async [Symbol.asyncDispose]() {
      await serving.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** A `svc serve --transport http` child process, followed through its log. */
export interface ServingProcess {
  /** Base URL, from svc's log: `http://127.0.0.1:41234`. */
  url: string;
  /** Pid of svc. */
  pid: number;
  /** svc's stderr so far. */
  stderr(): string;
  /** Sends a signal (default SIGTERM) and waits for the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/**
 * Follows `child`, a `svc serve --transport http` spawned with `stderr: "piped"`, until its log says
 * where it listens and, with `warm`, that its pool's warm-up ended; fails with its log if it exits
 * first, and kills it if it never listens.
 */
export async function followHttpSvc(
  child: Deno.ChildProcess,
  options: { warm: boolean },
): Promise<ServingProcess> {
  let log = "";
  let resolveUrl!: (url: string) => void;
  const listening = new Promise<string>((resolve) => (resolveUrl = resolve));
  (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) {
      log += decoder.decode(chunk, { stream: true });
      // svc listens while its pool warms; tests start from a warmed pool (or one whose warm-up
      // has failed), as a load balancer would by waiting for /health/ready.
      const match = /listening on (https?:\/\/\S+):(\d+)/.exec(log);
      if (match && (!options.warm || /Startup complete: \d+\/\d+ workers initialized/.test(log))) {
        resolveUrl(`${match[1]}:${match[2]}`);
      }
    }
  })().catch(() => {});
  const exited = child.status;
  let stopped: Promise<number> | null = null;
  const stop = (signal: Deno.Signal = "SIGTERM") => {
    if (!stopped) {
      try {
        child.kill(signal);
      } catch { /* already gone */ }
      stopped = exited.then((s) => s.code);
    }
    return stopped;
  };
  try {
    const url = await unlessExited(listening, "svc to listen", child, () => log);
    return { url, pid: child.pid, stderr: () => log, stop };
  } catch (error) {
    await stop("SIGKILL");
    throw error;
  }
}

/**
 * A 2026-07-28 `tools/call` of `name` POSTed by hand to `<url>/mcp` with a JSON answer, so a test
 * sees each round of a call that asks for input. `params` join the call's (`arguments`,
 * `requestState`, `inputResponses`; `arguments` default `{}`); `capabilities` are the client's
 * (default `{ elicitation: {} }`); `headers` are added (an API key).
 */
export function modernToolCall(
  url: string,
  name: string,
  params: Record<string, unknown> = {},
  options: { capabilities?: Record<string, unknown>; headers?: Record<string, string> } = {},
): ReturnType<typeof post> {
  return post(`${url}/mcp`, {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: {
      name,
      arguments: {},
      ...params,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
        "io.modelcontextprotocol/clientCapabilities": options.capabilities ?? { elicitation: {} },
      },
    },
  }, {
    accept: "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": name,
    ...options.headers,
  });
}

/** POSTs JSON to svc and returns status, headers and parsed body (JSON or the SSE message data). */
export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: unknown; contentType: string }> {
  const response = await fetch(url, {
    signal: AbortSignal.timeout(DEFAULT_WAIT_MS),
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const contentType = response.headers.get("content-type") ?? "";
  const text = await response.text();
  let parsed: unknown = text;
  if (contentType.includes("text/event-stream")) {
    const data = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
    parsed = data.length > 0 ? JSON.parse(data[data.length - 1]!) : null;
  } else if (text) {
    try {
      parsed = JSON.parse(text);
    } catch { /* not JSON */ }
  }
  return { status: response.status, headers: response.headers, body: parsed, contentType };
}

export { errorOf } from "./http_front.ts";
