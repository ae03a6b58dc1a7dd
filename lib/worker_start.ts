/**
 * Starting a worker that can serve calls: its pwsh process (or a runspace in one that has room),
 * then its startup (modules, startup script, reset snapshot). The pool, the stdio session and doctor
 * all start workers here, so a worker is configured, timed and cleaned up after a failure one way.
 *
 * @module
 */
import { hostCacheDirectory } from "./cache_directory.ts";
import type { ShellSettings } from "./config.ts";
import { RemoteError, StartupError, type StartupErrorCode } from "./errors.ts";
import { notPowerShell } from "./pwsh_path.ts";
import { workerInheritedEnvironment } from "./worker_env.ts";
import { RunspaceWorker } from "./worker.ts";
import type { StartupResult, WorkerInfo } from "./worker_protocol.ts";

/** The shell settings a worker starts with (`ShellConfiguration:*`). */
export type WorkerShellSettings = Pick<
  ShellSettings,
  | "modules"
  | "startupScriptPath"
  | "startupScript"
  | "keepNativeProcesses"
  | "workerStartTimeoutMs"
  | "maxResultBytes"
  | "cacheDirectory"
  | "hostCacheDirectory"
  | "workerEnvironment"
>;

/** Options of {@linkcode startWorker}. */
export interface StartWorkerOptions {
  /** Absolute path of the pwsh executable (see `resolvePwsh` in `lib/pwsh_path.ts`). */
  pwsh: string;
  /**
   * Modules, startup script and its time limit (`WorkerStartTimeout`), host cache directory, the
   * environment the worker gets, and `MaxResultBytes`, which bounds every call it runs.
   */
  shell: WorkerShellSettings;
  /** Grace period of a stopped pipeline or closing worker, in ms. @default 5000 (`McpServer:RunspacePool:StopTimeout`) */
  stopTimeoutMs?: number;
  /** Workers (runspaces) a process started here may serve. @default 1 */
  runspacesPerProcess?: number;
  /** Working set in MB above which a reset retires the worker's process. @default null (no ceiling) */
  maxWorkerMemoryMB?: number | null;
  /** Label used in log lines. @default "worker" */
  label?: string;
  /**
   * Where the worker runs. Receives `spawn`, which starts a new process with the options above, and
   * returns the worker whose startup is then run: the pool opens one in a process with room instead
   * when it has one. @default a new process (`spawn()`)
   */
  place?: (spawn: () => Promise<RunspaceWorker>) => Promise<RunspaceWorker>;
  /** Called once a new process has been spawned, before its hello. @default none */
  onSpawn?: () => void;
}

/** A worker that has run its startup. */
export interface ReadyWorker {
  /** The worker, ready for calls. */
  readonly worker: RunspaceWorker;
  /** What its startup reported (module versions, duration). */
  readonly startup: StartupResult;
}

/**
 * A worker could not start or its startup failed. Its code is `STARTUP_SCRIPT` when the startup
 * script threw, `PWSH_TOO_OLD` when the worker runs a PowerShell below 7.4, else `WORKER_START`; its
 * `cause` is the failure as the worker reported it.
 */
export class WorkerStartError extends StartupError {
  /** What the worker's hello said, when it got that far (its startup then failed); else null. */
  readonly info: WorkerInfo | null;
  /** The failure in the words of whatever failed (the cause's message), without svc's sentence. */
  readonly reason: string;
  /** Builds the error. */
  constructor(
    code: StartupErrorCode,
    message: string,
    options: { cause: unknown; info: WorkerInfo | null },
  ) {
    super(code, message, { cause: options.cause });
    this.info = options.info;
    this.reason = messageOf(options.cause);
  }
}

/**
 * Starts a worker and runs its startup: imports `shell.modules`, runs the startup script within
 * `shell.workerStartTimeoutMs` and records the reset snapshot. Rejects with a
 * {@linkcode WorkerStartError}; a worker whose startup failed has been killed by then.
 */
export async function startWorker(options: StartWorkerOptions): Promise<ReadyWorker> {
  const { pwsh, shell, place = (spawn) => spawn() } = options;
  const spawn = () =>
    RunspaceWorker.start({
      pwsh,
      stopTimeoutMs: options.stopTimeoutMs ?? 5_000,
      runspacesPerProcess: options.runspacesPerProcess ?? 1,
      maxWorkerMemoryMB: options.maxWorkerMemoryMB ?? null,
      maxResultBytes: shell.maxResultBytes,
      label: options.label ?? "worker",
      cacheDirectory: hostCacheDirectory(shell),
      environment: shell.workerEnvironment,
      ...(options.onSpawn ? { onSpawn: options.onSpawn } : {}),
    });
  let worker: RunspaceWorker;
  try {
    worker = await place(spawn);
  } catch (error) {
    // PWSH_TOO_OLD from the hello already says what to do about it.
    if (error instanceof StartupError) {
      throw new WorkerStartError(error.code, error.message, { cause: error, info: null });
    }
    // Only now is the executable asked what it is, so a start that works pays nothing for it.
    const answer = await notPowerShell(
      pwsh,
      workerInheritedEnvironment(Deno.env.toObject(), shell.workerEnvironment),
    );
    if (answer !== null) {
      throw new WorkerStartError(
        "NOT_POWERSHELL",
        `'${pwsh}' is not PowerShell: asked for its version it answered ${answer}; point --pwsh, SVC_PWSH or ShellConfiguration:PwshPath at pwsh 7.4 or later`,
        { cause: error, info: null },
      );
    }
    throw new WorkerStartError(
      "WORKER_START",
      `Cannot start a PowerShell worker with '${pwsh}': ${messageOf(error)}`,
      { cause: error, info: null },
    );
  }
  try {
    const startup = await worker.startup({
      modules: shell.modules,
      scriptPath: shell.startupScriptPath,
      script: shell.startupScript,
      keepNativeProcesses: shell.keepNativeProcesses,
    }, shell.workerStartTimeoutMs);
    return { worker, startup };
  } catch (error) {
    await worker.kill();
    const info = worker.info;
    if (error instanceof RemoteError && error.kind === "startup") {
      throw new WorkerStartError("STARTUP_SCRIPT", `Startup script failed: ${error.message}`, {
        cause: error,
        info,
      });
    }
    throw new WorkerStartError(
      "WORKER_START",
      `PowerShell worker startup failed: ${messageOf(error)}`,
      { cause: error, info },
    );
  }
}

/** The message of an error, or the value itself as text. */
function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
