/**
 * Bodies: reading request bodies under a size limit (`McpServer:MaxRequestBodyBytes`), and noticing
 * when a response body has been sent (`onBodyEnd`), so a streamed answer counts as work in progress.
 * A request body is streamed and counted, so a client cannot make svc buffer more than the limit,
 * whatever `Content-Length` claims or whether it is sent at all (chunked bodies have none).
 *
 * @module
 */

/** Thrown by {@linkcode readBodyText} when a body is larger than the limit. */
export class BodyTooLarge extends Error {
  /** @param limit the limit that was exceeded, in bytes */
  constructor(readonly limit: number) {
    super(`The request body is larger than McpServer:MaxRequestBodyBytes (${limit} bytes)`);
  }
}

/** Thrown by {@linkcode readBodyText} when the body is not valid UTF-8 text. */
export class BodyNotText extends Error {}

/**
 * Reads a request body as UTF-8 text, at most `limit` bytes. A declared `Content-Length` above the
 * limit is refused before anything is read; otherwise reading stops (and the stream is cancelled) as
 * soon as the count passes the limit.
 */
export async function readBodyText(req: Request, limit: number): Promise<string> {
  const declared = Number(req.headers.get("content-length") ?? NaN);
  if (declared > limit) {
    await req.body?.cancel().catch(() => {});
    throw new BodyTooLarge(limit);
  }
  if (!req.body) return "";
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = req.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        await reader.cancel().catch(() => {});
        throw new BodyTooLarge(limit);
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (error) {
    throw new BodyNotText("The request body is not UTF-8 text", { cause: error });
  }
}

/** True when a `Content-Type` header value names JSON (`application/json`, any parameters). */
export function isJsonContentType(value: string | null): boolean {
  return value?.split(";")[0]?.trim().toLowerCase() === "application/json";
}

/** Calls `end` once, when the response body has been sent or abandoned (at once if there is none). */
export function onBodyEnd(response: Response, end: () => void): Response {
  if (response.body === null) {
    end();
    return response;
  }
  let ended = false;
  const once = () => {
    if (!ended) {
      ended = true;
      end();
    }
  };
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          once();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (e) {
        once();
        controller.error(e);
      }
    },
    cancel(reason) {
      once();
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
