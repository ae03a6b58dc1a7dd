/**
 * MCP prompts (`prompts/list`, `prompts/get`): a command of `ShellConfiguration:PromptCommands` run
 * like a tool call (a worker the transport lends, reset after over HTTP; its time limit, output
 * bound, roles, audit line and the questions it asks its user, under the same policy), its output
 * turned into the prompt's messages (docs/mcp-prompts.md). The arguments a client sends are bound
 * as the command's parameter values, never read as code.
 *
 * @module
 */
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type {
  GetPromptResult,
  InputRequiredResult,
  Prompt,
  PromptMessage,
  ServerContext,
} from "@modelcontextprotocol/server";
import { ownerOf, type Principal } from "./auth.ts";
import { bindArguments } from "./arguments.ts";
import { type CallOptions, outsideRequest, requestSignalNow, type WorkerCall } from "./call.ts";
import { overrideOf } from "./config_overrides.ts";
import type { HeldCalls } from "./input_required.ts";
import { callWithInput } from "./input_required_round.ts";
import {
  callPrompts,
  confirmRun,
  type PromptNoteOptions,
  promptNotes,
  promptPolicyOf,
  refusalBeforeRun,
  RUN_QUESTION_SEQ,
} from "./prompt_policy.ts";
import { describeErrors, workerFailureMessage } from "./result.ts";
import { closestNames } from "./suggest.ts";
import { WorkerUnavailableError } from "./errors.ts";
import { logger } from "./log.ts";
import type { McpPromptDescriptor, ToolParameter } from "./tool_descriptor.ts";
import type { InvokeOutcome } from "./worker.ts";
import type { PromptAnswer, WorkerPrompt } from "./worker_protocol.ts";

const log = logger("mcp");

/** The prompts a caller may get: those whose command's `RequiredRoles` they meet. */
export async function promptsFor(
  options: CallOptions,
  principal: Principal,
): Promise<McpPromptDescriptor[]> {
  const prompts = await options.runner.prompts?.() ?? [];
  const authorize = options.authorize;
  return authorize ? prompts.filter((p) => authorize(principal, p.tool)) : prompts;
}

/** A prompt as `prompts/list` shows it. */
export function toMcpPrompt(prompt: McpPromptDescriptor): Prompt {
  return {
    name: prompt.name,
    title: prompt.command,
    description: prompt.description,
    arguments: prompt.arguments.map((a) => ({ ...a })),
  };
}

/**
 * The prompt `name` as `principal` may get it; one they may not get is unknown to them, and never
 * suggested either. Throws the protocol error of an unknown prompt.
 */
export async function findPrompt(
  options: CallOptions,
  name: string,
  principal: Principal,
): Promise<McpPromptDescriptor> {
  const prompts = await promptsFor(options, principal);
  const found = prompts.find((p) => p.name === name);
  if (found) return found;
  const close = closestNames(name, prompts.map((p) => p.name));
  throw new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `Unknown prompt '${name}'${
      close.length > 0 ? `; did you mean ${close.map((c) => `'${c}'`).join(", ")}?` : ""
    }`,
  );
}

/**
 * A prompt argument's string as its parameter takes it: `true`/`false` for a switch or boolean, a
 * number for a numeric one, a one-item list for a list; anything else stays a string, which the
 * parameter's own check then refuses or accepts.
 */
export function argumentValue(parameter: Pick<ToolParameter, "schema">, value: string): unknown {
  const type = parameter.schema.type;
  if (type === "boolean") {
    return /^true$/i.test(value) ? true : /^false$/i.test(value) ? false : value;
  }
  if (type === "integer" || type === "number") {
    const number = Number(value);
    return value.trim() !== "" && Number.isFinite(number) ? number : value;
  }
  if (type === "array") {
    const items = parameter.schema.items;
    return [argumentValue({ schema: (items ?? {}) as ToolParameter["schema"] }, value)];
  }
  return value;
}

/** A `prompts/get`'s caller and how its command's questions reach its user. */
export interface PromptCall extends WorkerCall {
  /**
   * Asks the client's user what the command asks (as a tool call's `onPrompt`). @default none: a
   * question stops the command and the prompt fails, and a command that would ask is not run
   */
  onPrompt?: (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>;
  /** Why nobody can be asked, where `onPrompt` is absent. @default that the client declared no form elicitation */
  whyNobodyAsks?: string;
}

/** Runs prompt `name` for `call.principal` and returns its messages; throws a protocol error. */
export async function getPrompt(
  options: CallOptions,
  name: string,
  args: Record<string, string> | undefined,
  call: PromptCall,
): Promise<GetPromptResult> {
  const { shell, runner } = options;
  const { principal, signal } = call;
  const prompt = await findPrompt(options, name, principal);
  const tool = prompt.tool;
  const given: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args ?? {})) {
    const parameter = tool.parameters.find((p) => p.name.toLowerCase() === key.toLowerCase());
    given[key] = parameter && typeof value === "string" ? argumentValue(parameter, value) : value;
  }
  const bound = bindArguments(tool, given);
  if (!bound.ok) {
    const message = bound.message.replace(/ for tool '/, " for prompt '");
    log.info("Prompt {Prompt} ({Command}) by {Principal} refused: {Message}", {
      Prompt: prompt.name,
      Command: prompt.command,
      Principal: principal.name,
      Message: message,
    });
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, message);
  }
  const { parameters } = bound.value;
  const override = overrideOf(shell, tool);
  const timeoutMs = override?.toolCallTimeoutMs ?? shell.toolCallTimeoutMs;
  const policy = promptPolicyOf(shell, tool);
  const whyNobodyAsks = call.whyNobodyAsks ? { whyNobodyAsks: call.whyNobodyAsks } : {};
  // The rules of a tool call: a command that would ask, from a client that cannot ask its user,
  // is not run at all; one that asks is stopped where nobody answers.
  const refusal = refusalBeforeRun({
    tool,
    parameters,
    policy,
    canAsk: call.onPrompt !== undefined,
    ...whyNobodyAsks,
  }, shell);
  if (refusal !== null) {
    const message = `Prompt '${prompt.name}' (${prompt.command}) was not run: ${refusal.message}`;
    log.info("Prompt {Prompt} ({Command}) by {Principal} refused: {Message}", {
      Prompt: prompt.name,
      Command: prompt.command,
      Principal: principal.name,
      Message: message,
    });
    throw new ProtocolError(
      refusal.invalid ? ProtocolErrorCode.InvalidParams : ProtocolErrorCode.InternalError,
      message,
    );
  }
  const asked = callPrompts(call.onPrompt, { tool, principal: principal.name, parameters });
  const answers = {
    userInputTimeoutMs: shell.userInputTimeoutMs,
    answeredBySetting: policy.answeredBySetting,
    ...whyNobodyAsks,
  };
  const started = performance.now();
  const finished = (outcome: string) =>
    log.info("Prompt {Prompt} ({Command}) by {Principal} finished: {Outcome} in {ElapsedMs} ms.", {
      Prompt: prompt.name,
      Command: prompt.command,
      Principal: principal.name,
      Outcome: outcome,
      ElapsedMs: Math.round(performance.now() - started),
    });
  if (policy.confirmBeforeRun) {
    const notRun = await confirmRun(asked, { tool, parameters, signal }, answers);
    if (notRun) {
      finished("not run");
      const note = (notRun.structuredContent as { notes: string[] }).notes[0];
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `Prompt '${prompt.name}' (${prompt.command}) gave no messages: ${note}`,
      );
    }
  }
  let outcome: InvokeOutcome;
  try {
    outcome = await runner.withWorker({ signal, principal }, (worker) =>
      worker.invoke(
        {
          command: tool.command,
          parameters,
          credentials: [],
          depth: shell.serializationDepth,
          confirmPreference: shell.confirmPreference,
        },
        {
          signal,
          timeoutMs,
          userInputTimeoutMs: shell.userInputTimeoutMs,
          onPrompt: asked.onPrompt,
          onPromptEnd: asked.onPromptEnd,
        },
      ));
  } catch (error) {
    const message = error instanceof WorkerUnavailableError
      ? error.message
      : workerFailureMessage(tool, error);
    finished("error");
    throw new ProtocolError(ProtocolErrorCode.InternalError, `Prompt '${prompt.name}': ${message}`);
  }
  const failure = failureOf(prompt, outcome, { timeoutMs, ...answers, parameters });
  if (failure !== null) {
    finished(outcome.interrupted ?? "error");
    throw new ProtocolError(ProtocolErrorCode.InternalError, failure);
  }
  const messages = messagesOf(prompt, outcome.result.output);
  if (typeof messages === "string") {
    finished("error");
    throw new ProtocolError(ProtocolErrorCode.InternalError, messages);
  }
  finished("ok");
  return { description: prompt.description, messages };
}

/**
 * A 2026-07-28 `prompts/get` that may be held for its user, as a tool call is
 * (`lib/input_required.ts`): its command's questions become `input_required` results, and a retry
 * with `requestState` resumes it only for the same caller, prompt and arguments. Its command runs
 * outside the first HTTP request's signal, which ends with that request's response. Answers sent
 * up front count only where `PromptsAnsweredBy` lets the caller answer. A caller who is nobody in
 * particular ({@linkcode ownerOf} is null) has nothing held: its command's questions go
 * unanswered, and a `requestState` it sends names nothing.
 */
export async function holdablePrompt(
  options: CallOptions,
  calls: HeldCalls,
  request: { name: string; arguments?: Record<string, string> | undefined },
  ctx: ServerContext,
  principal: Principal,
): Promise<GetPromptResult | InputRequiredResult> {
  const { name, arguments: args } = request;
  // The HTTP request's own signal too: a client that disconnects gives its call up.
  const signal = AbortSignal.any([ctx.mcpReq.signal, requestSignalNow() ?? ctx.mcpReq.signal]);
  const owner = ownerOf(principal);
  if (owner === null) {
    if (ctx.mcpReq.requestState() !== undefined) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        "requestState names no call waiting for input (a caller whose token has no 'sub' claim has no call held); get the prompt again without requestState.",
      );
    }
    return await getPrompt(options, name, args, {
      signal,
      principal,
      whyNobodyAsks:
        "svc holds a call for its user only for a caller it can name, and this caller's token has no 'sub' claim",
    });
  }
  const prompt = (await promptsFor(options, principal)).find((p) => p.name === name);
  const callerAnswers = prompt !== undefined &&
    promptPolicyOf(options.shell, prompt.tool).answeredBy === "Caller";
  return await callWithInput<GetPromptResult>({
    calls,
    kind: "prompt",
    tool: name,
    owner,
    arguments: args,
    requestState: ctx.mcpReq.requestState(),
    inputResponses: ctx.mcpReq.inputResponses,
    answersUpFront: (asked) => callerAnswers && asked.seq !== RUN_QUESTION_SEQ,
    signal,
    start: (held) =>
      outsideRequest(() =>
        getPrompt(options, name, args, {
          signal: held.signal,
          principal,
          onPrompt: held.onPrompt,
        })
      ),
    refused: (message) => {
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `Prompt '${name}' gave no messages: ${message}`,
      );
    },
  });
}

/** Why a prompt's run gave no messages, or null when it gave them. */
function failureOf(
  prompt: McpPromptDescriptor,
  outcome: InvokeOutcome,
  options: Omit<PromptNoteOptions, "stopped"> & { timeoutMs: number },
): string | null {
  const { result, interrupted } = outcome;
  const { timeoutMs } = options;
  if (interrupted === "timeout") {
    return `Prompt '${prompt.name}' (${prompt.command}) was stopped after its time limit of ${
      timeoutMs / 1000
    } s (ShellConfiguration:ToolCallTimeout)`;
  }
  if (interrupted === "prompt") {
    // The sentence a tool call's result ends with: who answered what, or why nobody could.
    const note = promptNotes(outcome.prompts ?? [], { ...options, stopped: true }).at(-1) ??
      "it was stopped at a question to its user";
    return `Prompt '${prompt.name}' (${prompt.command}) gave no messages: ${note}`;
  }
  if (interrupted !== null) {
    return `Prompt '${prompt.name}' (${prompt.command}) was stopped: it was cancelled`;
  }
  const terminating = result.errors.filter((e) => e.terminating);
  if (terminating.length > 0 || (result.hadErrors && result.output.length === 0)) {
    const errors = terminating.length > 0 ? terminating : result.errors;
    return `Prompt '${prompt.name}' failed: ${describeErrors(prompt.command, errors)}`;
  }
  if (result.outputCut) {
    return `Prompt '${prompt.name}' (${prompt.command}) wrote more than ShellConfiguration:MaxResultBytes allows (at least ${result.outputCut.bytes} bytes); svc gives no part of a prompt`;
  }
  return null;
}

const ROLES = new Set(["user", "assistant"]);
const CONTENT_TYPES = new Set(["text", "image", "audio", "resource", "resource_link"]);

/**
 * The messages of a prompt's output (docs/mcp-prompts.md): a string is one user message; an object
 * with a `role` (user, assistant) and a `content` (a string, a content block, or a list of them) is
 * one message per block; any other value is a user message holding its JSON. Returns why when an
 * object that names a role is not a message.
 */
export function messagesOf(
  prompt: Pick<McpPromptDescriptor, "name">,
  output: unknown[],
): PromptMessage[] | string {
  const messages: PromptMessage[] = [];
  for (const [index, item] of output.entries()) {
    if (typeof item === "string") {
      messages.push({ role: "user", content: { type: "text", text: item } });
      continue;
    }
    const fields = item !== null && typeof item === "object" && !Array.isArray(item)
      ? caseless(item as Record<string, unknown>)
      : null;
    if (fields === null || !fields.has("role")) {
      messages.push({ role: "user", content: { type: "text", text: JSON.stringify(item) } });
      continue;
    }
    const role = fields.get("role");
    const why = (what: string) =>
      `Prompt '${prompt.name}' wrote output item ${
        index + 1
      } with a role, which is not a message: ${what}`;
    if (typeof role !== "string" || !ROLES.has(role.toLowerCase())) {
      return why(`its role must be 'user' or 'assistant', not ${JSON.stringify(role)}`);
    }
    const content = fields.get("content");
    const blocks = Array.isArray(content) ? content : [content];
    if (blocks.length === 0) return why("its content is empty");
    for (const block of blocks) {
      const built = contentOf(block);
      if (typeof built === "string") return why(built);
      messages.push({ role: role.toLowerCase() as PromptMessage["role"], content: built });
    }
  }
  if (messages.length === 0) return `Prompt '${prompt.name}' wrote no output, so it has no message`;
  return messages;
}

/** A content block of a message, or why the value is not one. */
function contentOf(value: unknown): PromptMessage["content"] | string {
  if (typeof value === "string") return { type: "text", text: value };
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return `its content must be a string or a content block, not ${JSON.stringify(value)}`;
  }
  const block = lowerKeys(value as Record<string, unknown>);
  const type = block["type"];
  if (typeof type !== "string" || !CONTENT_TYPES.has(type)) {
    return `a content block's type must be one of ${[...CONTENT_TYPES].join(", ")}, not ${
      JSON.stringify(type)
    }`;
  }
  const text = (key: string) => typeof block[key] === "string";
  switch (type) {
    case "text":
      return text("text") ? { type, text: block["text"] as string } : "a text block needs a text";
    case "image":
    case "audio":
      return text("data") && text("mimetype")
        ? { type, data: block["data"] as string, mimeType: block["mimetype"] as string }
        : `an ${type} block needs data (base64) and a mimeType`;
    case "resource_link":
      return text("uri") && text("name")
        ? {
          type,
          uri: block["uri"] as string,
          name: block["name"] as string,
          ...(text("mimetype") ? { mimeType: block["mimetype"] as string } : {}),
          ...(text("description") ? { description: block["description"] as string } : {}),
        }
        : "a resource_link block needs a uri and a name";
    default: {
      const inner = block["resource"];
      const resource = inner !== null && typeof inner === "object" && !Array.isArray(inner)
        ? lowerKeys(inner as Record<string, unknown>)
        : null;
      const uri = resource?.["uri"];
      const body = resource?.["text"] ?? resource?.["blob"];
      if (resource === null || typeof uri !== "string" || typeof body !== "string") {
        return "a resource block needs a resource with a uri and a text or a blob (base64)";
      }
      const mimeType = typeof resource["mimetype"] === "string"
        ? { mimeType: resource["mimetype"] as string }
        : {};
      return typeof resource["text"] === "string"
        ? { type: "resource", resource: { uri, text: body, ...mimeType } }
        : { type: "resource", resource: { uri, blob: body, ...mimeType } };
    }
  }
}

/** An object's fields by lowercase name: PowerShell writes `Role` as readily as `role`. */
function caseless(value: Record<string, unknown>): Map<string, unknown> {
  return new Map(Object.entries(value).map(([k, v]) => [k.toLowerCase(), v]));
}

function lowerKeys(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(caseless(value));
}
