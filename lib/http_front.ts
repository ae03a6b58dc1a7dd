/**
 * The HTTP front of svc: composes its parts in the order a request meets them. Each part is a
 * module of its own with a unit test that needs no socket:
 *
 * 1. the correlation id, and the error funnel (`http_errors.ts`): every refusal is an `HttpError`
 *    answered in one JSON shape, anything else a 500 naming the correlation id;
 * 2. `/health` and `/health/ready` (`http_health.ts`), before the Host check and authentication;
 * 3. the request guard (`http_guard.ts`): Host, then Origin; CORS headers on every answer;
 * 4. RFC 9728 resource metadata (`http_resource_metadata.ts`), without authentication;
 * 5. authentication (`http_authenticate.ts`), then the caller's route: the MCP endpoint
 *    (`http_mcp.ts`, sessions in `http_sessions.ts`), `/tools` and `/call` (`http_rest.ts`), the
 *    legacy SSE routes (`http_legacy_sse.ts`).
 *
 * @module
 */
import { withContext } from "@logtape/logtape";
import type { Authenticator, Principal } from "./auth.ts";
import type { HttpSettings } from "./config_http.ts";
import { correlationIdFor } from "./correlation.ts";
import { asCaller, authenticateRequest } from "./http_authenticate.ts";
import { type BodyBounds, BodyBudget } from "./http_body.ts";
import { answerErrors, HttpError } from "./http_errors.ts";
import { RequestGuard, requestUrl } from "./http_guard.ts";
import { health, isHealthCheck, type PoolHealth } from "./http_health.ts";
import { LegacySse, MESSAGES_PATH } from "./http_legacy_sse.ts";
import { McpEndpoint } from "./http_mcp.ts";
import { routePath } from "./http_message.ts";
import { isResourceMetadataPath, metadataUrl, resourceMetadata } from "./http_resource_metadata.ts";
import { withHeader } from "./http_responses.ts";
import { listTools, postCall, type RestOptions } from "./http_rest.ts";
import { StatefulSessions } from "./http_sessions.ts";
import { StreamLimiter } from "./http_streams.ts";
import type { McpServerOptions } from "./mcp.ts";
import { withRequestSignal } from "./call.ts";

/** A route behind authentication: answers `req` for the authenticated `principal`. */
type Route = (req: Request, principal: Principal) => Promise<Response> | Response;

/** What {@linkcode HttpFront} serves with. */
export interface HttpFrontOptions {
  /** The HTTP settings (`McpServer`, `Authentication:Cors`). */
  http: HttpSettings;
  /** What `/health` reads; the pool in svc. */
  pool: PoolHealth;
  /** Tools, calls and authorization, shared by MCP and the REST routes. */
  mcp: McpServerOptions;
  /** Authenticates requests and serves resource metadata. */
  auth: Authenticator;
}

/**
 * The HTTP front of svc, one per process: composes its parts (see the module documentation).
 * {@linkcode HttpFront.handle} answers a `Request` without a socket, which is how it is tested.
 */
export class HttpFront {
  readonly #pool: PoolHealth;
  readonly #auth: Authenticator;
  readonly #guard: RequestGuard;
  readonly #mcpPaths: ReadonlySet<string>;
  readonly #sessions: StatefulSessions;
  readonly #mcp: McpEndpoint;
  readonly #sse: LegacySse;
  readonly #routes: ReadonlyMap<string, Route>;

  /** Builds every part once; requests share them. */
  constructor(options: HttpFrontOptions) {
    const { http, mcp } = options;
    this.#pool = options.pool;
    this.#auth = options.auth;
    this.#guard = new RequestGuard(http);
    this.#mcpPaths = new Set(http.mcpPath ? [http.mcpPath] : ["/", "/mcp"]);
    const streams = new StreamLimiter(http.limits);
    const bodyBounds: BodyBounds = {
      limit: http.maxRequestBodyBytes,
      timeoutMs: http.limits.bodyReadTimeoutMs,
      budget: new BodyBudget(http.limits.maxBufferedBodyBytes),
    };
    this.#sessions = new StatefulSessions({
      mcp,
      idleSessionTimeoutMs: http.idleSessionTimeoutMs,
      sessionIdPrefix: http.sessionIdPrefix,
      streams,
    });
    this.#mcp = new McpEndpoint({ mcp, mode: http.mode, sessions: this.#sessions, bodyBounds });
    this.#sse = new LegacySse({ mcp, streams, bodyBounds });
    const rest: RestOptions = { mcp, bodyBounds };
    const routes = new Map<string, Route>([
      ["/tools", (req, principal) => listTools(req, principal, rest)],
      ["/call", (req, principal) => postCall(req, principal, rest)],
    ]);
    if (http.enableLegacySse) {
      routes.set("/sse", (req, principal) => {
        if (req.method === "GET") return this.#sse.open(principal);
        throw new HttpError(405, `Method ${req.method} is not allowed on /sse`);
      });
      routes.set(MESSAGES_PATH, (req, principal) => {
        if (req.method === "POST") return this.#sse.post(req, principal);
        throw new HttpError(405, `Method ${req.method} is not allowed on ${MESSAGES_PATH}`);
      });
    }
    // Set last: a dedicated MCP path wins over any other route it names.
    for (const path of this.#mcpPaths) {
      routes.set(path, (req, principal) => this.#mcp.handle(req, principal));
    }
    this.#routes = routes;
  }

  /** Notifies connected clients that the tool list, and with it the resource list, changed. */
  toolsChanged(): void {
    this.#mcp.toolsChanged();
    this.#sessions.toolsChanged();
  }

  /**
   * Answers one request, tagging it (and its log lines) with a correlation id: the caller's
   * `X-Correlation-ID` when usable, else a new one. Never throws: every error is answered.
   */
  handle(req: Request): Promise<Response> {
    const correlationId = correlationIdFor(req.headers.get("x-correlation-id"));
    return withContext({ CorrelationId: correlationId }, async () => {
      const answer = await answerErrors(
        req,
        correlationId,
        () => withRequestSignal(req.signal, () => this.#route(req)),
      );
      const response = withHeader(answer, "x-correlation-id", correlationId);
      // A request whose Host makes no URL gets no CORS headers: there is no origin to compare.
      if (URL.canParse(req.url)) this.#guard.addCors(req, response.headers);
      return response;
    });
  }

  /** Closes sessions and SSE streams so in-flight HTTP requests can finish. */
  async closeStreams(): Promise<void> {
    await this.#sessions.close();
    await this.#sse.close();
    await this.#mcp.close();
  }

  async #route(req: Request): Promise<Response> {
    const url = requestUrl(req);
    if (isHealthCheck(url)) return health(req, this.#pool);
    const host = this.#guard.admit(req);
    if (req.method === "OPTIONS") return new Response(null, { status: 204 });
    const path = routePath(url);
    // Only a Host that passed the guard (a bare name or address and port) goes into a URL.
    const base = `${url.protocol}//${host}`;
    if (isResourceMetadataPath(path)) {
      return resourceMetadata(this.#auth, this.#mcpPaths, base, path);
    }
    const route = this.#routes.get(path);
    if (!route) throw new HttpError(404, `Not found: ${req.method} ${path}`);
    const endpoint = this.#mcpPaths.has(path) ? path : null;
    const principal = await authenticateRequest(this.#auth, req, {
      path,
      metadataUrl: metadataUrl(base, endpoint),
    });
    return await asCaller(principal, async () => await route(req, principal));
  }
}
