/**
 * The MCP server object shared by both transports: `tools/list` from the catalog and `tools/call`
 * through argument binding, a worker run and result shaping. Where the worker comes from (the stdio
 * session's one worker, or a pool lease) is the transport's business, given as a {@linkcode ToolRunner}.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  CLIENT_CAPABILITIES_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  Server,
} from "@modelcontextprotocol/server";
import type {
  AuthInfo,
  CallToolRequest,
  CallToolResult,
  ClientCapabilities,
  InputRequiredResult,
  ServerContext,
  Tool,
} from "@modelcontextprotocol/server";
import { ownerOf, type Principal } from "./auth.ts";
import { callWithInput, type HeldCalls } from "./input_required.ts";
import { bindArguments, type BindResult, type BoundArguments } from "./arguments.ts";
import { exceededLimit } from "./request_limits.ts";
import { chooseParameterSet } from "./parameter_set.ts";
import { restrictCommandTool } from "./catalog_command.ts";
import { tracedCall } from "./telemetry.ts";
import type { ToolDescriptor } from "./tool_descriptor.ts";
import type { ShellSettings } from "./config.ts";
import { overrideOf, timeoutSettingOf } from "./config_overrides.ts";
import {
  callPrompts,
  confirmRun,
  offeredSchema,
  promptPolicyOf,
  type PromptSettings,
  refusalBeforeRun,
  RUN_QUESTION_SEQ,
} from "./prompt_policy.ts";
import { isSecretArgument } from "./arguments.ts";
import { settingOf } from "./config_schema.ts";
import { logger } from "./log.ts";
import {
  failureResult,
  RESULT_OUTPUT_SCHEMA,
  resultSizeHint,
  SERVER_INSTRUCTIONS,
  toCallToolResult,
  workerFailureMessage,
} from "./result.ts";
import { WorkerUnavailableError } from "./errors.ts";
import type {
  InvokeOptions,
  PromptAnswer,
  RunspaceWorker,
  WorkerProgress,
  WorkerPrompt,
} from "./worker.ts";
import { CallLog, requestLogLevel, sessionLogLevel } from "./client_log.ts";
import { outputShaping, refusedProperties, requestedProperties } from "./output_shaping.ts";
import { closestNames } from "./suggest.ts";
import { pushedPrompts } from "./elicitation_push.ts";
import { asksForms, INPUT_REQUIRED_REVISION } from "./elicitation.ts";

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

/** Options of {@linkcode createMcpServer}. */
export interface McpServerOptions {
  /** Where tools come from and calls run. */
  runner: ToolRunner;
  /** Shell settings (time limits, result cap, overrides). */
  shell: ShellSettings;
  /** svc's version, reported as serverInfo. */
  version: string;
  /** Whether a caller may see and call a tool. @default every caller may call every tool (stdio) */
  authorize?: (principal: Principal, tool: ToolDescriptor) => boolean;
  /** Log argument values, with secrets redacted, in the audit line. @default false (`Authentication:Audit:LogArguments`) */
  logArguments?: boolean;
  /**
   * Where calls of 2026-07-28 clients wait for their users' answers (`lib/input_required.ts`).
   * @default none: such a call's prompts fail at once, as for a client that cannot answer them
   */
  heldCalls?: HeldCalls;
  /**
   * Whether the connection can carry a request to the client while a call runs, as a 2025-era
   * prompt's `elicitation/create`. @default true; false for a Stateful HTTP session answering in
   * JSON, which has no stream for it
   */
  requestsDuringCall?: boolean;
}

/** The principal of a request, as the HTTP transport passes it in `authInfo`; else the local user. */
function principalOf(authInfo: AuthInfo | undefined): Principal {
  const principal = authInfo?.extra?.["principal"] as Principal | undefined;
  return principal ?? LOCAL;
}

/** Wraps a principal for the SDK's `authInfo`; the credential itself is never passed on. */
export function authInfoOf(principal: Principal): AuthInfo {
  return { token: "", clientId: principal.name, scopes: principal.scopes, extra: { principal } };
}

const LOCAL: Principal = { name: "local", scheme: null, scopes: [], roles: [] };

/** The tools a caller may see. */
export async function toolsFor(
  options: McpServerOptions,
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
  options: McpServerOptions,
  principal: Principal,
  tool: ToolDescriptor,
): ToolDescriptor | null {
  const authorize = options.authorize;
  if (!authorize) return tool;
  return restrictCommandTool(tool, (set) => authorize(principal, set));
}

const DEFAULT_RESULT_BYTES = settingOf("ShellConfiguration:MaxResultBytes")!.default as number;

/**
 * Converts a descriptor to the MCP `Tool` shape of `tools/list`, its schema as the caller sees it
 * (`Confirm` only true where only the user answers prompts); under a `MaxResultBytes` above its
 * default it carries the result size hint Claude Code reads ({@linkcode resultSizeHint}).
 */
export function toMcpTool(
  tool: ToolDescriptor,
  shell: Pick<ShellSettings, "maxResultBytes"> & PromptSettings,
): Tool {
  const hint = resultSizeHint(shell.maxResultBytes, DEFAULT_RESULT_BYTES);
  return {
    name: tool.name,
    title: tool.command,
    description: tool.description,
    inputSchema: offeredSchema(tool, promptPolicyOf(shell, tool)) as Tool["inputSchema"],
    outputSchema: RESULT_OUTPUT_SCHEMA as unknown as Tool["outputSchema"],
    annotations: wireAnnotations(tool.annotations),
    ...(hint === null ? {} : { _meta: { "anthropic/maxResultSizeChars": hint } }),
  };
}

/**
 * Annotations as `tools/list` carries them: the hints a client would not assume (MCP's defaults
 * are not read-only, destructive, not idempotent, open world; `destructiveHint` means something
 * only for a tool that is not read-only). The title is the tool's own `title`.
 */
function wireAnnotations(annotations: ToolDescriptor["annotations"]): Tool["annotations"] {
  const { readOnlyHint, destructiveHint, idempotentHint, openWorldHint } = annotations;
  return {
    readOnlyHint,
    ...(readOnlyHint ? {} : { destructiveHint }),
    ...(idempotentHint ? { idempotentHint } : {}),
    ...(openWorldHint ? {} : { openWorldHint }),
  };
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
  options: McpServerOptions,
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
  /** Receives the call's stream records the client asked for as log messages; without it none are sent. */
  log?: InvokeOptions["log"];
}

async function runCall(
  options: McpServerOptions,
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
  options: McpServerOptions,
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
async function runBound(options: McpServerOptions, call: BoundCall): Promise<CallOutcome> {
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

/**
 * Turns progress records into `notifications/progress` params. The MCP spec wants `progress` to
 * rise with every notification: a percentage is sent as progress of a total of 100 (nudged up by
 * 0.01 when a record repeats or lowers it), a record without one counts up by 1 with no total.
 * `Write-Progress -Completed` records are not sent; the result says the call is over.
 */
export function progressNotifier(
  send: (params: { progress: number; total?: number; message: string }) => Promise<void>,
): (progress: WorkerProgress) => void {
  let last = 0;
  let sent = false;
  return (record) => {
    if (record.completed) return;
    const hasPercent = record.percent >= 0 && record.percent <= 100;
    const next = hasPercent
      ? Math.max(record.percent, sent ? last + 0.01 : 0)
      : (sent ? last + 1 : 1);
    last = Math.round(next * 100) / 100;
    sent = true;
    const parts = [record.activity, record.status, record.operation].filter((p) => p);
    const message = parts.join(": ") + (hasPercent ? ` (${record.percent}%)` : "");
    void send({ progress: last, ...(hasPercent ? { total: 100 } : {}), message }).catch(() => {});
  };
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

/** A tools/call's result, or the protocol error of an unknown tool. */
function resultOf(outcome: CallOutcome): CallToolResult {
  if (outcome.kind === "unknown-tool") {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, outcome.message);
  }
  return outcome.result;
}

/**
 * Whether a request's call may pause for its user: a 2026-07-28 request whose client declares form
 * elicitation, or any 2026-07-28 retry carrying `requestState` (which is checked, never ignored).
 */
function mayPause(ctx: ServerContext): boolean {
  // The SDK types the envelope's keys as none; they are those of the 2026-07-28 `_meta`.
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const version = envelope?.[PROTOCOL_VERSION_META_KEY];
  if (typeof version !== "string" || version < INPUT_REQUIRED_REVISION) return false;
  if (ctx.mcpReq.requestState() !== undefined) return true;
  return asksForms(envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined);
}

/**
 * A 2026-07-28 call that may pause: its prompts become `input_required` results and it is held
 * until the client retries with the answers (`lib/input_required.ts`). It runs outside the first
 * HTTP request's signal, which ends with that request's response.
 */
async function pausableCall(
  options: McpServerOptions,
  calls: HeldCalls,
  request: CallToolRequest,
  ctx: ServerContext,
  context: CallContext,
): Promise<CallToolResult | InputRequiredResult> {
  const { name, arguments: args } = request.params;
  const principal = context.principal;
  const tool = (await toolsFor(options, principal)).find((t) => t.name === name);
  // Where the caller may answer for the user, its answers sent with the call count, but never for
  // svc's own question before a ConfirmBeforeRun tool runs. The policy is that of the parameter
  // set the call runs, as in runCall: a whole-command tool's own may differ from its sets'.
  const chosen = tool === undefined ? null : chooseParameterSet(tool, args);
  const callerAnswers = chosen?.ok === true &&
    promptPolicyOf(options.shell, chosen.tool).answeredBy === "Caller";
  return await callWithInput({
    calls,
    tool: name,
    owner: ownerOf(principal) ?? `unnamed:${principal.name}`,
    arguments: args,
    requestState: ctx.mcpReq.requestState(),
    inputResponses: ctx.mcpReq.inputResponses,
    answersUpFront: (prompt) => callerAnswers && prompt.seq !== RUN_QUESTION_SEQ,
    // The HTTP request's own signal too: a client that disconnects gives its call up.
    signal: AbortSignal.any([ctx.mcpReq.signal, requestSignal.getStore() ?? ctx.mcpReq.signal]),
    ...(context.onProgress ? { onProgress: context.onProgress } : {}),
    ...(context.log ? { onLog: context.log.onLog } : {}),
    start: ({ onLog, ...call }) =>
      requestSignal.run(undefined, async () =>
        resultOf(
          await callTool(options, name, args, {
            ...context,
            ...call,
            // The level of the request that started the call decides what the worker sends.
            ...(context.log ? { log: { level: context.log.level, onLog } } : {}),
          }),
        )),
  });
}

/** Builds one MCP server instance serving the runner's tools. */
export function createMcpServer(options: McpServerOptions): Server {
  const { version } = options;
  const server = new Server(
    { name: "svc", version },
    {
      capabilities: { tools: { listChanged: true }, logging: {} },
      instructions: SERVER_INSTRUCTIONS,
    },
  );
  const sessionLevel = sessionLogLevel(server);

  server.setRequestHandler("tools/list", async (_request, ctx) => {
    const tools = await toolsFor(options, principalOf(ctx.http?.authInfo));
    return { tools: tools.map((tool) => toMcpTool(tool, options.shell)) };
  });

  server.setRequestHandler(
    "tools/call",
    async (request, ctx): Promise<CallToolResult | InputRequiredResult> => {
      const token = request.params._meta?.progressToken ?? ctx.mcpReq._meta?.progressToken;
      const asked = pushedPrompts(server, ctx, options.requestsDuringCall ?? true);
      // Counted with the held calls of 2026-07-28 clients: together they may keep half the pool.
      const pushed = asked && options.heldCalls ? options.heldCalls.bounded(asked) : asked;
      // Log messages go with the call (its response stream over HTTP), as its progress does.
      const callLog = CallLog.for(
        request.params.name,
        requestLogLevel(ctx, sessionLevel),
        (params) => ctx.mcpReq.notify({ method: "notifications/message", params }),
      );
      const context: CallContext = {
        signal: ctx.mcpReq.signal,
        principal: principalOf(ctx.http?.authInfo),
        ...(pushed ? { onPrompt: pushed } : {}),
        ...(token === undefined ? {} : {
          onProgress: progressNotifier((params) =>
            ctx.mcpReq.notify({
              method: "notifications/progress",
              params: { progressToken: token, ...params },
            })
          ),
        }),
        ...(callLog ? { log: callLog } : {}),
      };
      try {
        if (options.heldCalls && mayPause(ctx)) {
          return await pausableCall(options, options.heldCalls, request, ctx, context);
        }
        return resultOf(
          await callTool(options, request.params.name, request.params.arguments, context),
        );
      } finally {
        await callLog?.finish();
      }
    },
  );

  return server;
}
