/**
 * The HTTP transport: MCP Streamable HTTP for many users, backed by the worker pool.
 * Routes the MCP endpoint(s) by protocol era and session mode, `/tools` and `/call`, `/health` and
 * `/health/ready`, and (opt-in) the deprecated HTTP+SSE transport. Validates `Host` before `Origin`
 * (DNS rebinding), picks JSON or SSE from `Accept`, tags every request with a correlation id, and
 * drains on shutdown. Every refusal is thrown as an `HttpError` and answered by the one funnel of
 * `http_errors.ts`.
 *
 * @module
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/server";
import { withContext } from "@logtape/logtape";
import { Authenticator, ownerOf, type Principal } from "./auth.ts";
import { asCaller, authenticateRequest, sessionOwnerOf } from "./http_authenticate.ts";
import { isResourceMetadataPath, metadataUrl, resourceMetadata } from "./http_resource_metadata.ts";
import type { HttpSettings, Settings } from "./config.ts";
import { CatalogStore } from "./discovery.ts";
import { SseTransport } from "./legacy_sse.ts";
import { correlationIdFor } from "./correlation.ts";
import { logger } from "./log.ts";
import { type BodyBounds, BodyBudget } from "./http_body.ts";
import { readJsonBody, requireJsonContent } from "./http_json_body.ts";
import { routePath } from "./http_message.ts";
import { McpEndpoint } from "./http_mcp.ts";
import { StatefulSessions } from "./http_sessions.ts";
import { RequestLimiter } from "./http_admission.ts";
import { checkCanListen, listen, type Listener } from "./http_listen.ts";
import { listTools, postCall } from "./http_rest.ts";
import { answerErrors, HttpError } from "./http_errors.ts";
import { checkAnonymousExposure, RequestGuard, requestUrl } from "./http_guard.ts";
import { health, isHealthCheck } from "./http_health.ts";
import { StreamLimiter, streamRefusal } from "./http_streams.ts";
import {
  authInfoOf,
  createMcpServer,
  type McpServerOptions,
  type ToolRunner,
  withRequestSignal,
} from "./mcp.ts";
import { WorkerPool } from "./pool.ts";
import { tenantOf } from "./pool_tenancy.ts";

const log = logger("http");

/** Options of {@linkcode serveHttp}. */
export interface HttpOptions {
  /** Resolved settings. */
  settings: Settings;
  /** Absolute path of pwsh. */
  pwsh: string;
  /** svc's version for serverInfo. */
  version: string;
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM). */
  shutdown: Promise<void>;
}

/** The HTTP front of svc; one per process. */
class HttpFront {
  readonly #http: HttpSettings;
  readonly #pool: WorkerPool;
  readonly #mcp: McpServerOptions;
  readonly #sessions: StatefulSessions;
  readonly #endpoint: McpEndpoint;
  readonly #sse = new Map<string, SseTransport>();
  readonly #mcpPaths: Set<string>;
  readonly #guard: RequestGuard;
  readonly #auth: Authenticator;
  readonly #streams: StreamLimiter;
  readonly #bodyBounds: BodyBounds;

  constructor(settings: Settings, pool: WorkerPool, mcp: McpServerOptions, auth: Authenticator) {
    this.#auth = auth;
    this.#http = settings.http;
    this.#pool = pool;
    this.#mcp = mcp;
    this.#mcpPaths = new Set(this.#http.mcpPath ? [this.#http.mcpPath] : ["/", "/mcp"]);
    this.#guard = new RequestGuard(this.#http);
    this.#streams = new StreamLimiter(this.#http.limits);
    this.#bodyBounds = {
      limit: this.#http.maxRequestBodyBytes,
      timeoutMs: this.#http.limits.bodyReadTimeoutMs,
      budget: new BodyBudget(this.#http.limits.maxBufferedBodyBytes),
    };
    this.#sessions = new StatefulSessions({
      mcp,
      idleSessionTimeoutMs: this.#http.idleSessionTimeoutMs,
      sessionIdPrefix: this.#http.sessionIdPrefix,
      streams: this.#streams,
    });
    this.#endpoint = new McpEndpoint({
      mcp,
      mode: this.#http.mode,
      sessions: this.#sessions,
      bodyBounds: this.#bodyBounds,
    });
  }

  /** Notifies connected sessions that the tool list changed. */
  toolsChanged(): void {
    this.#endpoint.toolsChanged();
    this.#sessions.toolsChanged();
  }

  /** Handles one request, tagging it (and its log lines) with a correlation id. */
  handle(req: Request): Promise<Response> {
    const given = req.headers.get("x-correlation-id");
    const correlationId = correlationIdFor(given);
    return withContext({ CorrelationId: correlationId }, async () => {
      const response = await answerErrors(
        req,
        correlationId,
        () => withRequestSignal(req.signal, () => this.#route(req)),
      );
      return this.#decorate(req, response, correlationId);
    });
  }

  /** Closes sessions and SSE streams so in-flight HTTP requests can finish. */
  async closeStreams(): Promise<void> {
    await this.#sessions.close();
    for (const transport of this.#sse.values()) await transport.close();
    await this.#endpoint.close();
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
    const isMcp = this.#mcpPaths.has(path);
    const isSse = this.#http.enableLegacySse && (path === "/sse" || path === "/messages");
    if (!isMcp && !isSse && path !== "/tools" && path !== "/call") {
      throw new HttpError(404, `Not found: ${req.method} ${path}`);
    }
    const principal = await authenticateRequest(this.#auth, req, {
      path,
      metadataUrl: metadataUrl(base, isMcp ? path : null),
    });
    return await asCaller(principal, async () => {
      if (isMcp) return await this.#endpoint.handle(req, principal);
      const rest = { mcp: this.#mcp, bodyBounds: this.#bodyBounds };
      if (path === "/tools") return await listTools(req, principal, rest);
      if (path === "/call") return await postCall(req, principal, rest);
      if (path === "/sse" && req.method === "GET") return this.#openSse(principal);
      if (path === "/messages" && req.method === "POST") {
        return await this.#sseMessage(req, url, principal);
      }
      throw new HttpError(405, `Method ${req.method} is not allowed on ${path}`);
    });
  }

  #decorate(req: Request, response: Response, correlationId: string): Response {
    // Responses built with `new Response` have mutable headers; only immutable ones are re-wrapped.
    let out = response;
    try {
      out.headers.set("x-correlation-id", correlationId);
    } catch {
      out = new Response(response.body, {
        status: response.status,
        statusText: response.statusText,
        headers: new Headers(response.headers),
      });
      out.headers.set("x-correlation-id", correlationId);
    }
    // A request whose Host makes no URL was answered without CORS: there is no origin to compare.
    if (URL.canParse(req.url)) this.#guard.addCors(req, out.headers);
    return out;
  }

  #openSse(principal: Principal): Response {
    const owner = sessionOwnerOf(principal);
    const refused = this.#streams.admit(owner);
    if (refused) throw streamRefusal(refused);
    const transport = new SseTransport("/messages", owner);
    this.#sse.set(transport.sessionId, transport);
    transport.onclose = () => this.#sse.delete(transport.sessionId);
    const server = createMcpServer(this.#mcp);
    void server.connect(transport);
    return this.#streams.bound(owner, transport.response());
  }

  async #sseMessage(req: Request, url: URL, principal: Principal): Promise<Response> {
    const transport = this.#sse.get(url.searchParams.get("sessionId") ?? "");
    if (!transport) throw new HttpError(404, "Unknown or closed SSE session");
    if (transport.owner !== ownerOf(principal)) {
      throw new HttpError(403, "The SSE session belongs to another caller");
    }
    requireJsonContent(req);
    const busy = transport.busy;
    if (busy) throw new HttpError(429, busy);
    const message = await readJsonBody(
      req,
      this.#bodyBounds,
      "Parse error: the body is not JSON",
    ) as JSONRPCMessage;
    transport.receive(message, authInfoOf(principal));
    return new Response("Accepted", { status: 202 });
  }
}

/** Serves MCP over HTTP until shutdown, then drains in-flight calls and closes every worker. */
export async function serveHttp(options: HttpOptions): Promise<void> {
  const { settings, pwsh, version, shutdown } = options;
  checkAnonymousExposure(settings.http, settings.auth);
  // Fail on a taken port before starting workers, which would take seconds and then be wasted.
  if (settings.http.port !== 0) checkCanListen(settings.http.host, settings.http.port);
  const pool = await WorkerPool.start({ pwsh, pool: settings.pool, shell: settings.shell });
  let front: HttpFront | null = null;
  const catalog = new CatalogStore({
    shell: settings.shell,
    pwsh,
    source: async () => {
      const lease = await pool.lease();
      return {
        worker: lease.worker,
        modules: lease.startup.modules,
        release: lease.release,
      };
    },
    onChange: () => front?.toolsChanged(),
    auth: settings.auth,
  });
  const runner: ToolRunner = {
    tools: () => catalog.tools(),
    withWorker: async ({ signal, principal }, use) => {
      // Callers told apart by authentication never share a process (lib/pool_tenancy.ts).
      const lease = await pool.lease({ signal, tenant: tenantOf(principal) });
      try {
        return await use(lease.worker);
      } finally {
        // The reset runs in the background: the response does not wait for it.
        lease.release();
      }
    },
  };
  const auth = new Authenticator({ auth: settings.auth, shell: settings.shell });
  const mcp: McpServerOptions = {
    runner,
    shell: settings.shell,
    version,
    authorize: (principal, tool) => auth.mayCall(principal, tool),
    logArguments: settings.auth.logArguments,
  };
  front = new HttpFront(settings, pool, mcp, auth);
  const http = settings.http;
  let server: Listener;
  try {
    const limiter = new RequestLimiter(http.limits.maxConcurrentRequests);
    server = listen(http, (req) => limiter.handle(req, (admitted) => front!.handle(admitted)));
  } catch (error) {
    await pool.drain();
    throw error;
  }
  await shutdown;
  log.info("Shutting down: no new requests; draining in-flight calls.");
  await front.closeStreams();
  const drained = server.shutdown();
  const deadline = new Promise((r) => setTimeout(r, settings.pool.shutdownDrainTimeoutMs));
  await Promise.race([drained, deadline]);
  await pool.drain();
}
