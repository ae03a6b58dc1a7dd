/**
 * One worker = one runspace of a `pwsh` process running `host.ps1` (its slot), driven over the
 * protocol of `docs/worker-protocol.md`: requests, stop, time limits, crash detection and kill. The
 * process itself (spawn, hello, process-tree kill) is `lib/worker_process.ts`. This module knows
 * nothing about tools or MCP; it is the only place that sends requests.
 *
 * @module
 */
import { type ErrorInfo, RemoteError, WorkerError } from "./errors.ts";
import { logger } from "./log.ts";
import { frameSplitter } from "./worker_frames.ts";
import { promptRelay, withPrompts } from "./worker_prompts.ts";
import { callFrameBytes, callLimits, DISCOVERY_FRAME_BYTES } from "./output_limits.ts";
import {
  delay,
  type SlotConnection,
  WorkerProcess,
  type WorkerProcessOptions,
} from "./worker_process.ts";
import {
  type CallListeners,
  type CommandRun,
  deliverNotice,
  interruptionOf,
  type InvokeOptions,
  invokeRequest,
  NOTICE_TYPES,
  retireReason,
} from "./worker_request.ts";
import type {
  CallLimits,
  CommandsResult,
  DescribeResult,
  InvokeOutcome,
  InvokeParams,
  InvokeResult,
  PromptAnswer,
  ResetResult,
  SourcesResult,
  StartupParams,
  StartupResult,
  WorkerInfo,
  WorkerProgress,
  WorkerPrompt,
} from "./worker_protocol.ts";

// What a caller gives a worker and reads from it, so callers need not know the protocol module.
export type {
  CommandRun,
  InvokeOptions,
  InvokeOutcome,
  PromptAnswer,
  StartupResult,
  WorkerInfo,
  WorkerProgress,
  WorkerPrompt,
};

const log = logger("worker");
/** Requests whose answers are sized by the configured modules, not by a caller (see output_limits.ts). */
const DISCOVERY_OPS = new Set(["startup", "commands", "describe", "sources"]);

/**
 * Options of {@linkcode RunspaceWorker.start}: those of the process it starts (`pwsh`, timeouts,
 * `runspacesPerProcess`, label, cache directory, environment), and the worker's own limits.
 */
export interface WorkerOptions extends WorkerProcessOptions {
  /**
   * Working set in MB above which a reset retires the worker's process (`McpServer:RunspacePool:MaxWorkerMemoryMB`).
   * @default null (no ceiling)
   */
  maxWorkerMemoryMB?: number | null;
  /**
   * `ShellConfiguration:MaxResultBytes`: every invoke carries the limits derived from it, and a frame
   * larger than a call can then produce retires the worker (`lib/output_limits.ts`).
   * @default null (calls are not bounded; frames up to 256 MiB are read)
   */
  maxResultBytes?: number | null;
}

interface Pending {
  id: number;
  op: string;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
  /** Who takes the invoke's notification frames. */
  listeners?: CallListeners;
  /** The reset the worker runs after answering this invoke (`thenReset`): pending from then on. */
  then?: Pending;
  /** Output bytes the invoke may send beyond its limits (`CommandRun.keepOutputBytes`). @default 0 */
  keptBytes?: number;
}

/** Failures of an invoke refused before it ran, which no chained reset follows. */
const REFUSED = new Set(["protocol", "busy"]);

/**
 * A running PowerShell worker. Requests run one at a time; `invoke` can be stopped by time limit or
 * signal. An exiting process is noticed at once and fails the request in flight.
 */
export class RunspaceWorker implements AsyncDisposable {
  readonly #process: WorkerProcess;
  readonly #conn: Deno.Conn;
  // Frames are written in order, one after the other: a partial write must not interleave with the next.
  #writing: Promise<void> = Promise.resolve();
  readonly #info: WorkerInfo;
  readonly #label: string;
  readonly #stopTimeoutMs: number;
  readonly #maxWorkingSetBytes: number | null;
  readonly #maxResultBytes: number | null;
  readonly #limits: CallLimits | null;
  readonly #ended: Promise<void>;
  #pending: Pending | null = null;
  /** The answer of the reset chained to the last invoke, until `reset()` or the next request takes it. */
  #chained: Promise<unknown> | null = null;
  #queue: Promise<unknown> = Promise.resolve();
  #nextId = 0;
  #closing = false;
  #disconnected = false;
  #released = false;
  private constructor(
    process: WorkerProcess,
    connection: SlotConnection,
    label: string,
    maxWorkerMemoryMB: number | null,
    maxResultBytes: number | null,
  ) {
    this.#maxWorkingSetBytes = maxWorkerMemoryMB === null ? null : maxWorkerMemoryMB * 1024 * 1024;
    this.#maxResultBytes = maxResultBytes;
    this.#limits = maxResultBytes === null ? null : callLimits(maxResultBytes);
    this.#process = process;
    this.#conn = connection.conn;
    this.#info = connection.info;
    this.#label = label;
    this.#stopTimeoutMs = process.stopTimeoutMs;
    process.exited.then((code) => this.#onExit(code));
    this.#ended = this.#readFrames(connection);
  }

  /** Spawns pwsh with the host script, waits for its hello and checks token and version. */
  static async start(options: WorkerOptions): Promise<RunspaceWorker> {
    const { maxWorkerMemoryMB, maxResultBytes, ...rest } = options;
    const { process, first } = await WorkerProcess.start(rest);
    return new RunspaceWorker(
      process,
      first,
      process.label,
      maxWorkerMemoryMB ?? null,
      maxResultBytes ?? null,
    );
  }

  /**
   * Opens another worker in this worker's process (a runspace of its own, a fraction of a process's
   * start cost and memory). Works while this worker runs a call. Check `process.hasRoom` first.
   */
  async openSibling(label = this.#label): Promise<RunspaceWorker> {
    const { slot, connected } = this.#process.reserveSlot();
    await this.#notify({ op: "open", params: { slot } });
    const ceiling = this.#maxWorkingSetBytes === null
      ? null
      : this.#maxWorkingSetBytes / 1024 / 1024;
    return new RunspaceWorker(this.#process, await connected, label, ceiling, this.#maxResultBytes);
  }

  /** The process this worker runs in, shared with its siblings. */
  get process(): WorkerProcess {
    return this.#process;
  }

  /** The worker's process id. */
  get pid(): number {
    return this.#process.pid;
  }

  /** Facts from the hello frame (PowerShell version, edition, OS). */
  get info(): WorkerInfo {
    return this.#info;
  }

  /**
   * True until the process has exited, the worker is being closed, its connection ended, or its
   * process retires (a sibling was lost: it takes no new calls then).
   */
  get alive(): boolean {
    return this.#process.exitCode === null && !this.#process.retiring && !this.#closing &&
      !this.#disconnected;
  }

  /** Exit code once the process has exited, else null. */
  get exitCode(): number | null {
    return this.#process.exitCode;
  }

  /** Resolves when the worker is gone: its connection ended or its process exited. */
  get exited(): Promise<void> {
    return Promise.race([this.#ended, this.#process.exited.then(() => {})]);
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

  /** The files the session's code comes from (protocol §4.3a). */
  sources(): Promise<SourcesResult> {
    return this.#request("sources", {}) as Promise<SourcesResult>;
  }

  /**
   * Restores the post-startup snapshot. When the call left state behind that no reset restores, or
   * the process's working set exceeds `maxWorkerMemoryMB`, the process is retired (it takes no new
   * calls or workers and ends when its last worker closes) and a `RETIRED` WorkerError says why.
   */
  async reset(): Promise<ResetResult> {
    const result = await this.#exclusive(() => {
      const chained = this.#chained;
      this.#chained = null;
      const response = chained ?? this.#send("reset", {}).response;
      return this.#answered("reset", response, this.#stopTimeoutMs * 6);
    }) as ResetResult;
    const why = retireReason(result, this.#maxWorkingSetBytes);
    if (why === null) return result;
    this.#process.retire();
    throw new WorkerError("RETIRED", `PowerShell worker process ${this.pid} is retired: ${why}`);
  }

  /**
   * Runs one command, bounded by `MaxResultBytes` when the worker was started with it, and reporting
   * progress when `options.onProgress` is given. On time limit or abort the pipeline is stopped; when
   * it does not answer within the stop timeout the process tree is killed and a `TIMEOUT` or
   * `CANCELLED` WorkerError is thrown.
   */
  invoke(run: CommandRun, options: InvokeOptions = {}): Promise<InvokeOutcome> {
    const { onProgress, onPrompt } = options;
    const params = invokeRequest(run, {
      limits: this.#limits,
      progress: onProgress !== undefined,
      interactive: onPrompt !== undefined,
      ...(options.log ? { log: options.log.level } : {}),
    });
    return this.#exclusive(async () => {
      await this.#settleChained();
      const interruption = interruptionOf(options);
      const prompts = promptRelay(options, interruption, (answer) => {
        void this.#notify({ op: "answer", params: { id, ...answer } });
      });
      const { id, response } = this.#send("invoke", params, options.thenReset ?? false, {
        ...(onProgress ? { onProgress } : {}),
        ...(prompts ? { onPrompt: prompts.take } : {}),
        ...(options.log ? { onLog: options.log.onLog } : {}),
      });
      try {
        const first = await Promise.race([
          response.then((result) => ({ result: result as InvokeResult })),
          interruption.promise,
        ]);
        if ("result" in first) {
          if (first.result.runspaceBusy) this.#process.retire(); // no later call can run there
          // Stopped by a prompt's answer (a decline, a cancel, none in time, nobody to ask).
          const byPrompt = first.result.stopped && prompts?.stopped();
          return withPrompts(
            { result: first.result, interrupted: byPrompt ? "prompt" : null },
            prompts,
          );
        }
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
        if (stopped) {
          return withPrompts(
            { result: { ...stopped, stopped: true }, interrupted: reason },
            prompts,
          );
        }
        const alone = this.#process.slots <= 1;
        await this.kill();
        const what = reason === "timeout" ? "timed out" : "was cancelled";
        const ended = alone
          ? "its worker process tree was killed"
          : "its runspace was discarded and its process is killed once its other calls end";
        throw new WorkerError(
          reason === "timeout" ? "TIMEOUT" : "CANCELLED",
          `Command '${params.command}' ${what} and did not stop within ${
            this.#stopTimeoutMs / 1000
          } s, so ${ended}`,
        );
      } finally {
        interruption.dispose();
        prompts?.dispose();
        response.catch(() => {});
      }
    }) as Promise<InvokeOutcome>;
  }

  /**
   * Asks the worker to exit; kills it if it has not gone within the stop timeout. When it was the
   * last worker of its process, waits for the process to end and its directory to be removed too.
   * `reason` is what a request still running fails with. @default "PowerShell worker was closed
   * while a request was running"
   */
  async close(reason?: string): Promise<void> {
    if (this.#process.exitCode === null && !this.#closing) {
      this.#closing = true;
      // Closing does not wait for a running call: it is stopped, and fails instead of hanging.
      const running = this.#pending;
      if (running?.op === "invoke") await this.#notify({ op: "stop", params: { id: running.id } });
      const why = reason ?? "PowerShell worker was closed while a request was running";
      this.#fail(new WorkerError("CLOSED", why));
      try {
        const { response } = this.#send("exit", {});
        await Promise.race([response.catch(() => {}), delay(this.#stopTimeoutMs)]);
      } catch { /* connection already gone */ }
      const gone = await Promise.race([
        this.exited.then(() => true),
        delay(this.#stopTimeoutMs).then(() => false),
      ]);
      if (!gone) return await this.kill();
    }
    this.#release();
    if (this.#process.slots === 0) await this.#process.gone;
  }

  /**
   * Ends the worker at once. Alone in its process, the whole process tree is killed and reaped. With
   * siblings, they may be mid-call: the process retires instead (no new calls or workers) and is
   * killed when its last worker closes, so a runspace that ignores Stop never costs another call.
   * `reason`, when given, is what a request still running fails with.
   */
  async kill(reason?: string): Promise<void> {
    this.#closing = true;
    if (reason !== undefined) this.#fail(new WorkerError("CLOSED", reason));
    // Already gone from its process: its siblings are none of this worker's business any more.
    if (this.#released) return;
    const process = this.#process;
    if (process.exitCode === null) {
      if (process.slots <= 1) await process.kill();
      else process.retire();
    }
    this.#release();
  }

  /** Closes the worker (see {@linkcode RunspaceWorker.close}). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Closes the connection and tells the process this slot is gone, once. */
  #release(): void {
    if (this.#released) return;
    this.#released = true;
    try {
      this.#conn.close();
    } catch { /* already closed */ }
    this.#process.slotClosed();
  }

  /**
   * The largest frame to read now: discovery answers may be large; anything else (a call's answer and
   * progress, a reset, nothing pending) is bounded by what a call can produce under MaxResultBytes.
   */
  #frameLimit(): number {
    const op = this.#pending?.op;
    if (this.#maxResultBytes === null || (op !== undefined && DISCOVERY_OPS.has(op))) {
      return DISCOVERY_FRAME_BYTES;
    }
    return callFrameBytes(this.#maxResultBytes) + (this.#pending?.keptBytes ?? 0);
  }

  /** Fails the request in flight with the one sentence that says why an oversized frame was refused. */
  #refuseFrame(limit: number): void {
    const why = limit === DISCOVERY_FRAME_BYTES || this.#maxResultBytes === null
      ? `PowerShell worker process ${this.pid} sent a frame over ${limit} bytes, so it was retired`
      : `PowerShell worker process ${this.pid} sent a frame over ${limit} bytes, more than a call can produce under ShellConfiguration:MaxResultBytes (${this.#maxResultBytes}), so it was retired`;
    log.warning("{Message}.", { Message: why });
    this.#fail(new WorkerError("PROTOCOL", why));
  }

  async #readFrames(connection: SlotConnection): Promise<void> {
    const decoder = new TextDecoder();
    const take = frameSplitter(
      () => this.#frameLimit(),
      (line) => this.#onFrame(line),
      (limit) => this.#refuseFrame(limit),
    );
    try {
      let ok = take(decoder.decode(connection.rest, { stream: true }));
      // Plain reads into one buffer: a web stream costs more per frame than the frame itself.
      const buffer = new Uint8Array(64 * 1024);
      while (ok) {
        const count = await connection.conn.read(buffer);
        if (count === null) break;
        ok = take(decoder.decode(buffer.subarray(0, count), { stream: true }));
      }
      if (!ok) {
        await this.kill();
        return;
      }
    } catch (error) {
      if (!this.#closing) {
        log.debug("Worker {Pid} socket error: {Error}", { Pid: this.pid, Error: String(error) });
      }
    }
    // The socket ended: the worker is gone or broken, and no new request may be given to it even
    // before its exit is reaped. Wait briefly for the exit code to name it.
    this.#disconnected = true;
    if (!this.#closing && this.#process.exitCode === null) {
      const code = await Promise.race([this.#process.exited, delay(500).then(() => null)]);
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
    if (NOTICE_TYPES.has(frame.type)) {
      const pending = this.#pending;
      if (pending?.listeners && pending.id === frame.id) deliverNotice(frame, pending.listeners);
      return;
    }
    if (frame.type === "slot-failed" && typeof frame.slot === "number") {
      this.#process.slotFailed(frame.slot, String(frame.message ?? "unknown error"));
      return;
    }
    const pending = this.#pending;
    if (!pending || frame.id !== pending.id) {
      // Once closing, the request it answers was failed already (svc stopped it): expected.
      const id = { Pid: this.pid, Id: frame.id };
      if (!this.#closing) log.warning("Worker {Pid} sent an unexpected frame with id {Id}.", id);
      return;
    }
    this.#pending = null;
    const error = (frame.error ?? {}) as { kind?: string; message?: string; record?: ErrorInfo };
    if (pending.then) {
      // Set before the next frame is read: the chained reset's answer may follow in the same read.
      const refused = frame.ok !== true && REFUSED.has(error.kind ?? "");
      const message =
        `PowerShell worker refused call ${pending.id} ('${error.kind}'): no reset followed`;
      if (refused) pending.then.reject(new WorkerError("PROTOCOL", message));
      else this.#pending = pending.then;
    }
    if (frame.ok === true) {
      pending.resolve(frame.result ?? {});
    } else {
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
    this.#fail(
      new WorkerError(
        "EXITED",
        `PowerShell worker exited with code ${code}${this.#process.diagnosticTail()}`,
        { exitCode: code },
      ),
    );
    try {
      this.#conn.close();
    } catch { /* already closed */ }
  }

  #fail(error: Error): void {
    const pending = this.#pending;
    this.#pending = null;
    pending?.reject(error);
    pending?.then?.reject(error);
  }

  /** Waits for the answer of a chained reset nobody took (its failure is `reset()`'s business). */
  async #settleChained(): Promise<void> {
    const chained = this.#chained;
    this.#chained = null;
    await chained?.catch(() => {});
  }

  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => {});
    return run;
  }

  #request(op: string, params: unknown, timeoutMs?: number): Promise<unknown> {
    return this.#exclusive(async () => {
      await this.#settleChained();
      return await this.#answered(op, this.#send(op, params).response, timeoutMs);
    });
  }

  /**
   * `response`, or past `timeoutMs` the worker killed and a TIMEOUT. The timer ends with the answer:
   * left running, each call's reset would leave a timer of 6 × the stop timeout behind.
   */
  async #answered(op: string, response: Promise<unknown>, timeoutMs?: number): Promise<unknown> {
    if (timeoutMs === undefined) return await response;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"timeout">((resolve) => {
      const started = setTimeout(() => resolve("timeout"), timeoutMs);
      // A pending grace timer must not keep the process alive on shutdown.
      Deno.unrefTimer(started);
      timer = started;
    });
    try {
      const first = await Promise.race([response, late]);
      if (first !== "timeout") return first;
    } finally {
      clearTimeout(timer);
    }
    response.catch(() => {});
    await this.kill();
    throw new WorkerError(
      "TIMEOUT",
      `PowerShell worker did not finish '${op}' within ${timeoutMs / 1000} s`,
    );
  }

  #send(
    op: string,
    params: unknown,
    chainReset = false,
    listeners?: CallListeners,
  ): { id: number; response: Promise<unknown> } {
    const id = ++this.#nextId;
    const exitCode = this.#process.exitCode;
    if (exitCode !== null) {
      const error = new WorkerError("EXITED", `PowerShell worker exited with code ${exitCode}`, {
        exitCode,
      });
      return { id, response: Promise.reject(error) };
    }
    const granted = (params as InvokeParams | undefined)?.limits?.outputBytes;
    const kept = op === "invoke" && granted && this.#limits
      ? granted - this.#limits.outputBytes
      : 0;
    const response = new Promise<unknown>((resolve, reject) => {
      this.#pending = {
        id,
        op,
        resolve,
        reject,
        ...(listeners ? { listeners } : {}),
        ...(kept > 0 ? { keptBytes: kept } : {}),
      };
    });
    if (chainReset) {
      const pending = this.#pending!, thenReset = ++this.#nextId;
      this.#chained = new Promise<unknown>((resolve, reject) => {
        pending.then = { id: thenReset, op: "reset", resolve, reject };
      });
      this.#chained.catch(() => {});
      params = { ...params as object, thenReset };
    }
    this.#write({ id, op, params }).catch((error) =>
      this.#fail(new WorkerError("CLOSED", `Cannot send '${op}' to PowerShell worker: ${error}`))
    );
    return { id, response };
  }

  async #notify(frame: unknown): Promise<void> {
    await this.#write(frame).catch(() => {});
  }

  #write(frame: unknown): Promise<void> {
    const bytes = new TextEncoder().encode(JSON.stringify(frame) + "\n");
    const conn = this.#conn;
    const written = this.#writing.then(async () => {
      for (let offset = 0; offset < bytes.length;) {
        offset += await conn.write(bytes.subarray(offset));
      }
    });
    this.#writing = written.catch(() => {});
    return written;
  }
}
