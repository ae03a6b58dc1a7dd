/**
 * What the benchmarks run against. A target is svc (spawned here, over HTTP and/or stdio, with real
 * PowerShell), the SDK floor (`bench/floor_server.ts`, spawned here), any MCP
 * server over HTTP (`--url`), or any MCP server over stdio (`--stdio "<command line>"`). Every target
 * is reached through the SDK v2 `Client`: `StreamableHTTPClientTransport` at 2026-07-28 (pinned) or
 * 2025-11-25 (the SDK's default, a 2025-era handshake), and `StdioClientTransport` (2025-11-25 by default; a
 * pinned modern stdio client spawns a second probe process, see SDK-NOTES §8.7).
 *
 * @module
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { defaultCacheDirectory } from "../../lib/cache_directory.ts";
import { isAlive, type ProcessTracker, signal, sleep, stopTree, waitFor } from "./proc.ts";

/** Repository root (this file is bench/lib/targets.ts). */
export const REPO_ROOT: string = new URL("../../", import.meta.url).pathname;

/** Protocol era of a client. */
export type Era = "2026-07-28" | "2025-11-25";

/** The PowerShell svc is started with. */
export interface WorkerChoice {
  /** Executable path. */
  path: string;
  /** How it was chosen. */
  reason: string;
}

/** No PowerShell for svc: `bin/pwsh` found none and could not install one. */
export class WorkerNotFound extends Error {
  override name = "WorkerNotFound";
}

/**
 * The PowerShell for svc: `--pwsh <path>` if given, else the executable the repository's `bin/pwsh`
 * locates (`SVC_TEST_PWSH`, `SVC_PWSH`, `pwsh` on PATH, else PowerShell 7.6.10 installed from NuGet
 * into `.tools/` on first use), as the tests get theirs. Throws {@linkcode WorkerNotFound} with
 * `bin/pwsh`'s reason when it finds none.
 */
export function chooseWorker(explicit: string | undefined): WorkerChoice {
  if (explicit) return { path: explicit, reason: "--pwsh" };
  const output = new Deno.Command(`${REPO_ROOT}bin/pwsh`, {
    env: { SVC_PWSH_LOCATE: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes).trim();
  if (output.code !== 0) {
    throw new WorkerNotFound(`bin/pwsh found no PowerShell for svc: ${decode(output.stderr)}`);
  }
  return { path: decode(output.stdout), reason: "located by bin/pwsh" };
}

/** A tool as listed. */
export interface ToolInfo {
  name: string;
  title?: string | undefined;
  inputSchema: { properties?: Record<string, unknown>; required?: string[] };
}

/** A tool call result as received. */
export interface CallResult {
  content?: { type: string; text?: string }[];
  structuredContent?: Record<string, unknown> | undefined;
  isError?: boolean | undefined;
}

/** A connected MCP client. */
export interface McpClient {
  /** Negotiated protocol version. */
  readonly version: string;
  /** Lists tools (bypassing the client's response cache). */
  listTools(): Promise<ToolInfo[]>;
  /** Calls a tool. */
  call(
    name: string,
    args: Record<string, unknown>,
    options?: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<CallResult>;
  /** Pid of the server process behind this connection (stdio: the spawned one), if known. */
  readonly pid: number | null;
  /** Closes the connection (stdio: the server exits when its stdin closes). */
  close(): Promise<void>;
}

function newClient(era: Era): Client {
  return new Client(
    { name: "svc-bench", version: "1.0.0" },
    era === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {},
  );
}

function wrap(client: Client, pid: () => number | null, era: Era): McpClient {
  return {
    version: client.getNegotiatedProtocolVersion() ?? era,
    listTools: async () =>
      (await client.listTools(undefined, { cacheMode: "bypass" })).tools as ToolInfo[],
    call: async (name, args, options = {}) =>
      await client.callTool({ name, arguments: args }, {
        ...(options.signal ? { signal: options.signal } : {}),
        timeout: options.timeoutMs ?? 120_000,
      }) as CallResult,
    get pid() {
      return pid();
    },
    close: () => client.close(),
  };
}

/**
 * Connects an SDK v2 client over Streamable HTTP; `headers` go with every request (P7's API keys),
 * and `fetchWith` makes them (one that trusts a test certificate, for HTTPS).
 * @default headers none; fetchWith the global fetch
 */
export async function connectHttp(
  mcpUrl: string,
  era: Era,
  pid: number | null = null,
  headers: Record<string, string> = {},
  fetchWith?: typeof fetch,
): Promise<McpClient> {
  const client = newClient(era);
  await client.connect(
    new StreamableHTTPClientTransport(new URL(mcpUrl), {
      requestInit: { headers },
      ...(fetchWith ? { fetch: fetchWith } : {}),
    }),
  );
  return wrap(client, () => pid, era);
}

/** Keeps the last `limit` characters of a stream of text. */
class Tail {
  #text = "";
  constructor(readonly limit = 64 * 1024) {}
  push(chunk: string): void {
    this.#text += chunk;
    if (this.#text.length > this.limit * 2) this.#text = this.#text.slice(-this.limit);
  }
  get text(): string {
    return this.#text.slice(-this.limit);
  }
}

/** A stdio command line. */
export interface StdioCommand {
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
}

/** Spawns a stdio server through the SDK transport and connects; also returns its stderr tail. */
export async function connectStdio(
  cmd: StdioCommand,
  era: Era,
  tracker?: ProcessTracker,
): Promise<McpClient & { stderr(): string }> {
  const transport = new StdioClientTransport({
    command: cmd.command,
    args: cmd.args,
    env: { ...Deno.env.toObject(), ...cmd.env },
    ...(cmd.cwd ? { cwd: cmd.cwd } : {}),
    stderr: "pipe",
  });
  const tail = new Tail();
  const stream = transport.stderr as
    | { on(event: string, fn: (chunk: Uint8Array) => void): void }
    | null;
  const decoder = new TextDecoder();
  stream?.on("data", (chunk) => tail.push(decoder.decode(chunk, { stream: true })));
  const client = newClient(era);
  try {
    await client.connect(transport);
  } catch (error) {
    await client.close().catch(() => {});
    throw new Error(`stdio connect failed: ${(error as Error).message}\n${tail.text.slice(-2000)}`);
  }
  const pid = transport.pid;
  if (pid !== null && tracker) tracker.addTree(pid);
  const base = wrap(client, () => pid, era);
  return {
    ...base,
    get pid() {
      return pid;
    },
    stderr: () => tail.text,
    close: async () => {
      await client.close().catch(() => {});
      // The server should exit once its stdin closes; make sure it did.
      if (pid !== null && !(await waitFor(() => !isAlive(pid), 5_000))) signal(pid, "SIGKILL");
    },
  };
}

/** Splits a command line into words (single and double quotes, backslash escapes). */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let current = "";
  let quote: "'" | '"' | null = null;
  let started = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote) {
      if (ch === quote) quote = null;
      else if (ch === "\\" && quote === '"' && i + 1 < line.length) current += line[++i];
      else current += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      started = true;
    } else if (ch === "\\" && i + 1 < line.length) {
      current += line[++i];
      started = true;
    } else if (/\s/.test(ch)) {
      if (started) words.push(current);
      current = "";
      started = false;
    } else {
      current += ch;
      started = true;
    }
  }
  if (started) words.push(current);
  return words;
}

/** A server process the harness started that listens on HTTP. */
export interface HttpProcess {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  base: string;
  /** Pid of the server. */
  pid: number;
  /** ms from spawn to the "listening" log line. */
  listenMs: number;
  /** performance.now() at spawn. */
  spawnedAt: number;
  /** The server's stderr (tail). */
  stderr(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number>;
}

/**
 * Spawns `argv` with stdout discarded and stderr kept as a tail (each piece also given to
 * `onStderr`), tracked by `tracker`.
 */
function spawnLogged(
  argv: string[],
  options: { env?: Record<string, string>; cwd?: string },
  tracker?: ProcessTracker,
  onStderr: (text: string) => void = () => {},
): { child: Deno.ChildProcess; tail: Tail } {
  const child = new Deno.Command(argv[0]!, {
    args: argv.slice(1),
    env: { ...Deno.env.toObject(), ...options.env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  tracker?.add(child.pid, argv.join(" "));
  const tail = new Tail();
  (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) {
      const text = decoder.decode(chunk, { stream: true });
      tail.push(text);
      onStderr(text);
    }
  })().catch(() => {});
  return { child, tail };
}

/** Spawns a server that logs `listening on http(s)://host:port` to stderr and waits for that line. */
export async function spawnHttp(
  argv: string[],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
  tracker?: ProcessTracker,
): Promise<HttpProcess> {
  const spawnedAt = performance.now();
  let resolveUrl!: (url: string) => void;
  const listening = new Promise<string>((resolve) => (resolveUrl = resolve));
  let seen: string | null = "";
  const { child, tail } = spawnLogged(argv, options, tracker, (text) => {
    if (seen === null) return;
    seen += text;
    const match = /listening on (https?:\/\/[^\s:]+|https?:\/\/\[[^\]]+\]):(\d+)/.exec(seen);
    if (match) {
      resolveUrl(`${match[1]}:${match[2]}`);
      seen = null;
    } else if (seen.length > 1 << 16) seen = seen.slice(-4096);
  });
  const exited = child.status;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let base: string;
  try {
    base = await Promise.race([
      listening,
      exited.then((s) =>
        Promise.reject(new Error(`exited with ${s.code} before listening: ${tail.text}`))
      ),
      new Promise<string>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`did not listen: ${tail.text}`)),
          options.timeoutMs ?? 60_000,
        );
      }),
    ]);
  } catch (error) {
    clearTimeout(timer);
    signal(child.pid, "SIGKILL");
    await exited;
    throw error;
  }
  clearTimeout(timer);
  const listenMs = performance.now() - spawnedAt;
  let stopped: Promise<number> | null = null;
  return {
    base,
    pid: child.pid,
    listenMs,
    spawnedAt,
    stderr: () => tail.text,
    stop: (graceMs = 10_000) => {
      stopped ??= (async () => {
        signal(child.pid, "SIGTERM");
        const done = await Promise.race([
          exited.then(() => true),
          sleep(graceMs).then(() => false),
        ]);
        if (!done) signal(child.pid, "SIGKILL");
        return (await exited).code;
      })();
      return stopped;
    },
  };
}

/** A loopback TCP port that was free a moment ago (bound, then released for the server to take). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** A server started from `--http-command`: a command line the harness knows nothing else about. */
export interface CommandProcess {
  /** Base URL, `http://127.0.0.1:<port>`. */
  base: string;
  /** The MCP endpoint (base + `--http-path`). */
  mcpUrl: string;
  /** Pid of the spawned process (the root of the tree whose RSS is measured). */
  pid: number;
  /** performance.now() at spawn. */
  spawnedAt: number;
  /** Resolves with the exit code when the process ends. */
  exited: Promise<number>;
  /** The server's stderr (tail). */
  stderr(): string;
  /** SIGTERM, then SIGKILL to the whole tree after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number>;
}

/**
 * Spawns an HTTP server from a command line in which `{port}` stands for a free port the harness
 * picked, without waiting for anything (see {@linkcode connectWhenListing}). stdout is discarded
 * and stderr kept (tail); `options` adds environment variables and sets the working directory.
 * Throws when no word contains `{port}`.
 * @default options none: the harness's environment and working directory
 */
export function spawnCommand(
  template: string[],
  path: string,
  tracker?: ProcessTracker,
  options: { env?: Record<string, string>; cwd?: string } = {},
): CommandProcess {
  if (!template.some((word) => word.includes("{port}"))) {
    throw new Error(`--http-command needs {port} where the port goes, got '${template.join(" ")}'`);
  }
  const port = freePort();
  const argv = template.map((word) => word.replaceAll("{port}", String(port)));
  const spawnedAt = performance.now();
  const { child, tail } = spawnLogged(argv, options, tracker);
  const exited = child.status.then((s) => s.code);
  const base = `http://127.0.0.1:${port}`;
  let stopped: Promise<number> | null = null;
  return {
    base,
    mcpUrl: `${base}${path}`,
    pid: child.pid,
    spawnedAt,
    exited,
    stderr: () => tail.text,
    stop: (graceMs = 10_000) => {
      stopped ??= (async () => {
        await stopTree(child.pid, exited, graceMs);
        return await exited;
      })();
      return stopped;
    },
  };
}

/**
 * Connects to `mcpUrl` and lists the tools, retrying every `everyMs` (default 10) until a new
 * client's `tools/list` is answered: the first moment the server can serve a client. Throws after
 * `timeoutMs` (default 60 s), or at once when `exited` resolves first.
 */
export async function connectWhenListing(
  mcpUrl: string,
  era: Era,
  { timeoutMs = 60_000, everyMs = 10, exited, pid = null }: {
    timeoutMs?: number;
    everyMs?: number;
    exited?: Promise<number>;
    pid?: number | null;
  } = {},
): Promise<{ client: McpClient; tools: ToolInfo[] }> {
  const end = performance.now() + timeoutMs;
  let gone: number | null = null;
  exited?.then((code) => (gone = code));
  let last = "";
  while (performance.now() < end) {
    if (gone !== null) throw new Error(`exited with ${gone} before answering tools/list`);
    let client: McpClient | null = null;
    try {
      client = await connectHttp(mcpUrl, era, pid);
      return { client, tools: await client.listTools() };
    } catch (error) {
      last = (error as Error).message;
      await client?.close().catch(() => {});
      await sleep(everyMs);
    }
  }
  throw new Error(`${mcpUrl} did not answer tools/list within ${timeoutMs} ms: ${last}`);
}

/** Options for starting svc. */
export interface SvcOptions {
  /** Configuration (written to a temp file). */
  config: Record<string, unknown>;
  /** The worker. */
  worker: WorkerChoice;
  /** Catalog cache directory (a fresh temp dir when omitted). */
  cacheDir?: string;
  /**
   * Where workers keep the compiled host. @default the user cache directory, which stays warm from
   * run to run as it does for a user's later starts; a fresh directory measures a first run.
   */
  hostCacheDir?: string;
  /** Extra environment. */
  env?: Record<string, string>;
  /** svc checkout to run (default: this repository). */
  root?: string;
  /** Log level for svc. @default "Information" */
  logLevel?: string;
}

/** The configuration the benchmarks use: a few built-in cmdlets plus the fixture module. */
export function benchConfig(
  shell: Record<string, unknown> = {},
  pool: Record<string, unknown> = {},
  root = REPO_ROOT,
): Record<string, unknown> {
  return {
    ShellConfiguration: {
      Commands: ["Get-Date", "Start-Sleep", "Write-Output", "Set-Variable", "Get-Variable"],
      Modules: [`${root}tests/fixtures/SvcFixture/SvcFixture.psd1`],
      ...shell,
    },
    McpServer: { RunspacePool: { StopTimeout: "00:00:02", ...pool } },
  };
}

async function writeConfig(config: Record<string, unknown>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-" });
  await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config, null, 2));
  return dir;
}

/** Temp directories made for svc runs, removed by {@linkcode cleanupTempDirs}. */
const tempDirs: string[] = [];

/** Removes every temp directory the harness created. */
export async function cleanupTempDirs(): Promise<void> {
  for (const dir of tempDirs.splice(0)) await Deno.remove(dir, { recursive: true }).catch(() => {});
}

/** A temp directory that is removed at the end of the run. */
export async function tempDir(prefix = "svc-bench-"): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix });
  tempDirs.push(dir);
  return dir;
}

/** The argv and environment of `svc serve` for a transport, or of `svc doctor` on the same settings. */
export async function svcCommand(
  transport: "http" | "stdio" | "doctor",
  options: SvcOptions,
): Promise<{ argv: string[]; env: Record<string, string>; cwd: string }> {
  const root = options.root ?? REPO_ROOT;
  const dir = await writeConfig(options.config);
  tempDirs.push(dir);
  const argv = [
    Deno.execPath(),
    "run",
    "--allow-all",
    "--quiet",
    `--config=${root}deno.json`,
    `${root}main.ts`,
    ...(transport === "doctor" ? ["doctor"] : ["serve", "--transport", transport]),
    ...(transport === "http" ? ["--port", "0", "--host", "127.0.0.1"] : []),
    "--config",
    `${dir}/appsettings.json`,
    "--pwsh",
    options.worker.path,
  ];
  const env = {
    SVC_CACHE_DIR: options.cacheDir ?? `${dir}/cache`,
    // Each run's catalog cache starts empty; the compiled host, which depends on no configuration,
    // stays in the user cache as it does for a user's later starts.
    ...(options.hostCacheDir
      ? { SVC_HOST_CACHE_DIR: options.hostCacheDir }
      : defaultCacheDirectory()
      ? { SVC_HOST_CACHE_DIR: defaultCacheDirectory()! }
      : {}),
    SVC_LOG_LEVEL: options.logLevel ?? "Information",
    ...options.env,
  };
  return { argv, env, cwd: root };
}

/** Starts `svc serve --transport http --port 0` and waits until it listens. */
export async function startSvcHttp(
  options: SvcOptions,
  tracker?: ProcessTracker,
): Promise<HttpProcess> {
  const { argv, env, cwd } = await svcCommand("http", options);
  return await spawnHttp(argv, { env, cwd }, tracker);
}

/** The stdio command of svc. */
export async function svcStdioCommand(options: SvcOptions): Promise<StdioCommand> {
  const { argv, env, cwd } = await svcCommand("stdio", options);
  return { command: argv[0]!, args: argv.slice(1), env, cwd };
}

/** The argv of the SDK floor server. */
export function floorArgv(transport: "http" | "stdio", payload = false): string[] {
  return [
    Deno.execPath(),
    "run",
    "--allow-all",
    "--quiet",
    `--config=${REPO_ROOT}deno.json`,
    `${REPO_ROOT}bench/floor_server.ts`,
    "--transport",
    transport,
    ...(transport === "http" ? ["--port", "0"] : []),
    ...(payload ? ["--payload"] : []),
  ];
}

/** Starts the SDK floor over HTTP (`payload`: with the large-result tool). */
export async function startFloorHttp(
  tracker?: ProcessTracker,
  payload = false,
): Promise<HttpProcess> {
  return await spawnHttp(floorArgv("http", payload), { cwd: REPO_ROOT }, tracker);
}

/** The stdio command of the SDK floor (`payload`: with the large-result tool). */
export function floorStdioCommand(payload = false): StdioCommand {
  const argv = floorArgv("stdio", payload);
  return { command: argv[0]!, args: argv.slice(1), cwd: REPO_ROOT };
}

/** A benchmark role and the command whose tool plays it. */
export interface Role {
  /** The PowerShell command (the tool's `title` in svc). */
  command: string;
  /** Arguments the scenario passes; the tool must accept them and require nothing else. */
  params: string[];
}

/** The roles the scenarios use. */
export const ROLES = {
  date: { command: "Get-Date", params: [] },
  sleepMs: { command: "Start-Sleep", params: ["Milliseconds"] },
  sleepS: { command: "Start-Sleep", params: ["Seconds"] },
  large: { command: "Get-FixtureLargeResult", params: ["Kilobytes"] },
  echo: { command: "Write-Output", params: ["InputObject"] },
  exit: { command: "Invoke-FixtureExit", params: ["Code"] },
  stuck: { command: "Invoke-FixtureStuck", params: ["Seconds", "PidFile"] },
  slowReset: { command: "Import-SlowRemoveModule", params: ["Milliseconds"] },
} as const satisfies Record<string, Role>;

/** Name of a role. */
export type RoleName = keyof typeof ROLES;

function snake(command: string): string {
  return command.replace(/-/g, "_").replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
}

/**
 * The tool that plays `role`: an explicit `--tool role=name` if the server lists it, else the first listed tool whose title
 * (or snake-case name) is the role's command, that accepts the role's parameters and requires no
 * others (so `Get-Date`'s default parameter set wins over the sets that require `-UFormat`).
 */
export function resolveTool(
  tools: ToolInfo[],
  role: RoleName,
  overrides: Record<string, string> = {},
): string | null {
  // An override names another server's tool: where that tool is absent (svc, when --tool names
  // PoshMcp's), the role is looked up as usual, so one command line serves every target.
  const explicit = overrides[role];
  if (explicit && tools.some((t) => t.name === explicit)) return explicit;
  const { command, params } = ROLES[role];
  const base = snake(command);
  const fits = (tool: ToolInfo) => {
    const properties = Object.keys(tool.inputSchema.properties ?? {});
    const required = tool.inputSchema.required ?? [];
    return (params as readonly string[]).every((p) => properties.includes(p)) &&
      required.every((r) => (params as readonly string[]).includes(r));
  };
  const candidates = tools.filter((t) =>
    (t.title === command || t.name === base || t.name.startsWith(`${base}_`)) && fits(t)
  );
  return candidates.find((t) => t.name === base)?.name ?? candidates[0]?.name ?? null;
}

/** `[label, rest]` of a `label=rest` command-line value; `[fallback, value]` without a label. */
export function labelled(value: string, fallback: string): [string, string] {
  const match = /^([A-Za-z][\w.-]*)=(.*)$/.exec(value);
  return match ? [match[1]!, match[2]!] : [fallback, value];
}

/**
 * The command line of svc from the checkout a `[label=]<checkout>` value names, on the benchmark
 * configuration, with a catalog cache of its own; its label defaults to `svc`.
 */
export async function checkoutCommand(
  transport: "http" | "stdio",
  value: string,
  options: { worker: WorkerChoice; logLevel?: string | undefined },
): Promise<{ label: string; argv: string[]; env: Record<string, string>; cwd: string }> {
  const [label, given] = labelled(value, "svc");
  const root = `${Deno.realPathSync(given)}/`;
  const command = await svcCommand(transport, {
    config: benchConfig({}, {}, root),
    worker: options.worker,
    root,
    cacheDir: `${await tempDir()}/cache`,
    ...(options.logLevel === undefined ? {} : { logLevel: options.logLevel }),
  });
  return { label, ...command };
}
