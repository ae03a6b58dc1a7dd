/**
 * One `pwsh` process running `host.ps1` (protocol §1): spawn, the private listener it connects to, the
 * hellos of its slots, its diagnostics, and the kill of its whole tree. A process serves one or more
 * slots; each slot is a connection of its own with a runspace of its own, driven by a `RunspaceWorker`
 * (`lib/worker.ts`). This module knows the process, not the requests.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { hostCacheDirectory } from "./cache_directory.ts";
import { WorkerError } from "./errors.ts";
import { hostSourceDigest, writeHostFiles } from "./host_files.ts";
import { logger } from "./log.ts";
import { killTree } from "./process_tree.ts";
import { acceptHello, helloWarnings } from "./worker_hello.ts";
import type { WorkerEnvironmentRules } from "./config.ts";
import { DEFAULT_WORKER_ENVIRONMENT, workerInheritedEnvironment } from "./worker_env.ts";
import type { WorkerInfo } from "./worker_protocol.ts";

const log = logger("worker");
/** The warnings of {@linkcode helloWarnings} logged so far: each is said once per svc run. */
const warned = new Set<string>();

function warnOnce(info: WorkerInfo): void {
  for (const warning of helloWarnings(info)) {
    if (warned.has(warning)) continue;
    warned.add(warning);
    log.warning("{Warning}.", { Warning: warning });
  }
}
const IS_WINDOWS = Deno.build.os === "windows";
const MAX_HELLO_BYTES = 64 * 1024;

/**
 * Variables that only shape how pwsh itself starts. Each worker gets them unless svc's own
 * environment already decides the matter (`decidedBy` matches one of its names); the host removes
 * the ones svc added (named in `SVC_WORKER_STARTUP_ENV`) once it runs, so user code and the programs
 * it starts see only the environment `lib/worker_env.ts` passes.
 */
const STARTUP_ONLY_ENV: readonly { name: string; value: string; decidedBy: RegExp }[] = [
  // No debugger, profiler or EventPipe endpoint per worker: on Unix each is a socket or FIFO in the
  // temp directory, left there whenever a worker is killed. Any of the runtime's diagnostics
  // settings (also the older COMPlus_ prefix and the finer _IPC, _Debugger, _Profiler) is the
  // user's choice instead.
  {
    name: "DOTNET_EnableDiagnostics",
    value: "0",
    decidedBy: /^(DOTNET|COMPlus)_(EnableDiagnostics|DiagnosticPorts)/i,
  },
  // No Enter-PSHostProcess listener (PowerShell 7.6 and later; earlier versions ignore it): one
  // thread and socket less per worker, and no way for another process into its runspaces.
  {
    name: "POWERSHELL_DIAGNOSTICS_OPTOUT",
    value: "1",
    decidedBy: /^POWERSHELL_DIAGNOSTICS_OPTOUT$/i,
  },
  // A 4 MB gen0 budget instead of the one the GC derives from the L3 cache (tens of MB on a server
  // CPU, committed in every worker process): 14-15 MB less per process idle and under load, no
  // slower calls (docs/runspaces.md, "Memory").
  {
    name: "DOTNET_GCgen0size",
    value: "0x400000",
    decidedBy: /^(DOTNET|COMPlus)_GCgen0size$/i,
  },
];

/**
 * The whole environment a worker starts with: svc's own without its settings and credentials
 * (`lib/worker_env.ts`), and what pwsh needs to start (see {@linkcode STARTUP_ONLY_ENV}).
 */
function workerEnvironment(token: string, rules: WorkerEnvironmentRules): Record<string, string> {
  const env = Deno.env.toObject();
  const own = Object.keys(env);
  const added = STARTUP_ONLY_ENV.filter(({ decidedBy }) =>
    !own.some((name) => decidedBy.test(name))
  );
  return {
    ...workerInheritedEnvironment(env, rules),
    SVC_WORKER_TOKEN: token,
    POWERSHELL_TELEMETRY_OPTOUT: "1",
    POWERSHELL_UPDATECHECK: "Off",
    NO_COLOR: "1",
    ...Object.fromEntries(added.map(({ name, value }) => [name, value])),
    SVC_WORKER_STARTUP_ENV: added.map(({ name }) => name).join(","),
  };
}

/** Options of {@linkcode WorkerProcess.start}. */
export interface WorkerProcessOptions {
  /** Absolute path of the pwsh executable (see `resolvePwsh` in `lib/pwsh_path.ts`). */
  pwsh: string;
  /** Time for a slot to connect and say hello, in ms. @default 30000 */
  helloTimeoutMs?: number;
  /**
   * Grace period, in ms, for a stopped call or a process whose last slot has closed before the tree is
   * killed. @default 5000 (`McpServer:RunspacePool:StopTimeout`)
   */
  stopTimeoutMs?: number;
  /** Most slots (workers) the process serves at once (`RunspacesPerProcess`). @default 1 */
  runspacesPerProcess?: number;
  /** Label used in log lines. @default "worker" */
  label?: string;
  /**
   * Where the compiled half of the host is kept between starts (`lib/host/assembly.ps1`); null keeps
   * none, so every start compiles it (about a second of CPU).
   * @default where the host is kept when no cache setting is given (`hostCacheDirectory` of
   *   `lib/cache_directory.ts`: the user cache directory)
   */
  cacheDirectory?: string | null | undefined;
  /**
   * Quiet time, in ms, after which the process gives memory back (`lib/host/cs/IdleTrim.cs`, no call
   * running and no frame for that long). @default 5000
   */
  idleTrimMs?: number;
  /** Which of svc's variables the worker gets (`lib/worker_env.ts`). @default none of svc's settings */
  environment?: WorkerEnvironmentRules;
  /**
   * Called once pwsh has been spawned, before its hello: a caller with start work of its own (the
   * HTTP transport loading its front) does it then, while the process starts. @default none
   */
  onSpawn?: () => void;
}

/** A slot's connection, after its hello was checked. */
export interface SlotConnection {
  /** Slot number: 0 for the first, then as given to {@linkcode WorkerProcess.reserveSlot}. */
  slot: number;
  conn: Deno.Conn;
  /** Bytes that arrived after the hello, to be read before the connection's stream. */
  rest: Uint8Array;
  info: WorkerInfo;
}

interface Waiter {
  resolve: (connection: SlotConnection) => void;
  reject: (error: Error) => void;
}

/** A running worker process and its slots (see the module documentation). */
export class WorkerProcess {
  readonly #child: Deno.ChildProcess;
  readonly #dir: string;
  readonly #token: string;
  readonly #listener: Deno.Listener;
  readonly #options: Required<WorkerProcessOptions>;
  readonly #waiters = new Map<number, Waiter>();
  readonly #exited: Promise<number>;
  readonly #gone: Promise<void>;
  #exitCode: number | null = null;
  #diagnostics: string[] = [];
  #nextSlot = 0;
  #reserved = 0;
  #retiring = false;
  #ending = false;
  /** The process runs one worker, whatever `runspacesPerProcess` allows. */
  #alone = false;

  private constructor(
    child: Deno.ChildProcess,
    dir: string,
    token: string,
    listener: Deno.Listener,
    options: Required<WorkerProcessOptions>,
  ) {
    this.#child = child;
    this.#dir = dir;
    this.#token = token;
    this.#listener = listener;
    this.#options = options;
    this.#exited = child.status.then((status) => {
      this.#exitCode = status.code;
      this.#onExit(status.code);
      return status.code;
    });
    // However the process ended (asked to, killed, crashed), its directory goes with it: a crashed
    // worker in a stdio session is replaced without being closed, and left one per start before.
    this.#gone = this.#exited.then(() => this.#cleanup());
    this.#drain(child.stdout, "stdout");
    this.#drain(child.stderr, "stderr");
    this.#acceptSlots();
  }

  /** Spawns pwsh with the host script and waits for slot 0's hello. Kills the process on failure. */
  static async start(
    options: WorkerProcessOptions,
  ): Promise<{ process: WorkerProcess; first: SlotConnection }> {
    const settings: Required<WorkerProcessOptions> = {
      helloTimeoutMs: 30_000,
      stopTimeoutMs: 5_000,
      label: "worker",
      ...options,
      runspacesPerProcess: options.runspacesPerProcess ?? 1,
      idleTrimMs: options.idleTrimMs ?? 5_000,
      environment: options.environment ?? DEFAULT_WORKER_ENVIRONMENT,
      onSpawn: options.onSpawn ?? (() => {}),
      cacheDirectory: options.cacheDirectory === undefined
        ? hostCacheDirectory({ cacheDirectory: null, hostCacheDirectory: null })
        : options.cacheDirectory,
    };
    const dir = await Deno.makeTempDir({ prefix: "svc-" });
    if (!IS_WINDOWS) await Deno.chmod(dir, 0o700);
    const token = randomBytes(32).toString("hex");
    let listener: Deno.Listener | undefined;
    let process: WorkerProcess | undefined;
    try {
      await writeHostFiles(dir);
      let endpoint: string;
      if (IS_WINDOWS) {
        const tcp = Deno.listen({ hostname: "127.0.0.1", port: 0 });
        endpoint = `tcp:127.0.0.1:${tcp.addr.port}`;
        listener = tcp;
      } else {
        const path = `${dir}/w.sock`;
        listener = Deno.listen({ transport: "unix", path });
        endpoint = `unix:${path}`;
      }
      const args = ["-NoLogo", "-NoProfile", "-NonInteractive"];
      if (IS_WINDOWS) args.push("-ExecutionPolicy", "Bypass");
      args.push("-File", `${dir}/host.ps1`, "-Endpoint", endpoint);
      if (settings.cacheDirectory) {
        args.push(
          "-AssemblyCache",
          settings.cacheDirectory,
          "-SourceDigest",
          await hostSourceDigest(),
        );
      }
      args.push("-IdleTrimMs", String(settings.idleTrimMs), "-RemoveScriptDirectory");
      let child: Deno.ChildProcess;
      try {
        child = new Deno.Command(settings.pwsh, {
          args,
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
          // Its own process group, so the whole tree can be killed with one signal.
          detached: !IS_WINDOWS,
          // Only what workerEnvironment keeps: svc's settings would otherwise reach every command.
          clearEnv: true,
          env: workerEnvironment(token, settings.environment),
        }).spawn();
      } catch (error) {
        throw new WorkerError(
          "SPAWN_FAILED",
          `Cannot start PowerShell worker '${settings.pwsh}': ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
      process = new WorkerProcess(child, dir, token, listener, settings);
      process.#reserved = 1;
      settings.onSpawn();
      const first = await process.#awaitSlot(0, "connect");
      // Without every member a reset reads, the process serves one call (each reset retires it) and
      // has one worker, so no sibling's call runs beside state the reset cannot see.
      if (first.info.missingMembers.length > 0) process.#alone = true;
      warnOnce(first.info);
      return { process, first };
    } catch (error) {
      if (process) await process.kill();
      else {
        try {
          listener?.close();
        } catch { /* already closed */ }
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
      throw error;
    }
  }

  /** The process id. */
  get pid(): number {
    return this.#child.pid;
  }

  /** Exit code once the process has exited, else null. */
  get exitCode(): number | null {
    return this.#exitCode;
  }

  /** Resolves with the exit code when the process exits. */
  get exited(): Promise<number> {
    return this.#exited;
  }

  /** Resolves once the process has exited and its private directory (host script, socket) is removed. */
  get gone(): Promise<void> {
    return this.#gone;
  }

  /** True once a slot was lost: the process takes no new slots and ends when its last slot closes. */
  get retiring(): boolean {
    return this.#retiring;
  }

  /** Grace period of a stop or exit before the tree is killed, in ms (see {@linkcode WorkerProcessOptions}). */
  get stopTimeoutMs(): number {
    return this.#options.stopTimeoutMs;
  }

  /** Label used in log lines. */
  get label(): string {
    return this.#options.label;
  }

  /** Slots connected or on their way. */
  get slots(): number {
    return this.#reserved;
  }

  /**
   * True while the process can take one more slot: up to `runspacesPerProcess`, one only when it
   * lacks engine members a reset reads (`WorkerInfo.missingMembers`).
   */
  get hasRoom(): boolean {
    return !this.#retiring && !this.#ending && this.#exitCode === null &&
      this.#reserved < (this.#alone ? 1 : this.#options.runspacesPerProcess);
  }

  /**
   * Takes a slot number for a new slot and starts waiting for its hello. The caller then asks a
   * connected slot to open it (an `open` frame) and awaits `connected`.
   */
  reserveSlot(): { slot: number; connected: Promise<SlotConnection> } {
    const slot = ++this.#nextSlot;
    this.#reserved++;
    const connected = this.#awaitSlot(slot, "open").catch((error) => {
      this.#reserved--;
      // A slot that never said hello may still be starting inside the process: take no more there.
      if (error instanceof WorkerError && error.code === "HELLO_TIMEOUT") this.retire();
      throw error;
    });
    return { slot, connected };
  }

  /** The process could not open `slot` (a `slot-failed` frame from one of its slots). */
  slotFailed(slot: number, message: string): void {
    const waiter = this.#waiters.get(slot);
    if (!waiter) return;
    this.#waiters.delete(slot);
    waiter.reject(
      new WorkerError(
        "SPAWN_FAILED",
        `PowerShell worker ${this.pid} could not open a runspace: ${message}`,
      ),
    );
  }

  /** A slot has closed. When it was the last, the process ends (and its tree is killed if it does not). */
  slotClosed(): void {
    this.#reserved = Math.max(0, this.#reserved - 1);
    if (this.#reserved > 0 || this.#ending) return;
    this.#ending = true;
    void (async () => {
      // A retiring process holds a stuck pipeline: killing it at once is the point.
      const exited = this.#retiring ? false : await Promise.race([
        this.#exited.then(() => true),
        delay(this.#options.stopTimeoutMs).then(() => false),
      ]);
      if (!exited) await this.kill();
    })();
  }

  /** Takes no new slots; the process is killed when its last slot closes. */
  retire(): void {
    this.#retiring = true;
  }

  /** Kills the whole process tree at once and waits for the process to be reaped. */
  async kill(): Promise<void> {
    this.#ending = true;
    if (this.#exitCode === null) await killTree(this.#child);
    await this.#gone;
  }

  /** The last lines the process printed, for error messages (empty when it printed nothing). */
  diagnosticTail(): string {
    const text = this.#diagnostics.join("").trim().split("\n").slice(-3).join(" | ").slice(-600);
    return text ? ` (worker output: ${text})` : "";
  }

  /** Waits for the hello of `slot`, failing on time-out or process exit. */
  #awaitSlot(slot: number, what: "connect" | "open"): Promise<SlotConnection> {
    const { helloTimeoutMs } = this.#options;
    return new Promise<SlotConnection>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(slot);
        reject(
          new WorkerError(
            "HELLO_TIMEOUT",
            `PowerShell worker did not ${
              what === "connect" ? "connect" : "open a runspace"
            } within ${helloTimeoutMs / 1000} s${this.diagnosticTail()}`,
          ),
        );
      }, helloTimeoutMs);
      Deno.unrefTimer(timer);
      this.#waiters.set(slot, {
        resolve: (connection) => {
          clearTimeout(timer);
          resolve(connection);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
    });
  }

  async #acceptSlots(): Promise<void> {
    try {
      for await (const conn of this.#listener) void this.#greet(conn);
    } catch { /* listener closed */ }
  }

  /** Reads a connection's first line and hands it to the waiter of the slot its hello names. */
  async #greet(conn: Deno.Conn): Promise<void> {
    const { line, rest } = await readFirstLine(conn, this.#options.helloTimeoutMs);
    let frame: Record<string, unknown> | null = null;
    try {
      frame = line === null ? null : JSON.parse(line);
    } catch { /* not JSON: a bad hello */ }
    const slot = typeof frame?.slot === "number" ? frame.slot : 0;
    try {
      if (frame === null || typeof frame !== "object") {
        throw new WorkerError("BAD_HELLO", "PowerShell worker's first frame was not a valid hello");
      }
      const info = acceptHello(frame, this.#token, this.pid);
      const waiter = this.#waiters.get(slot);
      if (!waiter) throw new WorkerError("BAD_HELLO", `nobody waits for slot ${slot}`);
      this.#waiters.delete(slot);
      waiter.resolve({ slot, conn, rest, info });
    } catch (error) {
      try {
        conn.close();
      } catch { /* already closed */ }
      const waiter = this.#waiters.get(slot) ?? this.#waiters.get(0);
      if (waiter) {
        this.#waiters.delete(slot);
        this.#waiters.delete(0);
        waiter.reject(error as Error);
      } else {
        log.warning("Worker {Pid} sent a connection svc did not ask for: {Error}", {
          Pid: this.pid,
          Error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }

  #onExit(code: number): void {
    // Processes the worker started (native commands, Start-Process) are in its process group; when
    // the worker dies, however it died, they go with it instead of living on as orphans.
    if (!IS_WINDOWS) {
      try {
        Deno.kill(-this.pid, "SIGKILL");
      } catch { /* the group is already empty */ }
    }
    if (!this.#ending) {
      log.warning("PowerShell worker {Pid} exited with code {Code}.", {
        Pid: this.pid,
        Code: code,
      });
    }
    const error = new WorkerError(
      "EXITED",
      `PowerShell worker exited with code ${code}${this.diagnosticTail()}`,
      { exitCode: code },
    );
    for (const waiter of this.#waiters.values()) waiter.reject(error);
    this.#waiters.clear();
  }

  async #drain(stream: ReadableStream<Uint8Array>, name: string): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) {
        const text = decoder.decode(chunk, { stream: true });
        this.#diagnostics.push(text);
        if (this.#diagnostics.length > 64) this.#diagnostics.shift();
        log.debug("{Label} {Pid} {Stream}: {Text}", {
          Label: this.#options.label,
          Pid: this.pid,
          Stream: name,
          Text: text.trimEnd(),
        });
      }
    } catch { /* process gone */ }
  }

  /** Closes the listener and removes the directory; run once, when the process has exited. */
  async #cleanup(): Promise<void> {
    try {
      this.#listener.close();
    } catch { /* already closed */ }
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }
}

/** Reads up to the first LF; what came after it is returned as `rest`. Null line on EOF or time-out. */
async function readFirstLine(
  conn: Deno.Conn,
  timeoutMs: number,
): Promise<{ line: string | null; rest: Uint8Array }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const buffer = new Uint8Array(16 * 1024);
  const deadline = delay(timeoutMs).then(() => null);
  while (size <= MAX_HELLO_BYTES) {
    const n = await Promise.race([conn.read(buffer).catch(() => null), deadline]);
    if (n === null) return { line: null, rest: new Uint8Array() };
    const chunk = buffer.slice(0, n);
    const newline = chunk.indexOf(10);
    if (newline < 0) {
      chunks.push(chunk);
      size += n;
      continue;
    }
    chunks.push(chunk.subarray(0, newline));
    const all = new Uint8Array(size + newline);
    let at = 0;
    for (const part of chunks) {
      all.set(part, at);
      at += part.length;
    }
    return { line: new TextDecoder().decode(all), rest: chunk.slice(newline + 1) };
  }
  return { line: null, rest: new Uint8Array() };
}

/** Resolves after `ms`; the timer does not keep the process alive. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    // A pending grace timer must not keep the process alive on shutdown.
    Deno.unrefTimer(timer);
  });
}
