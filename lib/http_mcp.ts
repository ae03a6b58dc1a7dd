/**
 * The MCP endpoint(s) (`/` and `/mcp`, or `--mcp-path`): one POST, GET or DELETE dispatched by
 * protocol era and session mode. A POST's body is read once (JSON only) and handed to the SDK
 * parsed. A 2026-07-28 request (its `_meta` claims the era, or the SDK classifies it so) goes to
 * the SDK's stateless handler for the response mode `Accept` allows; an older one (2025-11-25,
 * 2024-11-05) is served by a fresh transport per request in Stateless mode, which answers in JSON
 * unless the request wants progress (only SSE carries it), or by its session in Stateful mode
 * (`http_sessions.ts`). GET and DELETE exist only for sessions.
 *
 * A plain 2025-era `tools/call` in Stateless mode answered in JSON (`plainToolCall`: no progress,
 * no log level, no batch; the most common request by far) is answered here without the SDK: the
 * SDK would build a transport, a server and two copies of the request for it, check it and the
 * result with its schemas, and answer exactly what this answers (the result, or the JSON-RPC error
 * of an unknown tool). A Stateless 2025-era request cannot prompt (no session: no capability was
 * declared), so nothing else of the SDK's could take part in such a call.
 *
 * @module
 */
import {
  createMcpHandler,
  isLegacyRequest,
  type McpHttpHandler,
  ProtocolErrorCode,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { Principal } from "./auth.ts";
import type { HttpTransportMode } from "./config_http.ts";
import { type BodyBounds, onBodyEnd } from "./http_body.ts";
import { HttpError } from "./http_errors.ts";
import { readJsonBody, requireJsonContent } from "./http_json_body.ts";
import {
  asksForProgress,
  claimsModernEra,
  type PlainToolCall,
  plainToolCall,
  type ResponseMode,
  responseModeOf,
  withBothAccepts,
  withoutBody,
} from "./http_message.ts";
import { isEventStream } from "./http_responses.ts";
import { callTool } from "./call.ts";
import type { StatefulSessions } from "./http_sessions.ts";
import { logger } from "./log.ts";
import { authInfoOf, callContextOf, createMcpServer, type McpServerOptions } from "./mcp.ts";
import { ListenedUris } from "./resource_subscriptions.ts";

const log = logger("http");

/** Options of {@linkcode McpEndpoint}. */
export interface McpEndpointOptions {
  /** Builds the MCP server of each request or session. */
  mcp: McpServerOptions;
  /** `McpServer:HttpTransportMode`. */
  mode: HttpTransportMode;
  /** The sessions of Stateful mode; used only in that mode. */
  sessions: StatefulSessions;
  /** Limits of a request body. */
  bodyBounds: BodyBounds;
}

/** The MCP endpoint of one HTTP front (see the module documentation). */
export class McpEndpoint {
  readonly #options: McpEndpointOptions;
  readonly #modern: Record<ResponseMode, McpHttpHandler>;
  /** The resource URIs open 2026-07-28 listens name, for the updates of a reload. */
  readonly #listened: ListenedUris;

  /** Builds the 2026-07-28 handlers, one per response mode. */
  constructor(options: McpEndpointOptions) {
    this.#options = options;
    this.#listened = new ListenedUris(options.mcp.shell.resources ?? []);
    const factory = () => createMcpServer(options.mcp);
    const onerror = (error: Error) => log.debug("MCP handler: {Error}", { Error: error.message });
    this.#modern = {
      auto: createMcpHandler(factory, { legacy: "reject", responseMode: "auto", onerror }),
      json: createMcpHandler(factory, { legacy: "reject", responseMode: "json", onerror }),
      sse: createMcpHandler(factory, { legacy: "reject", responseMode: "sse", onerror }),
    };
  }

  /**
   * Handles one request of `principal` at the endpoint.
   *
   * @throws {HttpError} 415, 413/408/503 or 400 (-32700) for a POST's body; 400 for an
   * `Mcp-Session-Id` in Stateless mode or a missing one in Stateful mode; 405 for GET or DELETE in
   * Stateless mode (`Allow: POST`) and for any other method (`Allow: GET, POST, DELETE`); and what
   * the sessions refuse.
   */
  async handle(req: Request, principal: Principal): Promise<Response> {
    const mode = responseModeOf(req.headers.get("accept") ?? "");
    const sessionId = req.headers.get("mcp-session-id");
    const stateful = this.#options.mode === "Stateful";
    if (req.method === "POST") {
      requireJsonContent(req);
      const body = await readJsonBody(
        req,
        this.#options.bodyBounds,
        "Parse error: the request body is not JSON",
      );
      if (!stateful && mode !== "sse" && sessionId === null) {
        const call = plainToolCall(body, req.headers.get("mcp-protocol-version"));
        if (call) return await this.#plainCall(call, principal, req.signal);
      }
      // 2026-07-28 requests carry their protocol claim in `_meta`; only the rest needs the SDK's
      // full classification (which validates the whole body, and the modern handler would again).
      // The SDK's "legacy" (`isLegacyRequest`, `legacy: "reject"`) is what svc calls the 2025 era.
      const bodiless = claimsModernEra(body) ? null : withoutBody(req);
      if (bodiless && (await isLegacyRequest(bodiless, body))) {
        const caller = { sessionId, principal };
        if (stateful) return await this.#options.sessions.handle(bodiless, body, mode, caller);
        return await this.#stateless(bodiless, body, mode, caller);
      }
      // Given the parsed body, the modern handler never reads the (consumed) body of `req`: no copy
      // of the request is made (its headers cost more to copy than the rest of the routing).
      const endListen = this.#listened.admit(body);
      try {
        const response = await this.#modern[mode].fetch(req, {
          parsedBody: body,
          authInfo: authInfoOf(principal),
        });
        // A listen's stream is open until the client or svc ends it.
        return endListen ? onBodyEnd(response, endListen) : response;
      } catch (error) {
        endListen?.();
        throw error;
      }
    }
    if (req.method === "GET" || req.method === "DELETE") {
      if (sessionId && stateful) {
        return await this.#options.sessions.handle(req, undefined, mode, { sessionId, principal });
      }
      if (sessionId) {
        throw new HttpError(400, "Bad Request: Mcp-Session-Id is not used in Stateless mode");
      }
      if (stateful) throw new HttpError(400, "Bad Request: Mcp-Session-Id header required");
      throw new HttpError(
        405,
        `${req.method} needs a session (McpServer:HttpTransportMode=Stateful)`,
        { headers: { allow: "POST" } },
      );
    }
    throw new HttpError(405, `Method ${req.method} is not allowed`, {
      headers: { allow: "GET, POST, DELETE" },
    });
  }

  /**
   * Tells clients of the 2026-07-28 handlers that the tool list, and with it the resource list,
   * changed, and that each resource their listens name that a reload may change was updated.
   */
  toolsChanged(): void {
    const updated = this.#listened.updatable();
    for (const handler of Object.values(this.#modern)) {
      handler.notify.toolsChanged?.();
      if (this.#options.mcp.shell.promptCommands.length > 0) handler.notify.promptsChanged?.();
      handler.notify.resourcesChanged?.();
      for (const uri of updated) handler.notify.resourceUpdated?.(uri);
    }
  }

  /** Closes the 2026-07-28 handlers. */
  async close(): Promise<void> {
    for (const handler of Object.values(this.#modern)) await handler.close().catch(() => {});
  }

  /**
   * A plain 2025-era call (see the module documentation): its result, or the JSON-RPC error the
   * SDK gives a handler's error (an unknown tool's -32602 with its message; -32603 otherwise).
   */
  async #plainCall(
    call: PlainToolCall,
    principal: Principal,
    signal: AbortSignal,
  ): Promise<Response> {
    let message: unknown;
    try {
      const outcome = await callTool(
        this.#options.mcp,
        call.name,
        call.arguments,
        callContextOf(this.#options.mcp, principal, signal),
      );
      message = outcome.kind === "unknown-tool"
        ? {
          jsonrpc: "2.0",
          id: call.id,
          error: { code: ProtocolErrorCode.InvalidParams, message: outcome.message },
        }
        : { result: outcome.result, jsonrpc: "2.0", id: call.id };
    } catch (error) {
      const { code, data } = error as { code?: unknown; data?: unknown };
      message = {
        jsonrpc: "2.0",
        id: call.id,
        error: {
          code: Number.isSafeInteger(code) ? code : ProtocolErrorCode.InternalError,
          message: (error as Error)?.message ?? "Internal error",
          ...(data === undefined ? {} : { data }),
        },
      };
    }
    return new Response(JSON.stringify(message), {
      status: 200,
      headers: { "content-type": "application/json" },
    });
  }

  /** An older-era request in Stateless mode: a transport and server of its own. */
  async #stateless(
    req: Request,
    body: unknown,
    mode: ResponseMode,
    caller: { sessionId: string | null; principal: Principal },
  ): Promise<Response> {
    if (caller.sessionId) {
      throw new HttpError(400, "Bad Request: Mcp-Session-Id is not used in Stateless mode");
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      // Auto answers in JSON (cheaper) unless the request wants progress, which only SSE can carry.
      enableJsonResponse: mode === "json" || (mode === "auto" && !asksForProgress(body)),
    });
    const server = createMcpServer(this.#options.mcp);
    await server.connect(transport);
    const response = await transport.handleRequest(withBothAccepts(req), {
      parsedBody: body,
      authInfo: authInfoOf(caller.principal),
    });
    if (!isEventStream(response)) {
      void server.close().catch(() => {});
    }
    return response;
  }
}
