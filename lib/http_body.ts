/**
 * Bodies: reading request bodies under a size limit (`McpServer:MaxRequestBodyBytes`) and a time
 * limit (`McpServer:BodyReadTimeout`), and noticing
 * when a response body has been sent (`onBodyEnd`), so a streamed answer counts as work in progress.
 * A request body is streamed and counted, so a client cannot make svc buffer more than the limit,
 * whatever `Content-Length` claims or whether it is sent at all (chunked bodies have none).
 *
 * @module
 */

const EMPTY = new Uint8Array(0);

/** Why {@linkcode readBodyText} refused a body, with the HTTP status that says so. */
export class BodyRefused extends Error {
  /** @param status 413 or 408 */
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** Thrown by {@linkcode readBodyText} when a body is larger than the limit. */
export class BodyTooLarge extends BodyRefused {
  /** @param limit the limit that was exceeded, in bytes */
  constructor(readonly limit: number) {
    super(413, `The request body is larger than McpServer:MaxRequestBodyBytes (${limit} bytes)`);
  }
}

/** Thrown by {@linkcode readBodyText} when a body has not arrived in full in time. */
export class BodyTimedOut extends BodyRefused {
  /** @param timeoutMs the time allowed, in ms */
  constructor(readonly timeoutMs: number) {
    super(
      408,
      `The request body did not arrive in full within McpServer:BodyReadTimeout (${
        timeoutMs / 1000
      } s)`,
    );
  }
}

/** Thrown by {@linkcode readBodyText} when svc already holds its budget of request bodies. */
export class BodiesOverBudget extends BodyRefused {
  /** @param budget the budget, in bytes */
  constructor(readonly budget: number) {
    super(
      503,
      `svc is reading as many request bodies as McpServer:MaxBufferedBodyBytes (${budget} bytes) allows; try again shortly`,
    );
  }
}

/**
 * The bytes of request bodies all requests may hold at once while they arrive
 * (`McpServer:MaxBufferedBodyBytes`). Without it, 100 connections that each sent just under 4 MiB
 * and stopped held 430 MB until their timeouts, and the process kept that size afterwards.
 */
export class BodyBudget {
  readonly #max: number;
  #held = 0;

  /** @param max the budget in bytes */
  constructor(max: number) {
    this.#max = max;
  }

  /** The budget, in bytes. */
  get max(): number {
    return this.#max;
  }

  /** Takes `bytes` of the budget; false (nothing taken) when they do not fit. */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.#max) return false;
    this.#held += bytes;
    return true;
  }

  /** Gives back `bytes` taken before. */
  give(bytes: number): void {
    this.#held = Math.max(0, this.#held - bytes);
  }
}

/** Thrown by {@linkcode readBodyText} when the body is not valid UTF-8 text. */
export class BodyNotText extends Error {}

/** Bounds of {@linkcode readBodyText}. */
export interface BodyBounds {
  /** Most bytes read (`McpServer:MaxRequestBodyBytes`). */
  limit: number;
  /** Time for the whole body to arrive, in ms (`McpServer:BodyReadTimeout`). */
  timeoutMs: number;
  /** What all bodies being read may hold at once (`McpServer:MaxBufferedBodyBytes`). */
  budget: BodyBudget;
}

/**
 * Reads a request body as UTF-8 text, at most `limit` bytes, within `timeoutMs`. A declared
 * `Content-Length` above the limit is refused before anything is read; otherwise reading stops (and
 * the stream is cancelled) as soon as the count passes the limit or the time runs out. What was
 * read of a refused body is dropped at once: a stalled client holds no memory for long. What the
 * body's buffer holds is counted against the shared `budget` until the body has been read; a body
 * that does not fit is refused with 503.
 */
export async function readBodyText(req: Request, bounds: BodyBounds): Promise<string> {
  const { limit, timeoutMs, budget } = bounds;
  const declared = Number(req.headers.get("content-length") ?? NaN);
  if (declared > limit) {
    await req.body?.cancel().catch(() => {});
    throw new BodyTooLarge(limit);
  }
  const whole = wholeBodies.get(req);
  if (whole !== undefined) {
    wholeBodies.delete(req);
    if (whole.length > limit) throw new BodyTooLarge(limit);
    return utf8(whole);
  }
  if (!req.body) return "";
  // One buffer, grown by doubling up to the limit, rather than the pieces as they came: a body
  // sent as a million one-byte chunks (or TCP segments) would be held as a million arrays of a
  // few hundred bytes each (measured: 1.4 GB for a 4 MiB body).
  // Sized by what arrives, not by Content-Length: a head alone must not reserve the limit.
  let bytes = EMPTY;
  let total = 0;
  let taken = 0;
  const reader = req.body.getReader();
  let timedOut = false;
  // Cancelling ends the pending read (done), so a client that stops sending cannot hold it.
  const timer = setTimeout(() => {
    timedOut = true;
    reader.cancel().catch(() => {});
  }, timeoutMs);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (timedOut) {
        bytes = EMPTY;
        throw new BodyTimedOut(timeoutMs);
      }
      if (done) break;
      if (total + value.byteLength > limit) {
        bytes = EMPTY;
        await reader.cancel().catch(() => {});
        throw new BodyTooLarge(limit);
      }
      if (total + value.byteLength > bytes.length) {
        const size = Math.min(
          limit,
          Math.max(16 * 1024, 2 * bytes.length, total + value.byteLength),
        );
        // The budget counts what is held: the buffer's size, taken as it grows.
        if (!budget.take(size - bytes.length)) {
          bytes = EMPTY;
          await reader.cancel().catch(() => {});
          throw new BodiesOverBudget(budget.max);
        }
        taken += size - bytes.length;
        const grown = new Uint8Array(size);
        grown.set(bytes.subarray(0, total));
        bytes = grown;
      }
      bytes.set(value, total);
      total += value.byteLength;
    }
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
    budget.give(taken);
  }
  return utf8(bytes.subarray(0, total));
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function utf8(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes);
  } catch (error) {
    throw new BodyNotText("The request body is not UTF-8 text", { cause: error });
  }
}

/** Bodies that arrived whole with their request's head, by request (see {@linkcode withWholeBody}). */
const wholeBodies = new WeakMap<Request, Uint8Array>();

/**
 * Marks `req`'s body as `bytes`, all of it already received (with the head), so that
 * {@linkcode readBodyText} takes them as they are instead of pulling `req.body`, a stream, piece by
 * piece; the limit still applies. `req` is returned.
 */
export function withWholeBody(req: Request, bytes: Uint8Array): Request {
  wholeBodies.set(req, bytes);
  return req;
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
