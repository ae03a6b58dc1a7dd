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
