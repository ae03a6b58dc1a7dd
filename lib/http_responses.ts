/**
 * The shapes of the HTTP front's own answers: a JSON body, and a JSON-RPC error for the MCP
 * endpoints (with `id: null`, as the transport answers a request it could not read).
 *
 * @module
 */

/** A JSON response of `status` with `body` and any extra `headers`. */
export function jsonResponse(status: number, body: unknown, headers: HeadersInit = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** A JSON-RPC error response (`id: null`) of HTTP `status`, JSON-RPC `code` and `message`. */
export function rpcError(status: number, code: number, message: string): Response {
  return jsonResponse(status, { jsonrpc: "2.0", error: { code, message }, id: null });
}

/** 403: a session needs an owner; a token without `sub` names nobody in particular. */
export function refuseOwnerless(): Response {
  return rpcError(
    403,
    -32000,
    "Forbidden: a session needs a caller identity, and the token has no 'sub' claim",
  );
}
