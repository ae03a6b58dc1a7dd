/**
 * The REST routes beside MCP, for callers that are not MCP clients: `GET /tools` lists the tools the
 * caller may call (the descriptors of `tools/list`), `POST /call` runs one with
 * `{"tool": string, "arguments": object}` and answers its `CallToolResult`. A call's outcome maps to
 * a status: 404 for an unknown (or hidden) tool, 400 for arguments that do not fit it, 503 with
 * `Retry-After` when no worker frees up in time; the 400 and 503 carry the tool's failure result as
 * `error.data`.
 *
 * @module
 */
import type { Principal } from "./auth.ts";
import type { BodyBounds } from "./http_body.ts";
import { HttpError, RpcCode } from "./http_errors.ts";
import { readJsonBody, requireJsonContent } from "./http_json_body.ts";
import { jsonResponse } from "./http_responses.ts";
import { callTool, toolsFor } from "./call.ts";
import { type McpServerOptions, toMcpTool } from "./mcp.ts";

/** What the REST routes need: the MCP options (tools, runner, authorization) and body limits. */
export interface RestOptions {
  /** Where tools come from and calls run, as for MCP. */
  mcp: McpServerOptions;
  /** Limits of a request body. */
  bodyBounds: BodyBounds;
}

/**
 * `GET /tools`: `{"tools": [...]}`, the tools `principal` may call.
 *
 * @throws {HttpError} 405 with `Allow: GET` for any other method.
 */
export async function listTools(
  req: Request,
  principal: Principal,
  options: RestOptions,
): Promise<Response> {
  if (req.method !== "GET") {
    throw new HttpError(405, "Use GET /tools", { headers: { allow: "GET" } });
  }
  return jsonResponse(200, {
    tools: (await toolsFor(options.mcp, principal)).map((tool) =>
      toMcpTool(tool, options.mcp.shell)
    ),
  });
}

/**
 * `POST /call`: runs the tool the body names as `principal`, stopping when the request is aborted,
 * and answers its `CallToolResult` (a failed command is a 200 with `isError`, as over MCP).
 *
 * @throws {HttpError} 405 (`Allow: POST`), 415, 413/408/503 for the body, 400 for a body that is not
 * JSON or not `{"tool", "arguments"}`, and the call outcomes of the module documentation.
 */
export async function postCall(
  req: Request,
  principal: Principal,
  options: RestOptions,
): Promise<Response> {
  if (req.method !== "POST") {
    throw new HttpError(405, "Use POST /call", { headers: { allow: "POST" } });
  }
  requireJsonContent(req);
  const body = await readJsonBody(
    req,
    options.bodyBounds,
    'The body of POST /call must be JSON: {"tool": string, "arguments": object}',
  );
  const { tool, arguments: args } = (body ?? {}) as { tool?: unknown; arguments?: unknown };
  if (
    typeof tool !== "string" ||
    (args !== undefined && (args === null || typeof args !== "object" || Array.isArray(args)))
  ) {
    throw new HttpError(
      400,
      "The body of POST /call must be {\"tool\": string, \"arguments\": object}; 'tool' is missing or 'arguments' is not an object",
    );
  }
  const outcome = await callTool(options.mcp, tool, args ?? {}, {
    signal: req.signal,
    principal,
  });
  switch (outcome.kind) {
    case "unknown-tool":
      throw new HttpError(404, outcome.message, { code: RpcCode.invalidParams });
    case "invalid-arguments":
      throw new HttpError(400, outcome.message, {
        code: RpcCode.invalidParams,
        data: outcome.result,
      });
    case "unavailable":
      throw new HttpError(503, outcome.message, {
        headers: { "retry-after": String(outcome.retryAfterSeconds) },
        data: outcome.result,
      });
    case "result":
      return jsonResponse(200, outcome.result);
  }
}
