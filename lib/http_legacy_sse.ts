/**
 * The routes of the deprecated HTTP+SSE transport (`McpServer:EnableLegacySse`): `GET /sse` opens a
 * session's event stream (one of the caller's stream slots), `POST /messages?sessionId=…` delivers
 * a message to it and is answered 202 at once; the answer travels on the stream. A session belongs
 * to the caller that opened it. The transport itself is `legacy_sse.ts`.
 *
 * @module
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/server";
import { ownerOf, type Principal } from "./auth.ts";
import { sessionOwnerOf } from "./http_authenticate.ts";
import type { BodyBounds } from "./http_body.ts";
import { HttpError } from "./http_errors.ts";
import { readJsonBody, requireJsonContent } from "./http_json_body.ts";
import { type StreamLimiter, streamRefusal } from "./http_streams.ts";
import { SseTransport } from "./legacy_sse.ts";
import { authInfoOf, createMcpServer, type McpServerOptions } from "./mcp.ts";

/** Where a legacy client posts its messages, as the endpoint event names it. */
export const MESSAGES_PATH = "/messages";

/** Options of {@linkcode LegacySse}. */
export interface LegacySseOptions {
  /** Builds each session's MCP server. */
  mcp: McpServerOptions;
  /** The event-stream slots, shared with the Stateful sessions' GET streams. */
  streams: StreamLimiter;
  /** Limits of a request body. */
  bodyBounds: BodyBounds;
}

/** The legacy SSE sessions of one HTTP front (see the module documentation). */
export class LegacySse {
  readonly #options: LegacySseOptions;
  readonly #sessions = new Map<string, SseTransport>();

  /** Serves no session until one is opened. */
  constructor(options: LegacySseOptions) {
    this.#options = options;
  }

  /** Sessions open now. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * `GET /sse`: opens a session for `principal` and answers its event stream, whose first event
   * names where to post.
   *
   * @throws {HttpError} 403 for a caller without an identity; 429 past the stream limits.
   */
  open(principal: Principal): Response {
    const owner = sessionOwnerOf(principal);
    const streams = this.#options.streams;
    const refused = streams.admit(owner);
    if (refused) throw streamRefusal(refused);
    const transport = new SseTransport(MESSAGES_PATH, owner);
    this.#sessions.set(transport.sessionId, transport);
    transport.onclose = () => this.#sessions.delete(transport.sessionId);
    const server = createMcpServer(this.#options.mcp);
    void server.connect(transport);
    return streams.bound(owner, transport.response());
  }

  /**
   * `POST /messages?sessionId=…`: hands the posted message to its session, as `principal`, and
   * answers 202.
   *
   * @throws {HttpError} 404 for an unknown or closed session; 403 for another caller's; 415; 429
   * when the session has `MAX_PENDING_REQUESTS` waiting (before the body is read); 413/408/503 or
   * 400 (-32700) for the body.
   */
  async post(req: Request, principal: Principal): Promise<Response> {
    const sessionId = new URL(req.url).searchParams.get("sessionId") ?? "";
    const transport = this.#sessions.get(sessionId);
    if (!transport) throw new HttpError(404, "Unknown or closed SSE session");
    if (transport.owner !== ownerOf(principal)) {
      throw new HttpError(403, "The SSE session belongs to another caller");
    }
    requireJsonContent(req);
    const busy = transport.busy;
    if (busy) throw new HttpError(429, busy);
    const message = await readJsonBody(
      req,
      this.#options.bodyBounds,
      "Parse error: the body is not JSON",
    ) as JSONRPCMessage;
    transport.receive(message, authInfoOf(principal));
    return new Response("Accepted", { status: 202 });
  }

  /** Ends every session's stream. */
  async close(): Promise<void> {
    for (const transport of this.#sessions.values()) await transport.close();
  }
}
