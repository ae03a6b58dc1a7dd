/**
 * The prompts of one interactive invoke (docs/worker-protocol.md §4.4): each `prompt` frame goes to
 * the caller's `onPrompt`, and its answer back to the worker as an `answer` notification, within the
 * time limit for user input. While the user is asked, the call's own time limit stands still. Every
 * prompt is recorded with how it ended, for the call's result; any answer but an accepted one stops
 * the call in the worker.
 *
 * @module
 */
import { logger } from "./log.ts";
import type { InvokeOutcome, PromptAnswer, PromptRecord, WorkerPrompt } from "./worker_protocol.ts";
import type { InvokeOptions } from "./worker_request.ts";

const log = logger("worker");

/**
 * `ShellConfiguration:UserInputTimeout`'s default, in ms, for callers that give none (a prompt's
 * wait here, a held call's in `lib/input_required.ts`).
 */
export const DEFAULT_USER_INPUT_TIMEOUT_MS = 120_000;

const KINDS = new Set(["confirm", "choice", "text", "fields", "refused"]);
const ACTIONS = new Set(["accept", "decline", "cancel", "timeout", "unavailable"]);

/**
 * Why the signal given to `onPrompt` aborted: the time for user input ran out (`TIMED_OUT`), or
 * the prompt was settled otherwise (answered, or the call ended).
 */
export const TIMED_OUT = "svc: no answer within the time for user input";

/** How a call's own time limit stands still while the user is asked (`interruptionOf`). */
export interface CallClock {
  pause: () => void;
  resume: () => void;
}

/** What {@linkcode promptRelay} gives its call. */
export interface PromptRelay {
  /** Handles a `prompt` frame. */
  take: (frame: Record<string, unknown>) => void;
  /** Whether a prompt's answer, or a question or answer refused, stopped the call. */
  stopped: () => boolean;
  /** The call's prompts so far, each with how it ended (settled ones only). */
  records: () => PromptRecord[];
  /** Ends every wait still open, once the call has ended. */
  dispose: () => void;
}

/**
 * A relay for one call's `prompt` frames to `options.onPrompt`, each answered through `answer` (the
 * `answer` notification's params less the call's id), or undefined when the call is not interactive.
 * `take` handles a frame (a malformed one is answered `cancel`, which stops the call; a `refused` one
 * wants no answer and is never passed on); `dispose` ends every wait still open, once the call has
 * ended. `options.onPromptEnd` hears how each prompt ended.
 */
export function promptRelay(
  options: Pick<InvokeOptions, "onPrompt" | "onPromptEnd" | "userInputTimeoutMs">,
  clock: CallClock,
  answer: (params: { seq: number } & PromptAnswer) => void,
): PromptRelay | undefined {
  const ask = options.onPrompt;
  if (!ask) return undefined;
  const timeoutMs = options.userInputTimeoutMs ?? DEFAULT_USER_INPUT_TIMEOUT_MS;
  // Each prompt waiting, with its timer.
  const open = new Map<AbortController, ReturnType<typeof setTimeout>>();
  const records: PromptRecord[] = [];
  let ended = false;
  let stopped = false;
  const record = (entry: PromptRecord) => {
    records.push(entry);
    if (entry.action !== "accept") stopped = true;
    try {
      options.onPromptEnd?.(entry);
    } catch (error) {
      log.debug("A prompt listener failed: {Message}", { Message: String(error) });
    }
  };
  return {
    stopped: () => stopped,
    records: () => [...records],
    take(frame) {
      if (ended) return;
      const seq = frame.seq;
      if (typeof seq !== "number" || !Number.isInteger(seq)) {
        log.warning("A worker sent a prompt frame without a sequence number; it is ignored.");
        return;
      }
      const prompt = promptOf(frame);
      if (prompt === null) {
        log.warning("A worker sent a malformed prompt frame (seq {Seq}); the call is stopped.", {
          Seq: seq,
        });
        stopped = true;
        answer({ seq, action: "cancel" });
        return;
      }
      // Never asked: the worker has stopped the call already and waits for nothing.
      if (prompt.kind === "refused") return record({ prompt, action: "refused" });
      const controller = new AbortController();
      clock.pause();
      let settled = false;
      const settle = (given: PromptAnswer, reason?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        open.delete(controller);
        controller.abort(reason);
        clock.resume();
        if (ended) return;
        const sent = answerOf(given);
        record({
          prompt,
          action: sent.action,
          ...chosenOf(prompt, sent),
          ...(given.by === "caller" ? { by: "caller" as const } : {}),
        });
        answer({ ...sent, seq });
      };
      const timer = setTimeout(() => settle({ action: "timeout" }, TIMED_OUT), timeoutMs);
      open.set(controller, timer);
      let asked: Promise<PromptAnswer>;
      try {
        asked = ask(prompt, controller.signal);
      } catch (error) {
        asked = Promise.reject(error);
      }
      asked.then(
        (answer) => settle(answer),
        (error) => {
          // Nobody could be asked: the call stops, as at a console whose user pressed Ctrl+C.
          if (!settled) {
            log.warning("Asking the user failed ({Message}); the call is stopped.", {
              Message: String(error),
            });
          }
          settle({ action: "cancel" });
        },
      );
    },
    dispose() {
      ended = true;
      for (const [controller, timer] of open) {
        clearTimeout(timer);
        controller.abort();
      }
      open.clear();
    },
  };
}

/** `outcome` with the call's prompts, when it asked any. */
export function withPrompts(outcome: InvokeOutcome, relay: PromptRelay | undefined): InvokeOutcome {
  const records = relay?.records() ?? [];
  return records.length > 0 ? { ...outcome, prompts: records } : outcome;
}

/** The labels an accepted confirm or choice answer picks, as a record's `chosen`. */
function chosenOf(prompt: WorkerPrompt, answer: PromptAnswer): Pick<PromptRecord, "chosen"> {
  if (answer.action !== "accept" || !answer.choices || !prompt.choices) return {};
  const labels = answer.choices.map((i) => prompt.choices![i]?.label)
    .filter((label): label is string => label !== undefined);
  return { chosen: labels };
}

/** The prompt a frame carries, or null when it is not one. */
function promptOf(frame: Record<string, unknown>): WorkerPrompt | null {
  const { seq, kind, caption, message } = frame;
  if (typeof kind !== "string" || !KINDS.has(kind)) return null;
  if (typeof caption !== "string" || typeof message !== "string") return null;
  const { type: _type, id: _id, ...rest } = frame;
  if (kind === "confirm" || kind === "choice") {
    if (!Array.isArray(frame.choices) || frame.choices.length === 0) return null;
  } else if (kind !== "refused" && (!Array.isArray(frame.fields) || frame.fields.length === 0)) {
    return null;
  }
  return { ...rest, seq } as unknown as WorkerPrompt;
}

/**
 * The answer as the worker reads it: only the keys the protocol has, of their types, and strings
 * well-formed. A lone surrogate (`"\ud800"`, valid JSON from any client) made the worker's JSON
 * parser refuse the whole `answer` frame, which has no id to fail: the prompt then waited until
 * the call's own time limit.
 */
function answerOf(answer: PromptAnswer): PromptAnswer {
  const action = ACTIONS.has(answer?.action) ? answer.action : "cancel";
  const out: PromptAnswer = { action };
  if (action !== "accept") return out;
  if (Array.isArray(answer.choices)) {
    out.choices = answer.choices.filter((c) => Number.isInteger(c));
  }
  if (answer.values && typeof answer.values === "object") {
    const values: Record<string, string | number | boolean> = {};
    for (const [key, value] of Object.entries(answer.values)) {
      if (typeof value === "string") values[key.toWellFormed()] = value.toWellFormed();
      else if (typeof value === "number" || typeof value === "boolean") {
        values[key.toWellFormed()] = value;
      }
    }
    out.values = values;
  }
  return out;
}
