/**
 * What a caller asks a worker to run, in svc's words, and the `invoke` request it becomes on the
 * wire (docs/worker-protocol.md §4.4). Callers say which properties and how many items they want;
 * only this module writes the protocol's `select`, `first`, `progress`, `interactive`, `log` and
 * `limits`.
 *
 * @module
 */
import type { ConfirmLevel } from "./config_schema.ts";
import { logger } from "./log.ts";
import type {
  CallLimits,
  Interruption,
  InvokeParams,
  PromptAnswer,
  PromptRecord,
  ResetResult,
  WorkerLog,
  WorkerLogLevel,
  WorkerProgress,
  WorkerPrompt,
} from "./worker_protocol.ts";

/**
 * Which properties output objects keep: these names or wildcards, or `"display"` for what
 * PowerShell would show (the type's display set, else its format view).
 */
export type OutputProperties = string[] | "display";

/** A command for a worker to run (see `RunspaceWorker.invoke` in `lib/worker.ts`). */
export interface CommandRun {
  /** The command's name. */
  command: string;
  /** Bound arguments by parameter name. */
  parameters: Record<string, unknown>;
  /** Names of the parameters whose `{UserName, Password}` values become PSCredential objects. */
  credentials: string[];
  /** How deep output objects are serialized (`ShellConfiguration:SerializationDepth`). */
  depth: number;
  /** Which properties output objects keep. @default every property */
  properties?: OutputProperties;
  /** Most output items; the command is stopped after them. @default all of them */
  maxResults?: number;
  /**
   * The command may be stopped once its output exceeds what svc keeps (`limits.stopWhenFull`): true
   * for commands that only read, whose stop loses nothing but output nobody would see. @default false
   */
  stopWhenFull?: boolean;
  /**
   * The provider the dynamic arguments among `parameters` belong to, and their names: the call runs
   * only on paths of that provider. @default none: no dynamic argument
   */
  provider?: { name: string; arguments: string[] };
  /**
   * `$ConfirmPreference` for the call (`ShellConfiguration:ConfirmPreference`). @default the
   * runspace's own
   */
  confirmPreference?: ConfirmLevel;
  /**
   * Complete this parameter of the command for `word` instead of running it; `parameters` then
   * hold the other arguments as strings (`lib/mcp_completion.ts`). @default none: the command runs
   */
  complete?: { parameter: string; word: string };
  /**
   * Output bytes the worker may send beyond `limits.outputBytes`, which svc keeps past
   * `MaxResultBytes` for the call's result resource (`lib/result_pages.ts`). @default 0
   */
  keepOutputBytes?: number;
}

/** What the worker adds to every run it sends (see {@linkcode invokeRequest}). */
export interface RunContext {
  /** What the call may send svc, derived from `MaxResultBytes`; null: everything is sent. */
  limits: CallLimits | null;
  /** Whether someone listens for the call's `Write-Progress` records. */
  progress: boolean;
  /** Whether someone answers the call's prompts. @default false */
  interactive?: boolean;
  /** The lowest record someone listens for as a log message. @default none */
  log?: WorkerLogLevel;
}

/** The `invoke` params of a run. */
export function invokeRequest(run: CommandRun, context: RunContext): InvokeParams {
  const { command, parameters, credentials, depth, properties, maxResults, provider } = run;
  const params: InvokeParams = { command, parameters, credentials, depth };
  if (provider) params.provider = provider;
  if (run.confirmPreference) params.confirmPreference = run.confirmPreference;
  if (run.complete) params.complete = run.complete;
  if (properties === "display") params.select = { properties: null, display: true };
  else if (properties !== undefined) params.select = { properties, display: false };
  if (maxResults !== undefined) params.first = maxResults;
  if (context.progress) params.progress = true;
  if (context.interactive) params.interactive = true;
  if (context.log) params.log = context.log;
  if (context.limits !== null) {
    params.limits = run.stopWhenFull ? { ...context.limits, stopWhenFull: true } : context.limits;
    const keep = run.keepOutputBytes ?? 0;
    if (keep > 0) {
      params.limits = { ...params.limits, outputBytes: params.limits.outputBytes + keep };
    }
  }
  return params;
}

/** Options of `RunspaceWorker.invoke` (`lib/worker.ts`). */
export interface InvokeOptions {
  /** Cancels the call: the pipeline is stopped (then the tree killed after the stop timeout). */
  signal?: AbortSignal;
  /** Time limit of the call in ms. @default no limit */
  timeoutMs?: number;
  /** Receives the call's progress records; without it the worker sends none. @default none */
  onProgress?: (progress: WorkerProgress) => void;
  /**
   * Asks the user what the command prompts for (a confirmation, Read-Host, PromptForChoice,
   * $Host.UI.Prompt); present, the call is interactive, and any answer but an accepted one stops
   * it. `signal` aborts when the answer is no longer wanted: the time for user input ran out (its
   * reason is `TIMED_OUT`, `lib/worker_prompts.ts`), or the call ended. Time spent waiting does not
   * count against `timeoutMs`. Never given a `refused` prompt. @default none: every prompt fails at
   * once
   */
  onPrompt?: (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>;
  /** Hears how each prompt of an interactive call ended, `refused` ones included. @default none */
  onPromptEnd?: (record: PromptRecord) => void;
  /**
   * How long one prompt waits for `onPrompt`'s answer in ms (`ShellConfiguration:UserInputTimeout`);
   * then it fails as a non-interactive one does. @default 120000
   */
  userInputTimeoutMs?: number;
  /**
   * Receives the call's warning, information, verbose and debug records at `level` and above while
   * it runs (a client asked for log messages). @default none: the worker sends none
   */
  log?: { level: WorkerLogLevel; onLog: (log: WorkerLog) => void };
  /**
   * The worker resets itself once it has answered (`thenReset`, protocol §4.4), so the reset costs
   * no frame of its own; `reset()` then takes its answer. For a call that is the only one before its
   * worker's reset: a pool lease's. @default false: the worker keeps its state after the call
   * (stdio, where state lasts for the connection)
   */
  thenReset?: boolean;
}

/** Who takes a running invoke's notification frames (protocol §4.4). */
export interface CallListeners {
  onProgress?: (progress: WorkerProgress) => void;
  /** Takes `prompt` frames (an interactive call). */
  onPrompt?: (frame: Record<string, unknown>) => void;
  onLog?: (log: WorkerLog) => void;
}

/** The `type`s of the notification frames a running invoke sends. */
export const NOTICE_TYPES: ReadonlySet<unknown> = new Set(["progress", "prompt", "log"]);

/**
 * Hands a running invoke's notification frame to its listener. A listener that throws is logged at
 * debug level: the call goes on.
 */
export function deliverNotice(frame: Record<string, unknown>, listeners: CallListeners): void {
  try {
    if (frame.type === "prompt") listeners.onPrompt?.(frame);
    else if (frame.type === "log") listeners.onLog?.(frame as unknown as WorkerLog);
    else listeners.onProgress?.(frame as unknown as WorkerProgress);
  } catch (error) {
    logger("worker").debug("A {Type} listener failed: {Message}", {
      Type: frame.type,
      Message: String(error),
    });
  }
}

/**
 * The call's time limit and cancel signal as one promise, and how to stop listening to both. The time
 * limit can be paused (while the user is asked something) and resumed.
 */
export function interruptionOf(options: InvokeOptions): {
  promise: Promise<{ interrupted: Interruption }>;
  pause: () => void;
  resume: () => void;
  dispose: () => void;
} {
  const { signal, timeoutMs } = options;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  let left = timeoutMs ?? 0;
  let since = 0;
  let paused = 0;
  let disposed = false;
  let fire = () => {};
  const promise = new Promise<{ interrupted: Interruption }>((resolve) => {
    fire = () => resolve({ interrupted: "timeout" });
    if (signal) {
      onAbort = () => resolve({ interrupted: "cancelled" });
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    }
  });
  const start = () => {
    if (timeoutMs === undefined) return;
    since = performance.now();
    timer = setTimeout(fire, Math.max(0, left));
  };
  start();
  return {
    promise,
    // Pauses nest: a pause must never be lost, whichever answer comes first.
    pause() {
      if (++paused > 1 || timer === undefined) return;
      clearTimeout(timer);
      timer = undefined;
      left -= performance.now() - since;
    },
    resume() {
      if (paused === 0 || --paused > 0 || disposed) return;
      start();
    },
    dispose() {
      disposed = true;
      clearTimeout(timer);
      timer = undefined;
      if (signal && onAbort) signal.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * Why a reset's answer retires the worker's process: the reset could not restore its state, or the
 * working set it reports exceeds `maxWorkingSetBytes` (null: no ceiling). Null keeps the process.
 */
export function retireReason(
  result: ResetResult,
  maxWorkingSetBytes: number | null,
): string | null {
  if (result.path === "retire") return result.retire ?? "the reset cannot restore its state";
  const bytes = result.workingSetBytes;
  if (maxWorkingSetBytes === null || bytes === undefined || bytes <= maxWorkingSetBytes) {
    return null;
  }
  return `its working set is ${Math.round(bytes / 1024 / 1024)} MB, over MaxWorkerMemoryMB ${
    maxWorkingSetBytes / 1024 / 1024
  }`;
}
