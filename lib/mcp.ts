/**
 * The MCP server object shared by both transports: `tools/list` from the catalog and `tools/call`
 * through argument binding, a worker run and result shaping. Where the worker comes from (the stdio
 * session's one worker, or a pool lease) is the transport's business, given as a {@linkcode ToolRunner}.
 *
 * @module
 */
import { ProtocolError, ProtocolErrorCode, Server } from "@modelcontextprotocol/server";
import type { CallToolResult, Tool } from "@modelcontextprotocol/server";
import { bindArguments, type BoundArguments } from "./arguments.ts";
import type { ToolDescriptor } from "./catalog.ts";
import { overrideFor, type ShellSettings } from "./config.ts";
import { logger } from "./log.ts";
import { failureResult, toCallToolResult, workerFailureMessage } from "./result.ts";
import { PoolError } from "./pool.ts";
import type { InvokeOutcome } from "./shell.ts";

const log = logger("mcp");

/** Runs tool calls for the MCP server; implemented by each transport. */
export interface ToolRunner {
  /** The tools on offer; may wait for discovery on a cold start. */
  tools(): Promise<ToolDescriptor[]>;
  /** Runs one bound call on a worker. */
  run(tool: ToolDescriptor, args: BoundArguments, options: RunOptions): Promise<InvokeOutcome>;
}

/** Options of {@linkcode ToolRunner.run}. */
export interface RunOptions {
  /** Aborted when the client cancels the request. */
  signal: AbortSignal;
  /** Time limit of the call in ms (`ToolCallTimeout`, or the command's override). */
  timeoutMs: number;
  /** `ConvertTo-Json -Depth` for output objects. */
  depth: number;
}

/** Options of {@linkcode createMcpServer}. */
export interface McpServerOptions {
  /** Where tools come from and calls run. */
  runner: ToolRunner;
  /** Shell settings (time limits, result cap, overrides). */
  shell: ShellSettings;
  /** svc's version, reported as serverInfo. */
  version: string;
}

/** Converts a descriptor to the MCP `Tool` shape of `tools/list`. */
export function toMcpTool(tool: ToolDescriptor): Tool {
  return {
    name: tool.name,
    title: tool.command,
    description: tool.description,
    inputSchema: tool.inputSchema as Tool["inputSchema"],
    annotations: { ...tool.annotations },
  };
}

/** How a tool call ended, for transports that map outcomes to their own status codes. */
export type CallOutcome =
  | { kind: "result"; result: CallToolResult }
  | { kind: "unknown-tool"; message: string }
  | { kind: "invalid-arguments"; result: CallToolResult; message: string }
  | { kind: "unavailable"; result: CallToolResult; message: string; retryAfterSeconds: number };

/**
 * Runs one tool call end to end: lookup, argument check, the runner, result shaping and the audit
 * log line. Never throws for a call-level failure; the outcome says what happened.
 */
export async function callTool(
  options: McpServerOptions,
  name: string,
  args: unknown,
  signal: AbortSignal,
): Promise<CallOutcome> {
  const { runner, shell } = options;
  const tool = (await runner.tools()).find((t) => t.name === name);
  if (!tool) return { kind: "unknown-tool", message: `Unknown tool: '${name}'` };
  const bound = bindArguments(tool, args);
  if (!bound.ok) {
    return {
      kind: "invalid-arguments",
      result: failureResult(tool, bound.message),
      message: bound.message,
    };
  }
  const timeoutMs = overrideFor(shell, tool.command)?.toolCallTimeoutMs ?? shell.toolCallTimeoutMs;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const outcome = await runner.run(tool, bound.value, {
      signal,
      timeoutMs,
      depth: shell.serializationDepth,
    });
    const result = toCallToolResult(tool, outcome, {
      maxResultBytes: shell.maxResultBytes,
      timeoutMs,
    });
    log.info("Tool call {Tool} ({Command}) finished: {Outcome} in {ElapsedMs} ms.", {
      Tool: tool.name,
      Command: tool.command,
      Outcome: outcome.interrupted ?? (result.isError ? "error" : "ok"),
      ElapsedMs: elapsed(),
    });
    return { kind: "result", result };
  } catch (error) {
    if (error instanceof PoolError) {
      log.warning("Tool call {Tool} ({Command}) refused: {Message}", {
        Tool: tool.name,
        Command: tool.command,
        Message: error.message,
      });
      return {
        kind: "unavailable",
        result: failureResult(tool, error.message),
        message: error.message,
        retryAfterSeconds: error.retryAfterSeconds,
      };
    }
    const message = workerFailureMessage(tool, error);
    log.warning("Tool call {Tool} ({Command}) failed after {ElapsedMs} ms: {Message}", {
      Tool: tool.name,
      Command: tool.command,
      ElapsedMs: elapsed(),
      Message: message,
    });
    return { kind: "result", result: failureResult(tool, message) };
  }
}

/** Builds one MCP server instance serving the runner's tools. */
export function createMcpServer(options: McpServerOptions): Server {
  const { runner, version } = options;
  const server = new Server(
    { name: "svc", version },
    { capabilities: { tools: { listChanged: true } } },
  );

  server.setRequestHandler("tools/list", async () => {
    const tools = await runner.tools();
    return { tools: tools.map(toMcpTool) };
  });

  server.setRequestHandler("tools/call", async (request, ctx): Promise<CallToolResult> => {
    const outcome = await callTool(
      options,
      request.params.name,
      request.params.arguments,
      ctx.mcpReq.signal,
    );
    if (outcome.kind === "unknown-tool") {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, outcome.message);
    }
    return outcome.result;
  });

  return server;
}
