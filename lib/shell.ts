/**
 * One worker = one `pwsh` process running `host.ps1`, driven over the protocol of
 * `docs/worker-protocol.md`: spawn, private socket, hello, requests, stop, time limits, crash detection
 * and process-tree kill. This module knows nothing about tools or MCP; it is the only place that speaks
 * the worker protocol.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { RemoteError, WorkerError } from "./errors.ts";
import { writeHostFiles } from "./host_files.ts";
import { killTree } from "./process_tree.ts";
import { acceptHello } from "./worker_hello.ts";
import { logger } from "./log.ts";
import type {
  CommandsResult,
  DescribeResult,
  ErrorInfo,
  Interruption,
  InvokeOutcome,
  InvokeParams,
  InvokeResult,
  ResetResult,
  StartupParams,
  StartupResult,
  WorkerInfo,
} from "./worker_protocol.ts";

const log = logger("worker");
const IS_WINDOWS = Deno.build.os === "windows";
const MAX_FRAME_CHARS = 256 * 1024 * 1024;

/** Options of {@linkcode Worker.start}. */
export interface WorkerOptions {
  /** Absolute path of the pwsh executable (see `resolvePwsh` in `lib/pwsh_path.ts`). */
  pwsh: string;
  /** Time for the process to connect and say hello, in ms. @default 30000 */
  helloTimeoutMs?: number;
  /** Grace period after a stop or exit request before the process tree is killed, in ms. @default 5000 (`McpServer:RunspacePool:StopTimeout`) */
  stopTimeoutMs?: number;
  /** Label used in log lines. @default "worker" */
  label?: string;
}

/** Options of {@linkcode Worker.invoke}. */
export interface InvokeOptions {
  /** Cancels the call: the pipeline is stopped (then the tree killed after the stop timeout). */
  signal?: AbortSignal;
  /** Time limit of the call in ms. @default no limit */
  timeoutMs?: number;
}

interface Pending {
  id: number;
  op: string;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * A running PowerShell worker. Requests run one at a time; `invoke` can be stopped by time limit or
 * signal. An exiting process is noticed at once and fails the request in flight.
 */
export class Worker implements AsyncDisposable {
  readonly #child: Deno.ChildProcess;
  readonly #dir: string;
  readonly #label: string;
  readonly #stopTimeoutMs: number;
  #conn: Deno.Conn | null = null;
  #writer: WritableStreamDefaultWriter<Uint8Array> | null = null;
  #pending: Pending | null = null;
  #queue: Promise<unknown> = Promise.resolve();
  #nextId = 0;
  #exitCode: number | null = null;
  #exited: Promise<number>;
  #closing = false;
  #disconnected = false;
  #hello: ((frame: Record<string, unknown>) => void) | null = null;
  #diagnostics: string[] = [];
  #info: WorkerInfo | null = null;

  private constructor(child: Deno.ChildProcess, dir: string, label: string, stopTimeoutMs: number) {
    this.#child = child;
    this.#dir = dir;
    this.#label = label;
    this.#stopTimeoutMs = stopTimeoutMs;
    this.#exited = child.status.then((status) => {
      this.#exitCode = status.code;
      this.#onExit(status.code);
      return status.code;
    });
    this.#drain(child.stdout, "stdout");
    this.#drain(child.stderr, "stderr");
  }

  /** Spawns pwsh with the host script, waits for its hello and checks token and version. */
  static async start(options: WorkerOptions): Promise<Worker> {
    const { pwsh, helloTimeoutMs = 30_000, stopTimeoutMs = 5_000, label = "worker" } = options;
    const dir = await Deno.makeTempDir({ prefix: "svc-" });
    if (!IS_WINDOWS) await Deno.chmod(dir, 0o700);
    const token = randomBytes(32).toString("hex");
    let listener: Deno.Listener | undefined;
    let worker: Worker | undefined;
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
      let child: Deno.ChildProcess;
      try {
        child = new Deno.Command(pwsh, {
          args,
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
          // Its own process group, so the whole tree can be killed with one signal.
          detached: !IS_WINDOWS,
          env: {
            SVC_WORKER_TOKEN: token,
            POWERSHELL_TELEMETRY_OPTOUT: "1",
            POWERSHELL_UPDATECHECK: "Off",
            NO_COLOR: "1",
          },
        }).spawn();
      } catch (error) {
        throw new WorkerError(
          "SPAWN_FAILED",
          `Cannot start PowerShell worker '${pwsh}': ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
      worker = new Worker(child, dir, label, stopTimeoutMs);
      await worker.#connect(listener, token, helloTimeoutMs);
      return worker;
    } catch (error) {
      if (worker) await worker.kill();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw error;
    } finally {
      try {
        listener?.close();
      } catch { /* already closed */ }
    }
  }

  /** The worker's process id. */
  get pid(): number {
    return this.#child.pid;
  }

  /** Facts from the hello frame (PowerShell version, edition, OS). */
  get info(): WorkerInfo {
    return this.#info!;
  }

  /** True until the process has exited or the worker is being closed. */
  get alive(): boolean {
    return this.#exitCode === null && !this.#closing && !this.#disconnected;
  }

  /** Exit code once the process has exited, else null. */
  get exitCode(): number | null {
    return this.#exitCode;
  }

  /** Resolves with the exit code when the process exits. */
  get exited(): Promise<number> {
    return this.#exited;
  }

  /** Imports modules, runs the startup script and records the reset snapshot. */
  startup(params: StartupParams, timeoutMs?: number): Promise<StartupResult> {
    return this.#request("startup", params, timeoutMs) as Promise<StartupResult>;
  }

  /** Lists candidate commands by exact name, module and wildcard. */
  commands(
    params: { names: string[]; modules: string[]; patterns: string[] },
  ): Promise<CommandsResult> {
    return this.#request("commands", params) as Promise<CommandsResult>;
  }

  /** Returns the metadata (and optionally help) of named commands. */
  describe(names: string[], help = true): Promise<DescribeResult> {
    return this.#request("describe", { names, help }) as Promise<DescribeResult>;
  }

  /** Restores the post-startup snapshot. */
  reset(): Promise<ResetResult> {
    return this.#request("reset", {}, this.#stopTimeoutMs * 6) as Promise<ResetResult>;
  }

  /**
   * Runs one command. On time limit or abort the pipeline is stopped; when it does not answer within
   * the stop timeout the process tree is killed and a `TIMEOUT`/`CANCELLED` WorkerError is thrown.
   */
  invoke(params: InvokeParams, options: InvokeOptions = {}): Promise<InvokeOutcome> {
    return this.#exclusive(async () => {
      const { id, response } = this.#send("invoke", params);
      const interruption = interruptionOf(options);
      try {
        const first = await Promise.race([
          response.then((result) => ({ result: result as InvokeResult })),
          interruption.promise,
        ]);
        if ("result" in first) return { result: first.result, interrupted: null };
        const reason = first.interrupted;
        log.debug("Stopping call {Id} on worker {Pid}: {Reason}.", {
          Id: id,
          Pid: this.pid,
          Reason: reason,
        });
        await this.#notify({ op: "stop", params: { id } });
        const stopped = await Promise.race([
          response.then((result) => result as InvokeResult),
          delay(this.#stopTimeoutMs).then(() => null),
        ]);
        if (stopped) return { result: { ...stopped, stopped: true }, interrupted: reason };
        await this.kill();
        const what = reason === "timeout" ? "timed out" : "was cancelled";
        throw new WorkerError(
          reason === "timeout" ? "TIMEOUT" : "CANCELLED",
          `Command '${params.command}' ${what} and did not stop within ${
            this.#stopTimeoutMs / 1000
          } s, so its worker process tree was killed`,
        );
      } finally {
        interruption.dispose();
        response.catch(() => {});
      }
    }) as Promise<InvokeOutcome>;
  }

  /** Asks the worker to exit; kills its process tree if it has not exited within the stop timeout. */
  async close(): Promise<void> {
    if (this.#exitCode === null && !this.#closing) {
      this.#closing = true;
      // Closing does not wait for a running call: it is stopped, and fails instead of hanging.
      const running = this.#pending;
      if (running?.op === "invoke") await this.#notify({ op: "stop", params: { id: running.id } });
      this.#fail(
        new WorkerError("CLOSED", "PowerShell worker was closed while a request was running"),
      );
      try {
        const { response } = this.#send("exit", {});
        await Promise.race([response.catch(() => {}), delay(this.#stopTimeoutMs)]);
      } catch { /* connection already gone */ }
      const exited = await Promise.race([
        this.#exited.then(() => true),
        delay(this.#stopTimeoutMs).then(() => false),
      ]);
      if (!exited) await this.kill();
    }
    await this.#exited;
    await this.#cleanup();
  }

  /** Kills the worker's whole process tree at once and waits for the process to be reaped. */
  async kill(): Promise<void> {
    this.#closing = true;
    if (this.#exitCode === null) await killTree(this.#child);
    await this.#exited;
    await this.#cleanup();
  }

  /** Closes the worker (see {@linkcode Worker.close}). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #connect(listener: Deno.Listener, token: string, timeoutMs: number): Promise<void> {
    const timeout = delay(timeoutMs);
    const died = this.#exited.then((code) => new Died(code));
    const accepted = await Promise.race([
      listener.accept(),
      died,
      timeout.then(() => "timeout" as const),
    ]);
    if (accepted === "timeout") {
      throw new WorkerError(
        "HELLO_TIMEOUT",
        `PowerShell worker did not connect within ${timeoutMs / 1000} s${this.#diagnosticTail()}`,
      );
    }
    if (accepted instanceof Died) {
      throw new WorkerError(
        "EXITED",
        `PowerShell worker exited with code ${accepted.code} before connecting${this.#diagnosticTail()}`,
        { exitCode: accepted.code },
      );
    }
    this.#conn = accepted;
    this.#writer = accepted.writable.getWriter();
    const hello = new Promise<Record<string, unknown>>((resolve) => (this.#hello = resolve));
    this.#readFrames(accepted);
    const frame = await Promise.race([hello, died, timeout.then(() => "timeout" as const)]);
    if (frame === "timeout") {
      throw new WorkerError(
        "HELLO_TIMEOUT",
        `PowerShell worker sent no hello within ${timeoutMs / 1000} s`,
      );
    }
    if (frame instanceof Died) {
      throw new WorkerError(
        "EXITED",
        `PowerShell worker exited with code ${frame.code} during its handshake${this.#diagnosticTail()}`,
        { exitCode: frame.code },
      );
    }
    this.#info = acceptHello(frame, token, this.pid);
  }

  async #readFrames(conn: Deno.Conn): Promise<void> {
    const decoder = new TextDecoder();
    let parts: string[] = [];
    let size = 0;
    try {
      for await (const chunk of conn.readable) {
        let text = decoder.decode(chunk, { stream: true });
        let newline = text.indexOf("\n");
        while (newline >= 0) {
          parts.push(text.slice(0, newline));
          const line = parts.join("");
          parts = [];
          size = 0;
          this.#onFrame(line);
          text = text.slice(newline + 1);
          newline = text.indexOf("\n");
        }
        if (text) {
          parts.push(text);
          size += text.length;
          if (size > MAX_FRAME_CHARS) {
            this.#fail(new WorkerError("PROTOCOL", "PowerShell worker sent a frame over 256 MiB"));
            await this.kill();
            return;
          }
        }
      }
    } catch (error) {
      if (!this.#closing) {
        log.debug("Worker {Pid} socket error: {Error}", { Pid: this.pid, Error: String(error) });
      }
    }
    // The socket ended: the worker is gone or broken, and no new request may be given to it even
    // before its exit is reaped. Wait briefly for the exit code to name it.
    this.#disconnected = true;
    if (!this.#closing && this.#exitCode === null) {
      const code = await Promise.race([this.#exited, delay(500).then(() => null)]);
      if (code === null) {
        this.#fail(
          new WorkerError("CLOSED", "PowerShell worker closed its connection unexpectedly"),
        );
        await this.kill();
      }
    }
  }

  #onFrame(line: string): void {
    if (line.trim() === "") return;
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(line);
    } catch {
      this.#fail(
        new WorkerError(
          "PROTOCOL",
          `PowerShell worker sent a frame that is not JSON: ${line.slice(0, 80)}`,
        ),
      );
      return;
    }
    if (this.#hello) {
      const hello = this.#hello;
      this.#hello = null;
      hello(frame);
      return;
    }
    const pending = this.#pending;
    if (!pending || frame.id !== pending.id) {
      log.warning("Worker {Pid} sent an unexpected frame with id {Id}.", {
        Pid: this.pid,
        Id: frame.id,
      });
      return;
    }
    this.#pending = null;
    if (frame.ok === true) {
      pending.resolve(frame.result ?? {});
    } else {
      const error = (frame.error ?? {}) as { kind?: string; message?: string; record?: ErrorInfo };
      pending.reject(
        new RemoteError(
          error.kind ?? "internal",
          error.message ?? "unknown error",
          error.record ?? null,
        ),
      );
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
    if (!this.#closing) {
      log.warning("PowerShell worker {Pid} exited with code {Code}.", {
        Pid: this.pid,
        Code: code,
      });
    }
    this.#fail(
      new WorkerError(
        "EXITED",
        `PowerShell worker exited with code ${code}${this.#diagnosticTail()}`,
        {
          exitCode: code,
        },
      ),
    );
    try {
      this.#conn?.close();
    } catch { /* already closed */ }
  }

  #fail(error: Error): void {
    const pending = this.#pending;
    this.#pending = null;
    pending?.reject(error);
  }

  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => {});
    return run;
  }

  #request(op: string, params: unknown, timeoutMs?: number): Promise<unknown> {
    return this.#exclusive(async () => {
      const { response } = this.#send(op, params);
      if (timeoutMs === undefined) return await response;
      const timer = delay(timeoutMs).then(() => "timeout" as const);
      const first = await Promise.race([response, timer]);
      if (first === "timeout") {
        response.catch(() => {});
        await this.kill();
        throw new WorkerError(
          "TIMEOUT",
          `PowerShell worker did not finish '${op}' within ${timeoutMs / 1000} s`,
        );
      }
      return first;
    });
  }

  #send(op: string, params: unknown): { id: number; response: Promise<unknown> } {
    const id = ++this.#nextId;
    if (this.#exitCode !== null) {
      const error = new WorkerError(
        "EXITED",
        `PowerShell worker exited with code ${this.#exitCode}`,
        {
          exitCode: this.#exitCode,
        },
      );
      return { id, response: Promise.reject(error) };
    }
    const response = new Promise<unknown>((resolve, reject) => {
      this.#pending = { id, op, resolve, reject };
    });
    this.#write({ id, op, params }).catch((error) =>
      this.#fail(new WorkerError("CLOSED", `Cannot send '${op}' to PowerShell worker: ${error}`))
    );
    return { id, response };
  }

  async #notify(frame: unknown): Promise<void> {
    await this.#write(frame).catch(() => {});
  }

  #write(frame: unknown): Promise<void> {
    if (!this.#writer) return Promise.reject(new Error("not connected"));
    return this.#writer.write(new TextEncoder().encode(JSON.stringify(frame) + "\n"));
  }

  async #drain(stream: ReadableStream<Uint8Array>, name: string): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) {
        const text = decoder.decode(chunk, { stream: true });
        this.#diagnostics.push(text);
        if (this.#diagnostics.length > 64) this.#diagnostics.shift();
        log.debug("{Label} {Pid} {Stream}: {Text}", {
          Label: this.#label,
          Pid: this.pid,
          Stream: name,
          Text: text.trimEnd(),
        });
      }
    } catch { /* process gone */ }
  }

  #diagnosticTail(): string {
    const text = this.#diagnostics.join("").trim().split("\n").slice(-3).join(" | ").slice(-600);
    return text ? ` (worker output: ${text})` : "";
  }

  async #cleanup(): Promise<void> {
    try {
      this.#conn?.close();
    } catch { /* already closed */ }
    this.#conn = null;
    await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }
}

/** Marks the process exit in races against the handshake. */
class Died {
  constructor(readonly code: number) {}
}

function interruptionOf(options: InvokeOptions): {
  promise: Promise<{ interrupted: Interruption }>;
  dispose: () => void;
} {
  const { signal, timeoutMs } = options;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const promise = new Promise<{ interrupted: Interruption }>((resolve) => {
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => resolve({ interrupted: "timeout" }), timeoutMs);
    }
    if (signal) {
      onAbort = () => resolve({ interrupted: "cancelled" });
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    }
  });
  return {
    promise,
    dispose() {
      clearTimeout(timer);
      if (signal && onAbort) signal.removeEventListener("abort", onAbort);
    },
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    // A pending grace timer must not keep the process alive on shutdown.
    Deno.unrefTimer(timer);
  });
}
