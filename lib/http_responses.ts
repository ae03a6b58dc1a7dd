/**
 * The shape of the HTTP front's own successful answers: a JSON body. Errors have one shape of their
 * own, built in `http_errors.ts`.
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
