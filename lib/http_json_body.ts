/**
 * The JSON bodies of the HTTP front's POST endpoints (`/call`, the MCP endpoints, legacy
 * SSE's `POST /messages`): only `application/json` is taken, so a cross-site form (`text/plain`, sent
 * without a preflight) cannot post, and a body is read once, within the limits of
 * {@linkcode BodyBounds}, and parsed. Every refusal is an {@linkcode HttpError}.
 *
 * @module
 */
import { type BodyBounds, BodyRefused, isJsonContentType, readBodyText } from "./http_body.ts";
import { HttpError, RpcCode } from "./http_errors.ts";

/** The message of the 415 answer to a body that is not `application/json`. */
const UNSUPPORTED_MEDIA_TYPE = "Unsupported Media Type: Content-Type must be application/json";

/** @throws {HttpError} 415 unless `req`'s `Content-Type` is `application/json` (any parameters). */
export function requireJsonContent(req: Request): void {
  if (!isJsonContentType(req.headers.get("content-type"))) {
    throw new HttpError(415, UNSUPPORTED_MEDIA_TYPE);
  }
}

/**
 * `req`'s body, read within `bounds` and parsed as JSON. The content type is the caller's to check
 * first ({@linkcode requireJsonContent}): some endpoints refuse other things in between.
 *
 * @throws {HttpError} the status `readBodyText` gave (413, 408 or 503) with code -32600, or 400
 * with code -32700 and `parseMessage` when the body is not UTF-8 JSON.
 */
export async function readJsonBody(
  req: Request,
  bounds: BodyBounds,
  parseMessage: string,
): Promise<unknown> {
  let text: string;
  try {
    text = await readBodyText(req, bounds);
  } catch (error) {
    if (error instanceof BodyRefused) {
      throw new HttpError(error.status, error.message, { code: RpcCode.invalidRequest });
    }
    throw new HttpError(400, parseMessage, { code: RpcCode.parseError });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, parseMessage, { code: RpcCode.parseError });
  }
}
