/**
 * The MCP server object shared by both transports: `tools/list` from the catalog, and `tools/call`
 * through `lib/call.ts` with what MCP adds to a call: progress and log notifications, prompts as
 * `elicitation/create` (2025-11-25) or `input_required` rounds (2026-07-28), and the protocol error
 * of an unknown tool. Resources (`lib/resources.ts`) and `completion/complete`
 * (`lib/mcp_completion.ts`) always; where the configuration offers prompts, `prompts/list` and
 * `prompts/get` (`lib/mcp_prompt.ts`) too.
 *
 * @module
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  Server,
} from "@modelcontextprotocol/server";
import type {
  AuthInfo,
  CacheHint,
  CallToolRequest,
  CallToolResult,
  ClientCapabilities,
  InputRequiredResult,
  ServerContext,
  Tool,
} from "@modelcontextprotocol/server";
import { ownerOf, type Principal } from "./auth.ts";
import {
  type CallContext,
  type CallOptions,
  type CallOutcome,
  callTool,
  outsideRequest,
  requestSignalNow,
  toolsFor,
} from "./call.ts";
import type { HeldCalls } from "./input_required.ts";
import { callWithInput } from "./input_required_round.ts";
import { chooseParameterSet } from "./parameter_set.ts";
import type { ToolDescriptor } from "./tool_descriptor.ts";
import type { ShellSettings } from "./config.ts";
import {
  offeredSchema,
  promptPolicyOf,
  type PromptSettings,
  RUN_QUESTION_SEQ,
} from "./prompt_policy.ts";
import { settingOf } from "./config_schema.ts";
import { RESULT_OUTPUT_SCHEMA, resultSizeHint, SERVER_INSTRUCTIONS } from "./result.ts";
import type { WorkerProgress } from "./worker.ts";
import { CallLog, requestLogLevel, sessionLogLevel } from "./client_log.ts";
import { pushedPrompts } from "./elicitation_push.ts";
import { asksForms, INPUT_REQUIRED_REVISION } from "./elicitation.ts";
import { getPrompt, holdablePrompt, promptsFor, toMcpPrompt } from "./mcp_prompt.ts";
import { complete } from "./mcp_completion.ts";
import { registerResources } from "./resources.ts";
import { sendResourcesUpdated } from "./resource_subscriptions.ts";
import type { ResultPages } from "./result_pages.ts";

/** Options of {@linkcode createMcpServer}. */
export interface McpServerOptions extends CallOptions {
  /** svc's version, reported as serverInfo. */
  version: string;
  /**
   * The process's held calls (`lib/input_required.ts`): where a 2026-07-28 call is held for its
   * user's answers, and what bounds 2025-era calls asking theirs too. @default none: a 2026-07-28
   * call's prompts fail at once, as for a client that cannot answer them
   */
  heldCalls?: HeldCalls;
  /**
   * Whether the connection can carry a request to the client while a call runs, as a 2025-era
   * prompt's `elicitation/create`. @default true; false for a Stateful HTTP session answering in
   * JSON, which has no stream for it
   */
  requestsDuringCall?: boolean;
  /**
   * The `ttlMs` and `cacheScope` of a 2026-07-28 `tools/list` result ({@linkcode toolsListCacheHint}).
   * @default the SDK's: 0 and private
   */
  toolsListCache?: CacheHint;
  /**
   * Where output cut at `MaxResultBytes` is kept as a resource its result links to
   * (`lib/result_pages.ts`). @default none: what a result cannot hold is dropped
   */
  resultPages?: ResultPages;
}

/**
 * How long a tool list stays as it is when the tools cannot reload: only a restart (a new
 * configuration, a new version of a module) changes it then, and five minutes bounds how long a
 * client that does not listen for `tools/list_changed` keeps a list from before one.
 */
export const TOOLS_LIST_TTL_MS = 300_000;

/**
 * The cache hint of `tools/list`: `public` when every caller sees the same list (no
 * authentication), else `private` (roles decide which tools a caller sees); a TTL of
 * {@linkcode TOOLS_LIST_TTL_MS} unless the tools reload on a change of their code
 * (`ReloadOnChange`), when the list may change at any moment and 0 says to ask again.
 */
export function toolsListCacheHint(
  options: { authenticated: boolean; reloadOnChange: boolean },
): CacheHint {
  return {
    ttlMs: options.reloadOnChange ? 0 : TOOLS_LIST_TTL_MS,
    cacheScope: options.authenticated ? "private" : "public",
  };
}

/**
 * What the context of every `tools/call` holds, however it arrives: its signal, its caller, and
 * where output past the cut is kept for that caller (when the server keeps it and the caller has an
 * owner). Progress, log messages and prompts are added by whoever can carry them.
 */
export function callContextOf(
  options: McpServerOptions,
  principal: Principal,
  signal: AbortSignal,
): CallContext {
  const owner = options.resultPages ? ownerOf(principal) : null;
  return {
    signal,
    principal,
    ...(owner === null ? {} : { keepRest: { pages: options.resultPages!, owner } }),
  };
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

/** A tools/call's result, or the protocol error of an unknown tool. */
function resultOf(outcome: CallOutcome): CallToolResult {
  if (outcome.kind === "unknown-tool") {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, outcome.message);
  }
  return outcome.result;
}

/**
 * Whether a request's call may be held for its user: a 2026-07-28 request whose client declares
 * form elicitation, or any 2026-07-28 retry carrying `requestState` (which is checked, never
 * ignored).
 */
function mayHold(ctx: ServerContext): boolean {
  // The SDK types the envelope's keys as none; they are those of the 2026-07-28 `_meta`.
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const version = envelope?.[PROTOCOL_VERSION_META_KEY];
  if (typeof version !== "string" || version < INPUT_REQUIRED_REVISION) return false;
  if (ctx.mcpReq.requestState() !== undefined) return true;
  return asksForms(envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined);
}

/**
 * A 2026-07-28 call that may be held: its prompts become `input_required` results and it is held
 * until the client retries with the answers (`lib/input_required.ts`). It runs outside the first
 * HTTP request's signal, which ends with that request's response. A caller who is nobody in
 * particular ({@linkcode ownerOf} is null: a token without `sub`) has no call held: its call runs as
 * one whose client cannot answer, and a `requestState` it sends names nothing.
 */
async function holdableCall(
  options: McpServerOptions,
  calls: HeldCalls,
  request: CallToolRequest,
  ctx: ServerContext,
  context: CallContext,
): Promise<CallToolResult | InputRequiredResult> {
  const { name, arguments: args } = request.params;
  const principal = context.principal;
  const owner = ownerOf(principal);
  if (owner === null) {
    if (ctx.mcpReq.requestState() !== undefined) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        "requestState names no call waiting for input (a caller whose token has no 'sub' claim has no call held); call the tool again without requestState.",
      );
    }
    const whyNobodyAsks =
      "svc holds a call for its user only for a caller it can name, and this caller's token has no 'sub' claim";
    return resultOf(await callTool(options, name, args, { ...context, whyNobodyAsks }));
  }
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
    owner,
    arguments: args,
    requestState: ctx.mcpReq.requestState(),
    inputResponses: ctx.mcpReq.inputResponses,
    answersUpFront: (prompt) => callerAnswers && prompt.seq !== RUN_QUESTION_SEQ,
    // The HTTP request's own signal too: a client that disconnects gives its call up.
    signal: AbortSignal.any([ctx.mcpReq.signal, requestSignalNow() ?? ctx.mcpReq.signal]),
    ...(context.onProgress ? { onProgress: context.onProgress } : {}),
    ...(context.log ? { onLog: context.log.onLog } : {}),
    start: ({ onLog, ...call }) =>
      outsideRequest(async () =>
        resultOf(
          await callTool(options, name, args, {
            ...context,
            ...call,
            // The level of the request that started the call decides what the worker sends.
            ...(context.log ? { log: { level: context.log.level, onLog } } : {}),
          }),
        )
      ),
  });
}

/**
 * Tells a server's client that the lists a reload may change did change: the tools, the
 * resources (each tool's help is one), and the prompts where the server offers them; then that
 * each subscribed resource a reload may change was updated.
 */
export function sendListsChanged(server: Server): void {
  server.sendToolListChanged().catch(() => {});
  server.sendResourceListChanged().catch(() => {});
  if (server.getCapabilities().prompts) server.sendPromptListChanged().catch(() => {});
  sendResourcesUpdated(server);
}

/** The signal of a request: the SDK's, joined with its HTTP request's ({@linkcode requestSignalNow}). */
function signalOf(ctx: ServerContext): AbortSignal {
  const outer = requestSignalNow();
  return outer ? AbortSignal.any([ctx.mcpReq.signal, outer]) : ctx.mcpReq.signal;
}

/** Builds one MCP server instance serving the runner's tools, and its prompts when it has some. */
export function createMcpServer(options: McpServerOptions): Server {
  const { version } = options;
  const offersPrompts = options.shell.promptCommands.length > 0;
  const server = new Server(
    { name: "svc", version },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { listChanged: true, subscribe: true },
        logging: {},
        completions: {},
        ...(offersPrompts ? { prompts: { listChanged: true } } : {}),
      },
      instructions: SERVER_INSTRUCTIONS,
      ...(options.toolsListCache ? { cacheHints: { "tools/list": options.toolsListCache } } : {}),
    },
  );
  const sessionLevel = sessionLogLevel(server);

  if (offersPrompts) {
    server.setRequestHandler("prompts/list", async (_request, ctx) => {
      const prompts = await promptsFor(options, principalOf(ctx.http?.authInfo));
      return { prompts: prompts.map(toMcpPrompt) };
    });
    // A prompt's command asks its user as a tool call's does, in either era.
    server.setRequestHandler("prompts/get", (request, ctx) => {
      const principal = principalOf(ctx.http?.authInfo);
      if (options.heldCalls && mayHold(ctx)) {
        return holdablePrompt(options, options.heldCalls, request.params, ctx, principal);
      }
      const asked = pushedPrompts(server, ctx, options.requestsDuringCall ?? true);
      const pushed = asked && options.heldCalls ? options.heldCalls.bounded(asked) : asked;
      return getPrompt(options, request.params.name, request.params.arguments, {
        signal: signalOf(ctx),
        principal,
        ...(pushed ? { onPrompt: pushed } : {}),
      });
    });
  }
  // Prompts' arguments and resource templates' variables (the help template's at least).
  server.setRequestHandler(
    "completion/complete",
    (request, ctx) =>
      complete(options, request.params, {
        signal: signalOf(ctx),
        principal: principalOf(ctx.http?.authInfo),
      }),
  );

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
        ...callContextOf(options, principalOf(ctx.http?.authInfo), ctx.mcpReq.signal),
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
        if (options.heldCalls && mayHold(ctx)) {
          return await holdableCall(options, options.heldCalls, request, ctx, context);
        }
        return resultOf(
          await callTool(options, request.params.name, request.params.arguments, context),
        );
      } finally {
        await callLog?.finish();
      }
    },
  );

  registerResources(server, options, (ctx) => principalOf(ctx.http?.authInfo));
  return server;
}
