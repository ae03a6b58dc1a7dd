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

/** Builds one MCP server instance serving the runner's tools. */
export function createMcpServer(options: McpServerOptions): Server {
  const { runner, shell, version } = options;
  const server = new Server(
    { name: "svc", version },
    { capabilities: { tools: { listChanged: true } } },
  );

  server.setRequestHandler("tools/list", async () => {
    const tools = await runner.tools();
    return { tools: tools.map(toMcpTool) };
  });

  server.setRequestHandler("tools/call", async (request, ctx): Promise<CallToolResult> => {
    const name = request.params.name;
    const tool = (await runner.tools()).find((t) => t.name === name);
    if (!tool) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: '${name}'`);
    const bound = bindArguments(tool, request.params.arguments);
    if (!bound.ok) return failureResult(tool, bound.message);
    const timeoutMs = overrideFor(shell, tool.command)?.toolCallTimeoutMs ??
      shell.toolCallTimeoutMs;
    const started = performance.now();
    try {
      const outcome = await runner.run(tool, bound.value, {
        signal: ctx.mcpReq.signal,
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
        ElapsedMs: Math.round(performance.now() - started),
      });
      return result;
    } catch (error) {
      const message = workerFailureMessage(tool, error);
      log.warning("Tool call {Tool} ({Command}) failed: {Message}", {
        Tool: tool.name,
        Command: tool.command,
        Message: message,
      });
      return failureResult(tool, message);
    }
  });

  return server;
}
