/**
 * One tool call, whichever transport carries it: the tool found as the caller may call it, its
 * arguments bound and checked, svc's refusals and its own question before it runs
 * (`lib/prompt_policy.ts`), the run on a worker the transport lends (a {@linkcode ToolRunner}: the
 * stdio session's one worker, or a pool lease), the result shaped, and the audit line. The MCP
 * server (`lib/mcp.ts`) and REST `/call` (`lib/http_rest.ts`) both call {@linkcode callTool}.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { Principal } from "./auth.ts";
import {
  bindArguments,
  type BindResult,
  type BoundArguments,
  isSecretArgument,
} from "./arguments.ts";
import { exceededLimit } from "./request_limits.ts";
import { chooseParameterSet } from "./parameter_set.ts";
import { restrictCommandTool } from "./catalog_command.ts";
import { tracedCall } from "./telemetry.ts";
import type { McpPromptDescriptor, ToolDescriptor } from "./tool_descriptor.ts";
import type { ShellSettings } from "./config.ts";
import { overrideOf, timeoutSettingOf } from "./config_overrides.ts";
import { callPrompts, confirmRun, promptPolicyOf, refusalBeforeRun } from "./prompt_policy.ts";
import { logger } from "./log.ts";
import { failureResult, toCallToolResult, workerFailureMessage } from "./result.ts";
import { WorkerUnavailableError } from "./errors.ts";
import type {
  InvokeOptions,
  PromptAnswer,
  RunspaceWorker,
  WorkerProgress,
  WorkerPrompt,
} from "./worker.ts";
import { outputShaping, refusedProperties, requestedProperties } from "./output_shaping.ts";
import { closestNames } from "./suggest.ts";
import { linkRest, type ResultPages } from "./result_pages.ts";

const log = logger("mcp");

/** What a transport needs to lend a worker for a call. */
export interface WorkerCall {
  /** Ends the wait for a worker and the call. */
  signal: AbortSignal;
  /** Who calls: the HTTP pool never runs it in a process serving another principal's call. */
  principal: Principal;
}

/** Where tools come from and which worker runs a call; implemented by each transport. */
export interface ToolRunner {
  /** The tools on offer; may wait for discovery on a cold start. */
  tools(): Promise<ToolDescriptor[]>;
  /** The MCP prompts on offer (`lib/mcp_prompt.ts`). @default none */
  prompts?(): Promise<McpPromptDescriptor[]>;
  /**
   * Lends a worker for one call and runs `use` on it: the stdio session's worker, or a pool lease
   * returned afterwards. `use` only invokes, so a transport may add its own invoke options (a
   * lease's reset chained to its call). Rejects with a WorkerUnavailableError when no worker is free
   * in time.
   */
  withWorker<T>(
    call: WorkerCall,
    use: (worker: Pick<RunspaceWorker, "invoke">) => Promise<T>,
  ): Promise<T>;
}

/** What a call needs besides its name, arguments and context. */
export interface CallOptions {
  /** Where tools come from and calls run. */
  runner: ToolRunner;
  /** Shell settings (time limits, result cap, overrides). */
  shell: ShellSettings;
  /** Whether a caller may see and call a tool. @default every caller may call every tool (stdio) */
  authorize?: (principal: Principal, tool: ToolDescriptor) => boolean;
  /** Log argument values, with secrets redacted, in the audit line. @default false (`Authentication:Audit:LogArguments`) */
  logArguments?: boolean;
}

/** The tools a caller may see. */
export async function toolsFor(
  options: CallOptions,
  principal: Principal,
): Promise<ToolDescriptor[]> {
  const tools = await options.runner.tools();
  return tools.map((tool) => visibleTool(options, principal, tool))
    .filter((tool): tool is ToolDescriptor => tool !== null);
}

/**
 * A tool as `principal` sees it: null when they may not call it; for a tool covering a whole
 * command, only the parameter sets they may call (each authorized with its own overrides).
 */
function visibleTool(
  options: CallOptions,
  principal: Principal,
  tool: ToolDescriptor,
): ToolDescriptor | null {
  const authorize = options.authorize;
  if (!authorize) return tool;
  return restrictCommandTool(tool, (set) => authorize(principal, set));
}

const requestSignal = new AsyncLocalStorage<AbortSignal | undefined>();

/**
 * Runs `fn` with the signal of the HTTP request being served: a tool call made inside also stops
 * when that request is aborted (the client disconnected). The 2025-era stateless transport cannot
 * deliver `notifications/cancelled` to the call it names, so this is how such a call is cancelled.
 */
export function withRequestSignal<T>(signal: AbortSignal, fn: () => T): T {
  return requestSignal.run(signal, fn);
}

/** The signal of the HTTP request being served, if any ({@linkcode withRequestSignal}). */
export function requestSignalNow(): AbortSignal | undefined {
  return requestSignal.getStore();
}

/** Runs `fn` outside any request's signal: a call held beyond the request that started it. */
export function outsideRequest<T>(fn: () => T): T {
  return requestSignal.run(undefined, fn);
}

/** How a tool call ended, for transports that map outcomes to their own status codes. */
export type CallOutcome =
  | { kind: "result"; result: CallToolResult }
  | { kind: "unknown-tool"; message: string }
  | { kind: "invalid-arguments"; result: CallToolResult; message: string }
  | { kind: "unavailable"; result: CallToolResult; message: string; retryAfterSeconds: number };

/**
 * Runs one tool call end to end, inside an `svc.tool.call` span: lookup, parameter set, argument
 * check, the runner, result shaping and the audit log line. Never throws for a call-level failure;
 * the outcome says what happened.
 */
export function callTool(
  options: CallOptions,
  name: string,
  args: unknown,
  context: CallContext,
): Promise<CallOutcome> {
  let command: string | null = null;
  return tracedCall(
    () =>
      runCall(options, name, args, context, (tool) => {
        command = tool.command;
      }),
    (outcome) => ({
      outcome: outcome.kind === "result" ? (outcome.result.isError ? "error" : "ok") : outcome.kind,
      tool: command === null ? null : name,
      command,
    }),
  );
}

/** What a tool call runs with besides its name and arguments. */
export interface CallContext {
  signal: AbortSignal;
  principal: Principal;
  /** Receives the call's `Write-Progress` records; without it none are kept. */
  onProgress?: (progress: WorkerProgress) => void;
  /**
   * Asks the user what the command prompts for (confirmations, Read-Host, PromptForChoice); present
   * only when the client can ask its user. @default none: every prompt fails at once, as it always did
   */
  onPrompt?: (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>;
  /** Why nobody can be asked, said where a call without `onPrompt` is refused or stopped. @default that the client declared no form elicitation */
  whyNobodyAsks?: string;
  /** Receives the call's stream records the client asked for as log messages; without it none are sent. */
  log?: InvokeOptions["log"];
  /**
   * Where output cut at `MaxResultBytes` is kept for `owner` as a resource the result links to.
   * @default none: what the result cannot hold is dropped
   */
  keepRest?: { pages: ResultPages; owner: string };
}

async function runCall(
  options: CallOptions,
  name: string,
  args: unknown,
  context: CallContext,
  onFound: (tool: ToolDescriptor) => void,
): Promise<CallOutcome> {
  const { shell } = options;
  const { principal } = context;
  const outer = requestSignal.getStore();
  const signal = outer ? AbortSignal.any([context.signal, outer]) : context.signal;
  const found = await findTool(options, name, principal);
  if (found.kind === "unknown-tool") return found;
  onFound(found.tool);
  const chosen = chooseParameterSet(found.tool, args);
  const tool = chosen.ok ? chosen.tool : found.tool;
  const bound = withinLimits(
    tool,
    chosen.ok ? bindArguments(tool, chosen.args) : chosen,
    shell,
  );
  const refusal = bound.ok
    ? refusalBeforeRun({
      tool,
      parameters: bound.value.parameters,
      policy: promptPolicyOf(shell, tool),
      canAsk: context.onPrompt !== undefined,
      ...(context.whyNobodyAsks ? { whyNobodyAsks: context.whyNobodyAsks } : {}),
    }, shell)
    : { invalid: true, message: bound.message };
  if (!bound.ok || refusal !== null) {
    const { invalid, message } = refusal!;
    log.info("Tool call {Tool} ({Command}) by {Principal} refused: {Message}", {
      Tool: tool.name,
      Command: tool.command,
      Principal: principal.name,
      Message: message,
    });
    return invalid
      ? { kind: "invalid-arguments", result: failureResult(message), message }
      : { kind: "result", result: failureResult(message) };
  }
  return await runBound(options, { tool, arguments: bound.value, signal, context });
}

/**
 * The tool `name` as `principal` may call it. One they may not call is refused exactly like one
 * that does not exist, and never suggested either; a command tool keeps only the sets they may
 * call, so a forbidden set is refused as an unknown one and never chosen for them.
 */
async function findTool(
  options: CallOptions,
  name: string,
  principal: Principal,
): Promise<
  { kind: "found"; tool: ToolDescriptor } | Extract<CallOutcome, { kind: "unknown-tool" }>
> {
  const tools = await toolsFor(options, principal);
  const found = tools.find((t) => t.name === name);
  if (found) return { kind: "found", tool: found };
  const close = closestNames(name, tools.map((t) => t.name));
  const message = `Unknown tool '${name}'${
    close.length > 0 ? `; did you mean ${close.map((c) => `'${c}'`).join(", ")}?` : ""
  }`;
  log.info("Tool call {Tool} by {Principal} refused: unknown tool.", {
    Tool: name,
    Principal: principal.name,
  });
  return { kind: "unknown-tool", message };
}

/** A call whose arguments were accepted, about to run. */
interface BoundCall {
  tool: ToolDescriptor;
  arguments: BoundArguments;
  /** The call's signal, joined with its HTTP request's. */
  signal: AbortSignal;
  context: CallContext;
}

/**
 * Runs an accepted call: svc's own question first for a `ConfirmBeforeRun` tool, then the command
 * on a worker the runner lends, its prompts audited; then the result and the audit line.
 */
async function runBound(options: CallOptions, call: BoundCall): Promise<CallOutcome> {
  const { runner, shell } = options;
  const { tool, signal, context } = call;
  const { principal } = context;
  const { parameters, credentials, shaping, provider } = call.arguments;
  const override = overrideOf(shell, tool);
  const policy = promptPolicyOf(shell, tool);
  const timeoutMs = override?.toolCallTimeoutMs ?? shell.toolCallTimeoutMs;
  const prompts = callPrompts(context.onPrompt, { tool, principal: principal.name, parameters });
  const started = performance.now();
  const finished = (result: CallToolResult, outcome: string): CallOutcome => {
    log.info("Tool call {Tool} ({Command}) by {Principal} finished: {Outcome} in {ElapsedMs} ms.", {
      Tool: tool.name,
      Command: tool.command,
      Principal: principal.name,
      Outcome: outcome,
      ElapsedMs: Math.round(performance.now() - started),
      ...(options.logArguments ? { Arguments: redactArguments(tool, parameters) } : {}),
    });
    return { kind: "result", result };
  };
  const answers = {
    userInputTimeoutMs: shell.userInputTimeoutMs,
    answeredBySetting: policy.answeredBySetting,
    ...(context.whyNobodyAsks ? { whyNobodyAsks: context.whyNobodyAsks } : {}),
  };
  if (policy.confirmBeforeRun) {
    const notRun = await confirmRun(prompts, { tool, parameters, signal }, answers);
    if (notRun) return finished(notRun, "not run");
  }
  try {
    const outcome = await runner.withWorker({ signal, principal }, (worker) =>
      worker.invoke(
        {
          command: tool.command,
          parameters,
          credentials,
          ...(provider ? { provider } : {}),
          depth: shell.serializationDepth,
          // A read-only command past what svc keeps only makes output nobody sees; stopping it
          // there is what _MaxResults does, while a command run for its effects runs to its end.
          stopWhenFull: tool.annotations.readOnlyHint,
          confirmPreference: shell.confirmPreference,
          ...(context.keepRest ? { keepOutputBytes: context.keepRest.pages.maxBytes } : {}),
          ...outputShaping(shell, override, shaping),
        },
        {
          signal,
          timeoutMs,
          userInputTimeoutMs: shell.userInputTimeoutMs,
          // Every call is interactive: where nobody can be asked, a prompt stops the command
          // instead of failing into an error it might run on from.
          onPrompt: prompts.onPrompt,
          onPromptEnd: prompts.onPromptEnd,
          ...(context.onProgress ? { onProgress: context.onProgress } : {}),
          ...(context.log ? { log: context.log } : {}),
        },
      ));
    const result = toCallToolResult(tool, outcome, {
      maxResultBytes: shell.maxResultBytes,
      timeoutMs,
      timeoutSetting: timeoutSettingOf(shell, tool),
      propertiesChosen: requestedProperties(shaping).length > 0,
      ...answers,
      parameters,
    });
    if (context.keepRest) linkRest(result, outcome.result, tool.name, context.keepRest);
    return finished(result, outcome.interrupted ?? (result.isError ? "error" : "ok"));
  } catch (error) {
    if (error instanceof WorkerUnavailableError) {
      log.warning("Tool call {Tool} ({Command}) by {Principal} refused: {Message}", {
        Tool: tool.name,
        Command: tool.command,
        Principal: principal.name,
        Message: error.message,
      });
      return {
        kind: "unavailable",
        result: failureResult(error.message),
        message: error.message,
        retryAfterSeconds: error.retryAfterSeconds,
      };
    }
    const message = workerFailureMessage(tool, error);
    log.warning(
      "Tool call {Tool} ({Command}) by {Principal} failed after {ElapsedMs} ms: {Message}",
      {
        Tool: tool.name,
        Command: tool.command,
        Principal: principal.name,
        ElapsedMs: Math.round(performance.now() - started),
        Message: message,
      },
    );
    return { kind: "result", result: failureResult(message) };
  }
}

/**
 * `bound`, or a refusal when its arguments ask for more work than the shell's limits allow, or for
 * output properties the command's `AllowedProperties` do not offer.
 */
function withinLimits(tool: ToolDescriptor, bound: BindResult, shell: ShellSettings): BindResult {
  if (!bound.ok) return bound;
  const refused = exceededLimit(tool.name, bound.value, shell.requestLimits) ??
    refusedProperties(tool, overrideOf(shell, tool), bound.value.shaping);
  return refused === null ? bound : { ok: false, message: refused };
}

/** Argument values for the audit line: credentials and secret-looking names are redacted. */
function redactArguments(
  tool: ToolDescriptor,
  parameters: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(parameters)) {
    out[name] = isSecretArgument(tool, name) ? "[redacted]" : value;
  }
  return out;
}
