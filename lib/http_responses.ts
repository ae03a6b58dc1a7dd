/**
 * The shape of the HTTP front's own successful answers, a JSON body, and the one reading of any
 * answer's shape the front and the connection share: whether it is an event stream. Errors have
 * one shape of their own, built in `http_errors.ts`.
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

/**
 * `response` with the header `name` set to `value`. Responses built with `new Response` have
 * mutable headers and are changed in place; one whose headers are immutable (as `fetch` and some
 * SDK answers give) is copied around the same body.
 */
export function withHeader(response: Response, name: string, value: string): Response {
  try {
    response.headers.set(name, value);
    return response;
  } catch {
    const copy = new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers: new Headers(response.headers),
    });
    copy.headers.set(name, value);
    return copy;
  }
}

/**
 * Whether `response` is an event stream (`Content-Type: text/event-stream`, its parameters aside):
 * its body runs on after the handler returned, so what its request holds is released at the body's
 * end, and it is written as it comes rather than measured first.
 */
export function isEventStream(response: Response): boolean {
  const type = response.headers.get("content-type") ?? "";
  return type.split(";", 1)[0]!.trim().toLowerCase() === "text/event-stream";
}
