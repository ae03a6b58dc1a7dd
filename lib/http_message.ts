/**
 * Reading what an HTTP request asks before it is answered: the path it is routed by, and of the MCP
 * endpoint before the SDK sees it, the response format `Accept` allows, whether a message wants
 * progress or claims the 2026-07-28 era, and the body-less request copies handed to the SDK's
 * transport.
 *
 * @module
 */

/** How an answer may be sent: JSON only, SSE only, or either. */
export type ResponseMode = "auto" | "json" | "sse";

/** True when a JSON-RPC request (or one in a batch) carries a `progressToken`. */
export function asksForProgress(body: unknown): boolean {
  const requests = Array.isArray(body) ? body : [body];
  return requests.some((request) => {
    const meta = (request as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params
      ?._meta;
    return meta?.progressToken !== undefined && meta.progressToken !== null;
  });
}

/** Picks the response format from `Accept`: JSON only, SSE only, or either (`auto`). */
export function responseModeOf(accept: string): ResponseMode {
  const json = /application\/json|\*\/\*/.test(accept);
  const sse = accept.includes("text/event-stream");
  if (json && !sse) return "json";
  if (sse && !json) return "sse";
  return "auto";
}

/** A 2025-era `tools/call` the MCP endpoint may answer without the SDK (see {@linkcode plainToolCall}). */
export interface PlainToolCall {
  /** The JSON-RPC request id. */
  id: string | number;
  /** The tool's name. */
  name: string;
  /** The arguments, as sent (undefined when none were). */
  arguments: Record<string, unknown> | undefined;
}

/** The protocol versions a 2025-era request may name, for which the SDK would serve it too. */
const PLAIN_VERSIONS: ReadonlySet<string> = new Set(["2025-11-25", "2025-06-18", "2025-03-26"]);

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The call of a 2025-era JSON-RPC request that nothing but a `tools/call` and its answer can come
 * of: one request (no batch), `jsonrpc` 2.0, a string or integer id, `params` holding only `name`
 * (text), `arguments` (an object) and a `_meta` without a progress token or any
 * `io.modelcontextprotocol/` key (no era claim, no log level), under an `MCP-Protocol-Version` that
 * is absent or a 2025-era version both svc and the SDK serve. Anything else is null and goes to the
 * SDK, which answers what is malformed with its own errors.
 */
export function plainToolCall(body: unknown, protocolVersion: string | null): PlainToolCall | null {
  if (protocolVersion !== null && !PLAIN_VERSIONS.has(protocolVersion)) return null;
  if (!isPlainObject(body) || body.jsonrpc !== "2.0" || body.method !== "tools/call") return null;
  for (const key in body) {
    if (key !== "jsonrpc" && key !== "id" && key !== "method" && key !== "params") return null;
  }
  const { id, params } = body;
  if (typeof id !== "string" && !Number.isSafeInteger(id)) return null;
  if (!isPlainObject(params) || typeof params.name !== "string") return null;
  for (const key in params) {
    if (key !== "name" && key !== "arguments" && key !== "_meta") return null;
  }
  const args = params.arguments;
  if (args !== undefined && !isPlainObject(args)) return null;
  const meta = params._meta;
  if (meta !== undefined) {
    if (!isPlainObject(meta)) return null;
    for (const key in meta) {
      if (key === "progressToken" || key.startsWith("io.modelcontextprotocol/")) return null;
    }
  }
  return { id: id as string | number, name: params.name, arguments: args };
}

/** True when a single JSON-RPC message claims the 2026-07-28 era through its `_meta` envelope. */
export function claimsModernEra(body: unknown): boolean {
  const meta = (body as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta;
  return typeof meta?.["io.modelcontextprotocol/protocolVersion"] === "string";
}

/**
 * A body-less copy of a request (svc reads each body once and gives the SDK the parsed body), with
 * other headers when given.
 */
export function withoutBody(req: Request, headers: HeadersInit = req.headers): Request {
  return new Request(req.url, { method: req.method, headers, signal: req.signal });
}

/** The SDK's transport insists on both types in Accept; svc has already honoured the client's. */
export function withBothAccepts(req: Request): Request {
  const headers = new Headers(req.headers);
  headers.set("accept", "application/json, text/event-stream");
  return withoutBody(req, headers);
}

/**
 * The path a request is routed by: its pathname as sent, nothing removed or decoded, so that svc
 * serves the path a proxy in front of it matched (`/call/` is not `/call`; `lib/http_wire.ts`
 * refuses targets that readers could resolve differently).
 */
export function routePath(url: URL): string {
  return url.pathname;
}
