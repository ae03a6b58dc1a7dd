/**
 * Held calls of 2026-07-28 clients (SEP-2322's multi-round-trip input): a call whose PowerShell
 * prompts for input is HELD, never re-run. Its pipeline stays blocked in its worker (which stays
 * leased) while the tools/call answers `input_required` with the prompt as an elicitation; the
 * client asks its user and retries the call with `requestState` and `inputResponses`, and the
 * answer goes to the held pipeline, which runs on to its next prompt or its result. Re-running
 * instead would repeat every side effect the command had before its prompt.
 *
 * This module keeps the held calls of one svc process ({@linkcode HeldCalls}: bounded per caller,
 * each given up after `ShellConfiguration:UserInputTimeout`) and their request state: an
 * HMAC-sealed `{id, round, binding}` (the SDK's `createRequestStateCodec`, a random key per
 * process, so a state from another replica or an earlier process fails to verify, and it expires
 * with `UserInputTimeout`). The binding is a keyed digest of the caller, the tool and the call's
 * arguments: an answer belongs to one call, and a retry naming another tool or other arguments is
 * refused with nothing run. The caller and the tool are also checked against the held call itself.
 * A `prompts/get` whose command asks is held the same way, bound to the MCP prompt's name and
 * arguments, never answerable by a retry of a tool call (or the other way round).
 * `callWithInput` (`lib/input_required_round.ts`) serves one round.
 *
 * @module
 */
import {
  type CallToolResult,
  createRequestStateCodec,
  type GetPromptResult,
  ProtocolError,
  ProtocolErrorCode,
  type RequestStateCodec,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { createHmac } from "node:crypto";
import type { PromptAnswer, WorkerLog, WorkerProgress, WorkerPrompt } from "./worker_protocol.ts";
import { DEFAULT_USER_INPUT_TIMEOUT_MS } from "./worker_prompts.ts";
import { logger } from "./log.ts";

const log = logger("mcp");

/** What a held call runs: a tool (`tools/call`) or an MCP prompt's command (`prompts/get`). */
export type HeldKind = "tool" | "prompt";

/** The result of a held call's request: a tool's, or an MCP prompt's messages. */
export type HeldResult = CallToolResult | GetPromptResult;

/** What a held call tells the request serving it. */
export type HeldEvent =
  | { kind: "prompt"; prompt: WorkerPrompt }
  | { kind: "finished"; result: HeldResult }
  | { kind: "failed"; error: unknown };

/**
 * One call that may be held at its prompts: a queue of "prompt arrived" and "call finished" events,
 * read by one request at a time, and the prompt waiting for its answer.
 */
export class HeldCall {
  /** Random; names the held call in the request state. */
  readonly id: string = crypto.randomUUID();
  /** Whose call it is (the caller's owner key): only they may resume it. */
  readonly owner: string;
  /** The tool called, or the MCP prompt got: a retry must name the same one. */
  readonly tool: string;
  /** Whether a tool or an MCP prompt: a retry must be the same request. */
  readonly kind: HeldKind;
  /** Keyed digest of the caller, the tool and the arguments: a retry must bring the same. */
  readonly binding: string;
  /** Counts the prompts it was held at, so a state of an earlier one cannot answer a later one. */
  round = 0;
  /** Whether a request is serving the call (reading its events) right now. */
  busy = false;
  /** Where the call's progress goes: to the request serving it, if that one asked for progress. */
  progress: ((progress: WorkerProgress) => void) | null = null;
  /** Where the call's log records go: to the request serving it, if that one asked for them. */
  log: ((log: WorkerLog) => void) | null = null;
  readonly #controller = new AbortController();
  readonly #events: HeldEvent[] = [];
  #wake: (() => void) | null = null;
  #pending: { prompt: WorkerPrompt; resolve: (answer: PromptAnswer) => void } | null = null;
  #ended = false;
  // Set once a question went unanswered while no request served the call: nobody is left to ask.
  #givenUp = false;
  #onEnd: () => void = () => {};

  /**
   * A call of `owner` to `tool` bound to `binding` ({@linkcode HeldCalls.binding}); `kind` says
   * whether `tool` names a tool or an MCP prompt. @default kind "tool"
   */
  constructor(owner: string, tool: string, binding: string, kind: HeldKind = "tool") {
    this.owner = owner;
    this.tool = tool;
    this.binding = binding;
    this.kind = kind;
  }

  /** "Tool call <name>" or "Prompt <name>", for the log. */
  get label(): string {
    return `${this.kind === "tool" ? "Tool call" : "Prompt"} ${this.tool}`;
  }

  /** Aborted when the call is given up (its requester went away); the call's own signal. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The prompt waiting for an answer, if any. */
  get pending(): WorkerPrompt | null {
    return this.#pending?.prompt ?? null;
  }

  /** Whether the call has finished. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Runs `fn` once when the call finishes. */
  onEnd(fn: () => void): void {
    this.#onEnd = fn;
    if (this.#ended) fn();
  }

  /**
   * The call's `onPrompt`: queues the prompt and resolves with its answer. When `signal` aborts
   * (the worker layer gave up waiting) the prompt is no longer pending. Once a question went
   * unanswered past the time limit ({@linkcode giveUp}), every later one fails at once: its client
   * is gone, and a command asking in a loop would otherwise keep its worker a full
   * `UserInputTimeout` per question, none of which anyone can see.
   */
  prompted(prompt: WorkerPrompt, signal: AbortSignal): Promise<PromptAnswer> {
    if (this.#givenUp) return Promise.resolve({ action: "timeout" });
    return new Promise((resolve) => {
      const pending = { prompt, resolve };
      this.#pending = pending;
      signal.addEventListener("abort", () => {
        if (this.#pending !== pending) return;
        this.#pending = null;
        if (!this.busy) this.#givenUp = true;
        resolve({ action: "timeout" });
      }, { once: true });
      this.#push({ kind: "prompt", prompt });
    });
  }

  /** Records how the call ended: its result, or the error its request is to answer. */
  finished(event: Extract<HeldEvent, { kind: "finished" | "failed" }>): void {
    this.#pending = null;
    this.#ended = true;
    this.#push(event);
    this.#onEnd();
  }

  /** Answers the pending prompt; false when none waits. */
  answer(answer: PromptAnswer): boolean {
    const pending = this.#pending;
    if (!pending) return false;
    this.#pending = null;
    pending.resolve(answer);
    return true;
  }

  /**
   * No answer came in time: the pending prompt fails as unanswered, and so does every later one.
   * Nothing happens while a request serves the call (it was answered and runs on, with its client
   * there for its next question) or when no prompt waits.
   */
  giveUp(): void {
    if (this.busy || this.#pending === null) return;
    this.#givenUp = true;
    this.answer({ action: "timeout" });
  }

  /** Gives the call up: a pending prompt is cancelled (the pipeline stops) and the signal aborts. */
  abort(reason: string): void {
    this.answer({ action: "cancel" });
    this.#controller.abort(new Error(reason));
  }

  /** The next event; rejects when `signal` aborts first. */
  async next(signal: AbortSignal): Promise<HeldEvent> {
    while (this.#events.length === 0) {
      signal.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
        this.#wake = () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
      }).finally(() => (this.#wake = null));
    }
    return this.#events.shift()!;
  }

  #push(event: HeldEvent): void {
    this.#events.push(event);
    this.#wake?.();
  }
}

/** Options of {@linkcode HeldCalls}. */
export interface HeldCallsOptions {
  /**
   * How long a held call waits for its retry, and how long its request state is valid.
   * @default 120000 (`ShellConfiguration:UserInputTimeout`, "00:02:00")
   */
  timeoutMs: number;
  /** Most calls one caller may have held at once. @default 16 (`McpServer:MaxStreamsPerCaller`) */
  maxPerCaller: number;
  /** The setting `maxPerCaller` comes from, named in the refusal. @default "McpServer:MaxStreamsPerCaller" */
  maxPerCallerSetting?: string;
  /**
   * Most calls all callers together may have held at once: those held for a retry, and 2025-era
   * ones held in their request while they ask ({@linkcode HeldCalls.bounded}). Each keeps a worker
   * leased, one held for a retry without any request open, so without this bound one caller's
   * `Confirm: true` calls, answered by nobody, took every worker of the pool for `UserInputTimeout`.
   * @default Infinity (over HTTP: half of `McpServer:RunspacePool:MaxPoolSize`, at least 1)
   */
  maxHeld?: number;
}

/**
 * The request state's payload: which held call, which round of it, the call's binding, and a nonce
 * making each fresh.
 */
interface StatePayload {
  p: string;
  r: number;
  b: string;
  n: string;
}

const DEFAULTS = { timeoutMs: DEFAULT_USER_INPUT_TIMEOUT_MS, maxPerCaller: 16 };

/** The held calls of one svc process, and the codec of their request state. */
export class HeldCalls {
  // Those held for a retry, by id.
  readonly #calls = new Map<string, { call: HeldCall; timer: ReturnType<typeof setTimeout> }>();
  // 2025-era calls held in their request, their elicitation/create open now: each keeps a worker too.
  #asking = 0;
  readonly #codec: RequestStateCodec<StatePayload>;
  // Keys the bindings: a digest without it could be recomputed from guessed arguments.
  readonly #bindingKey = crypto.getRandomValues(new Uint8Array(32));
  readonly #options: Required<HeldCallsOptions>;

  /** A registry with a random key of its own: states it mints verify only here. */
  constructor(options: Partial<HeldCallsOptions> = {}) {
    this.#options = {
      ...DEFAULTS,
      maxPerCallerSetting: "McpServer:MaxStreamsPerCaller",
      maxHeld: Infinity,
      ...options,
    };
    this.#codec = createRequestStateCodec<StatePayload>({
      key: crypto.getRandomValues(new Uint8Array(32)),
      ttlSeconds: Math.max(1, Math.ceil(this.#options.timeoutMs / 1000)),
    });
  }

  /**
   * The binding of a call of `owner` to `tool` with `args`: a keyed digest of the three and of
   * `kind` (a tool and an MCP prompt of one name are different calls), the arguments in a
   * canonical form (object keys sorted), so a retry bringing the same arguments in another order
   * is the same call. @default kind "tool"
   */
  binding(owner: string, tool: string, args: unknown, kind: HeldKind = "tool"): string {
    let canonical: string;
    try {
      canonical = JSON.stringify(
        args ?? {},
        (_key, value) =>
          value !== null && typeof value === "object" && !Array.isArray(value)
            ? Object.fromEntries(
              Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
            )
            : value,
      );
    } catch {
      // Nested too deep to encode: such arguments are refused when the call is bound anyway.
      canonical = "\u0000unbindable";
    }
    return createHmac("sha256", this.#bindingKey).update(
      `${kind}\u0000${owner}\u0000${tool}\u0000${canonical}`,
    )
      .digest("base64url").slice(0, 32);
  }

  /** How many calls of `owner` are held for a retry. */
  heldBy(owner: string): number {
    let n = 0;
    for (const { call } of this.#calls.values()) if (call.owner === owner) n++;
    return n;
  }

  /**
   * Holds `call` at its pending prompt for `timeoutMs` (again, counted from now, when it was held
   * already): past it the prompt is answered `timeout` and the call dropped. Returns a refusal
   * when the caller has their most held calls already.
   */
  hold(call: HeldCall): string | null {
    const entry = this.#calls.get(call.id);
    if (entry) clearTimeout(entry.timer);
    else if (this.heldBy(call.owner) >= this.#options.maxPerCaller) {
      return `The call waits for input, but this caller already has ${this.#options.maxPerCaller} calls waiting for input (${this.#options.maxPerCallerSetting}); answer or cancel one first`;
    } else if (this.held >= this.#options.maxHeld) {
      return `The call waits for input, but ${this.#options.maxHeld} calls wait for input on this server already, as many as may (half of McpServer:RunspacePool:MaxPoolSize, so that the other workers keep serving); try again later`;
    }
    const timer = setTimeout(() => this.#expire(call), this.#options.timeoutMs);
    this.#calls.set(call.id, { call, timer });
    if (!entry) call.onEnd(() => this.release(call));
    return null;
  }

  /** How many calls are held now: those held for a retry, and 2025-era ones asking their users. */
  get held(): number {
    return this.#calls.size + this.#asking;
  }

  /**
   * `ask`, a 2025-era `onPrompt` (an `elicitation/create` sent during the call), counted with the
   * calls held for a retry against `maxHeld`: such a call is held in its request, keeping its worker
   * while its user is asked just as one held for a retry does. Past the bound a prompt is answered `timeout` at once (it fails as an unanswered
   * one), and svc's log says why.
   */
  bounded(
    ask: (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>,
  ): (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer> {
    return async (prompt, signal) => {
      if (this.held >= this.#options.maxHeld) {
        log.warning(
          "A prompt was not sent to its user: {Max} calls are held already (half of McpServer:RunspacePool:MaxPoolSize); it fails as unanswered.",
          { Max: this.#options.maxHeld },
        );
        return { action: "timeout" };
      }
      this.#asking++;
      try {
        return await ask(prompt, signal);
      } finally {
        this.#asking--;
      }
    };
  }

  /** Stops holding `call` (it finished or was given up). */
  release(call: HeldCall): void {
    const entry = this.#calls.get(call.id);
    if (entry?.call !== call) return;
    clearTimeout(entry.timer);
    this.#calls.delete(call.id);
  }

  /** The request state naming `call` at its current prompt. */
  state(call: HeldCall): Promise<string> {
    return this.#codec.mint({
      p: call.id,
      r: call.round,
      b: call.binding,
      n: crypto.randomUUID().slice(0, 8),
    });
  }

  /**
   * The held call a retry's `requestState` names, if `owner` may resume it with `tool` (a tool, or
   * an MCP prompt where `kind` says so) and `args`; it is marked busy until the request serving it
   * returns.
   *
   * @throws {ProtocolError} InvalidParams (-32602), one sentence saying why, when the state does
   * not verify (changed, expired, another process's), names no held call, an earlier prompt, another
   * caller's call, another tool or prompt or other arguments, or another request is resuming the
   * call.
   */
  async resume(
    state: unknown,
    tool: string,
    owner: string,
    args: unknown,
    kind: HeldKind = "tool",
  ): Promise<HeldCall> {
    const invalid = (reason: string) => invalidState(reason, kind);
    let payload: StatePayload;
    try {
      if (typeof state !== "string") throw new Error("malformed");
      // The codec's context is needed only for a `bind`, which this codec has none of.
      payload = await this.#codec.verify(state, undefined as unknown as ServerContext);
    } catch (error) {
      throw invalid(
        `requestState was not accepted (${
          error instanceof Error ? error.message : "malformed"
        }): it was changed, has expired (ShellConfiguration:UserInputTimeout) or was issued by another svc process`,
      );
    }
    const call = this.#calls.get(payload.p)?.call;
    // Another caller's call reads as no call at all, so a stolen state tells nothing.
    if (!call || call.owner !== owner || call.pending === null) {
      throw invalid(
        "requestState names no call waiting for input (it has finished, or no answer came within ShellConfiguration:UserInputTimeout)",
      );
    }
    if (call.kind !== kind) {
      throw invalid(
        `requestState belongs to a call of the ${call.kind} '${call.tool}', not of the ${kind} '${tool}'`,
      );
    }
    const named = (name: string) => kind === "tool" ? `'${name}'` : `prompt '${name}'`;
    if (call.tool !== tool) {
      throw invalid(`requestState belongs to a call of ${named(call.tool)}, not of ${named(tool)}`);
    }
    const binding = this.binding(owner, tool, args, kind);
    if (payload.b !== call.binding || binding !== call.binding) {
      throw invalid(
        `requestState belongs to a call of ${
          named(tool)
        } with other arguments: a question is answered only for the call that asked it`,
      );
    }
    if (payload.r !== call.round) {
      throw invalid("requestState answers an earlier question of this call; use the latest one");
    }
    if (call.busy) throw invalid("another request is answering this call's question already");
    call.busy = true;
    return call;
  }

  /** Gives every held call up (svc is stopping): their prompts are cancelled, their calls stopped. */
  close(): void {
    for (const { call } of [...this.#calls.values()]) {
      this.release(call);
      call.abort("svc is shutting down.");
    }
  }

  #expire(call: HeldCall): void {
    log.info("{Call}: no answer to its prompt within {TimeoutMs} ms; giving it up.", {
      Call: call.label,
      TimeoutMs: this.#options.timeoutMs,
    });
    this.release(call);
    call.giveUp();
  }
}

function invalidState(reason: string, kind: HeldKind): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `${reason}; ${
      kind === "tool" ? "call the tool" : "get the prompt"
    } again without requestState.`,
  );
}
