/**
 * One round of a held call (`lib/input_required.ts`) as a 2026-07-28 request serves it: the first
 * request starts the call and answers its result or `input_required` for its first question; each
 * retry with `requestState` answers the question the state names and serves the call on to its
 * next question or its result. The same for a `tools/call` and a `prompts/get` whose command asks.
 *
 * @module
 */
import {
  type CallToolResult,
  type ElicitResult,
  inputRequired,
  type InputRequiredResult,
  inputResponse,
} from "@modelcontextprotocol/server";
import { toElicitation, toPromptAnswer } from "./elicitation.ts";
import {
  HeldCall,
  type HeldCalls,
  type HeldEvent,
  type HeldKind,
  type HeldResult,
} from "./input_required.ts";
import type { PromptAnswer, WorkerLog, WorkerProgress, WorkerPrompt } from "./worker_protocol.ts";
import { failureResult } from "./result.ts";
import { logger } from "./log.ts";

const log = logger("mcp");

/**
 * One tools/call (or prompts/get) round of a 2026-07-28 client that can answer elicitations; `R`
 * is the request's result.
 */
export interface InputCall<R extends HeldResult = CallToolResult> {
  /** The process's held calls. */
  calls: HeldCalls;
  /** The tool named by the request, or the MCP prompt where `kind` says so. */
  tool: string;
  /** Whether `tool` names a tool (`tools/call`) or an MCP prompt (`prompts/get`). @default "tool" */
  kind?: HeldKind;
  /** The caller's owner key. */
  owner: string;
  /** The request's arguments: a retry must bring those of the call it answers. */
  arguments: unknown;
  /** The request's raw `requestState`, if any. */
  requestState: unknown;
  /** The request's `inputResponses`, if any. */
  inputResponses: Record<string, unknown> | undefined;
  /**
   * Whether an answer sent with the first request, before any question, may answer `prompt`.
   * @default never: only an answer to a question svc asked in this call counts
   */
  answersUpFront?: (prompt: WorkerPrompt) => boolean;
  /** The request's signal: aborted, the call is given up. */
  signal: AbortSignal;
  /** Receives the call's progress while this request serves it; without it none is sent. */
  onProgress?: (progress: WorkerProgress) => void;
  /** Receives the call's log records while this request serves it; without it none are sent. */
  onLog?: (log: WorkerLog) => void;
  /**
   * Starts the call with the held call's signal, `onPrompt`, `onProgress` and `onLog` (which go to
   * the request serving the call at the time); resolves with its result, or rejects with what the
   * request serving it then throws (an unknown tool's protocol error).
   */
  start(call: {
    signal: AbortSignal;
    onPrompt: (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>;
    onProgress: (progress: WorkerProgress) => void;
    onLog: (log: WorkerLog) => void;
  }): Promise<R>;
  /**
   * What the request answers when a question could not be held (the caller, or the server, has
   * the most held calls already): its question was cancelled, and `message` says why. It may
   * throw the protocol error to answer instead. @default a tool call's failure result
   */
  refused?: (message: string) => R;
}

/**
 * Serves one round: without `requestState`, starts the call; with it, resumes the held call it
 * names with the answer in `inputResponses` (or asks the same question again, with a fresh state,
 * when they lack it). Resolves with the call's result, or `input_required` for its next prompt.
 * Without `requestState`, `inputResponses` whose key matches a prompt answer it directly, once, where
 * `answersUpFront` allows it.
 *
 * @throws {ProtocolError} InvalidParams for a `requestState` {@linkcode HeldCalls.resume} refuses.
 */
export async function callWithInput<R extends HeldResult = CallToolResult>(
  input: InputCall<R>,
): Promise<R | InputRequiredResult> {
  const { calls, inputResponses } = input;
  const kind = input.kind ?? "tool";
  // The held call's results are R: a retry resumes only a call of its own kind.
  const served = async (pending: Promise<HeldResult | InputRequiredResult>) =>
    (await pending) as R | InputRequiredResult;
  if (input.requestState !== undefined) {
    const call = await calls.resume(
      input.requestState,
      input.tool,
      input.owner,
      input.arguments,
      kind,
    );
    const prompt = call.pending!;
    const key = toElicitation(prompt).key;
    const answer = answerIn(inputResponses, key, prompt);
    if (answer === null) {
      call.busy = false;
      return await inputRequiredFor(calls, call, prompt);
    }
    call.answer(answer);
    call.progress = input.onProgress ?? null;
    call.log = input.onLog ?? null;
    return await served(serve(calls, call, input.signal, undefined));
  }
  const call = new HeldCall(
    input.owner,
    input.tool,
    calls.binding(input.owner, input.tool, input.arguments, kind),
    kind,
  );
  const refused = input.refused ?? ((message: string) => failureResult(message) as R);
  // Where a question could not be held, the call ends saying so, however its command ended.
  const ended = (outcome: () => R) => {
    try {
      call.finished({ kind: "finished", result: outcome() });
    } catch (error) {
      call.finished({ kind: "failed", error });
    }
  };
  call.progress = input.onProgress ?? null;
  call.log = input.onLog ?? null;
  let refusal: string | null = null;
  input.start({
    signal: call.signal,
    onPrompt: (prompt, signal) => call.prompted(prompt, signal),
    onProgress: (progress) => call.progress?.(progress),
    onLog: (log) => call.log?.(log),
  }).then(
    (result) => ended(() => refusal === null ? result : refused(refusal)),
    (error) =>
      ended(() => {
        if (refusal === null) throw error;
        return refused(refusal);
      }),
  );
  // Answers sent up front, each used once (a copy: the request's own object stays as it came), for
  // the prompts they may answer.
  const upFront: UpFront = {
    answers: Object.assign(Object.create(null), inputResponses),
    allowed: input.answersUpFront ?? (() => false),
  };
  return await served(
    serve(calls, call, input.signal, upFront, (message) => (refusal = message)),
  );
}

/** Answers sent with a call's first request, and which prompts they may answer. */
interface UpFront {
  answers: Record<string, unknown>;
  allowed: (prompt: WorkerPrompt) => boolean;
}

/** Reads `call`'s events until its result or a prompt nobody answered yet. */
async function serve(
  calls: HeldCalls,
  call: HeldCall,
  signal: AbortSignal,
  upFront: UpFront | undefined,
  refuse: (message: string) => void = () => {},
): Promise<HeldResult | InputRequiredResult> {
  call.busy = true;
  try {
    for (;;) {
      let event: HeldEvent;
      try {
        event = await call.next(signal);
      } catch (error) {
        calls.release(call);
        call.abort("The request serving the call was cancelled.");
        throw error;
      }
      if (event.kind === "finished") return event.result;
      if (event.kind === "failed") throw event.error;
      // The worker layer gave up waiting already: the call runs on to its result.
      if (call.pending === null) continue;
      const key = toElicitation(event.prompt).key;
      const given = upFront?.allowed(event.prompt)
        ? answerIn(upFront.answers, key, event.prompt)
        : null;
      if (upFront) delete upFront.answers[key];
      if (given !== null) {
        // The caller's, not the user's: the audit and the result say so.
        call.answer({ ...given, by: "caller" });
        continue;
      }
      call.round++;
      const refusal = calls.hold(call);
      if (refusal !== null) {
        refuse(refusal);
        call.answer({ action: "cancel" });
        continue;
      }
      log.debug("{Call} is held for its user's answer to question {Round}.", {
        Call: call.label,
        Round: call.round,
      });
      call.busy = false;
      return await inputRequiredFor(calls, call, event.prompt);
    }
  } finally {
    call.busy = false;
    call.progress = null;
    call.log = null;
  }
}

/**
 * The `input_required` result asking `prompt`, with a fresh state. Asking again does not restart
 * the time limit: a client cannot keep a worker by retrying without an answer.
 */
async function inputRequiredFor(
  calls: HeldCalls,
  call: HeldCall,
  prompt: WorkerPrompt,
): Promise<InputRequiredResult> {
  const { key, params } = toElicitation(prompt);
  return inputRequired({
    inputRequests: { [key]: { method: "elicitation/create", params } },
    requestState: await calls.state(call),
  });
}

/** The answer to `prompt` in `responses[key]`; null when there is no elicitation result there. */
function answerIn(
  responses: Record<string, unknown> | undefined,
  key: string,
  prompt: WorkerPrompt,
): PromptAnswer | null {
  const view = inputResponse(responses, key);
  if (view.kind !== "elicit") return null;
  const result = { action: view.action, ...(view.content ? { content: view.content } : {}) };
  return toPromptAnswer(prompt, result as ElicitResult);
}
