/**
 * Stateful sessions of the MCP endpoint (`McpServer:HttpTransportMode=Stateful`): an initialize
 * request opens one (id `<SessionIdPrefix>.<uuid>`), every later request names it in
 * `Mcp-Session-Id`, and it ends on DELETE or after `IdleSessionTimeoutSeconds` without a request (a
 * session is never idle while one of its requests runs). A session belongs to the caller that
 * opened it (`ownerOf`): anyone else gets 403. Its GET event stream takes one of the caller's stream
 * slots (`MaxStreamsPerCaller`, `MaxStreams`). A session is a protocol connection, never a worker:
 * it keeps no shell state.
 *
 * @module
 */
import {
  isInitializeRequest,
  type Server,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { Principal } from "./auth.ts";
import { sessionOwnerOf } from "./http_authenticate.ts";
import { onBodyEnd } from "./http_body.ts";
import { HttpError, RpcCode } from "./http_errors.ts";
import { type ResponseMode, withBothAccepts } from "./http_message.ts";
import { isEventStream } from "./http_responses.ts";
import { type StreamLimiter, streamRefusal } from "./http_streams.ts";
import { logger } from "./log.ts";
import { authInfoOf, createMcpServer, type McpServerOptions, sendListsChanged } from "./mcp.ts";

const log = logger("http");

/** Options of {@linkcode StatefulSessions}. */
export interface StatefulSessionsOptions {
  /** Builds each session's MCP server. */
  mcp: McpServerOptions;
  /** Idle time after which a session expires, in ms (`McpServer:IdleSessionTimeoutSeconds`). */
  idleSessionTimeoutMs: number;
  /** Start of every session id, naming this replica. @default null (`McpServer:SessionIdPrefix`) */
  sessionIdPrefix: string | null;
  /** The event-stream slots, shared with the legacy SSE transport. */
  streams: StreamLimiter;
}

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  lastSeen: number;
  /** Requests of the session being handled; a session is never idle while one runs. */
  active: number;
  /** Who initialized the session ({@linkcode sessionOwnerOf}); nobody else may use it. */
  owner: string;
}

/** The Stateful sessions of one HTTP front (see the module documentation). */
export class StatefulSessions {
  readonly #options: StatefulSessionsOptions;
  readonly #sessions = new Map<string, Session>();
  readonly #sweep: ReturnType<typeof setInterval>;

  /** Starts the idle sweep: every quarter of the idle timeout, at least 250 ms and at most 30 s. */
  constructor(options: StatefulSessionsOptions) {
    this.#options = options;
    const every = Math.max(250, Math.min(30_000, Math.floor(options.idleSessionTimeoutMs / 4)));
    this.#sweep = setInterval(() => this.#expire(), every);
  }

  /** Sessions open now. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Handles a request of the session `sessionId` names, or, without one, an initialize request that
   * opens a session. `body` is the parsed body of a POST (undefined for GET and DELETE); `mode` is
   * the response format `Accept` allows.
   *
   * @throws {HttpError} 403 for a caller without an identity or another caller's session; 404
   * (-32001) for an unknown or expired session; 429 for a GET stream past the stream limits; 400
   * for a request without a session id that is not an initialize POST.
   */
  async handle(
    req: Request,
    body: unknown,
    mode: ResponseMode,
    caller: { sessionId: string | null; principal: Principal },
  ): Promise<Response> {
    const { sessionId, principal } = caller;
    const owner = sessionOwnerOf(principal);
    if (sessionId) return await this.#continue(req, body, sessionId, { owner, principal });
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      throw new HttpError(400, "Bad Request: Mcp-Session-Id header required");
    }
    // A session answering in JSON has no stream to send a prompt's elicitation/create on.
    const server = createMcpServer({ ...this.#options.mcp, requestsDuringCall: mode !== "json" });
    const prefix = this.#options.sessionIdPrefix ? `${this.#options.sessionIdPrefix}.` : "";
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => `${prefix}${crypto.randomUUID()}`,
      enableJsonResponse: mode === "json",
      onsessioninitialized: (id) => {
        this.#sessions.set(id, { transport, server, lastSeen: Date.now(), active: 0, owner });
        log.debug("Session {SessionId} started.", { SessionId: id });
      },
      onsessionclosed: (id) => {
        this.#sessions.delete(id);
        log.debug("Session {SessionId} closed by the client.", { SessionId: id });
      },
    });
    await server.connect(transport);
    return await transport.handleRequest(withBothAccepts(req), {
      parsedBody: body,
      authInfo: authInfoOf(principal),
    });
  }

  /** Notifies every session that the tool list, and with it the resource list, changed. */
  toolsChanged(): void {
    for (const session of this.#sessions.values()) {
      sendListsChanged(session.server);
    }
  }

  /** Stops the sweep and closes every session. */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    for (const [id, session] of this.#sessions) {
      this.#sessions.delete(id);
      await session.transport.close().catch(() => {});
    }
  }

  async #continue(
    req: Request,
    body: unknown,
    sessionId: string,
    caller: { owner: string; principal: Principal },
  ): Promise<Response> {
    const { owner, principal } = caller;
    const session = this.#sessions.get(sessionId);
    if (!session) throw new HttpError(404, "Session not found", { code: RpcCode.sessionNotFound });
    if (session.owner !== owner) {
      throw new HttpError(403, "Forbidden: the session belongs to another caller");
    }
    const streams = this.#options.streams;
    // The GET stream is held open by the client: it takes one of the caller's stream slots.
    const opensStream = req.method === "GET";
    if (opensStream) {
      const refused = streams.admit(owner);
      if (refused) throw streamRefusal(refused);
    }
    session.lastSeen = Date.now();
    session.active++;
    const done = () => {
      session.active--;
      session.lastSeen = Date.now();
    };
    const authInfo = authInfoOf(principal);
    let response: Response;
    try {
      response = await session.transport.handleRequest(
        withBothAccepts(req),
        body === undefined ? { authInfo } : { parsedBody: body, authInfo },
      );
    } catch (e) {
      done();
      if (opensStream) streams.release(owner);
      throw e;
    }
    if (opensStream) {
      if (response.ok && isEventStream(response)) {
        response = streams.bound(owner, response);
      } else {
        streams.release(owner);
      }
    }
    // A streamed answer (SSE) is still running when handleRequest returns.
    return onBodyEnd(response, done);
  }

  #expire(): void {
    const limit = Date.now() - this.#options.idleSessionTimeoutMs;
    for (const [id, session] of this.#sessions) {
      if (session.active > 0 || session.lastSeen >= limit) continue;
      this.#sessions.delete(id);
      log.debug("Session {SessionId} expired after {Seconds} s idle.", {
        SessionId: id,
        Seconds: this.#options.idleSessionTimeoutMs / 1000,
      });
      void session.transport.close().catch(() => {});
    }
  }
}
