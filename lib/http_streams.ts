/**
 * Event streams a client holds open (`GET /sse`, the MCP GET stream) are counted: how many streams a
 * caller and all callers may hold (`McpServer:MaxStreamsPerCaller`, `McpServer:MaxStreams`); a
 * stream past either is refused with 429 ({@linkcode streamRefusal}).
 *
 * @module
 */
import type { HttpLimits } from "./config_http_limits.ts";
import { HttpError } from "./http_errors.ts";
import { logger } from "./log.ts";

const log = logger("http");

/** Counts open streams by caller. */
export class StreamLimiter {
  readonly #limits: HttpLimits;
  readonly #byCaller = new Map<string, number>();
  #total = 0;

  /** `limits`: the settings of {@linkcode HttpLimits}. */
  constructor(limits: HttpLimits) {
    this.#limits = limits;
  }

  /** Open streams in all. */
  get open(): number {
    return this.#total;
  }

  /**
   * Takes a stream slot for `owner`; the reason when none is free (nothing taken then). A slot taken
   * is given back by {@linkcode StreamLimiter.bound}'s stream ending, or {@linkcode StreamLimiter.release}.
   */
  admit(owner: string): string | null {
    const mine = this.#byCaller.get(owner) ?? 0;
    if (mine >= this.#limits.maxStreamsPerCaller) {
      return `Too many open event streams for this caller: ${mine} open, at most ${this.#limits.maxStreamsPerCaller} (McpServer:MaxStreamsPerCaller); close one first`;
    }
    if (this.#total >= this.#limits.maxStreams) {
      return `Too many open event streams: ${this.#total} open, at most ${this.#limits.maxStreams} (McpServer:MaxStreams); try again later`;
    }
    this.#byCaller.set(owner, mine + 1);
    this.#total++;
    return null;
  }

  /** Gives back a slot taken by {@linkcode StreamLimiter.admit}. */
  release(owner: string): void {
    const mine = (this.#byCaller.get(owner) ?? 1) - 1;
    if (mine > 0) this.#byCaller.set(owner, mine);
    else this.#byCaller.delete(owner);
    this.#total = Math.max(0, this.#total - 1);
  }

  /**
   * `response` passed through unchanged but for its end: the owner's slot is released when the
   * stream ends, however it ends (the client went away, or the producer closed it).
   */
  bound(owner: string, response: Response): Response {
    if (response.body === null) {
      this.release(owner);
      return response;
    }
    let released = false;
    const done = () => {
      if (!released) {
        released = true;
        this.release(owner);
      }
    };
    const reader = response.body.getReader();
    const out = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done: ended, value } = await reader.read();
          if (ended) {
            controller.close();
            done();
          } else controller.enqueue(value);
        } catch (error) {
          done();
          controller.error(error);
        }
      },
      cancel(reason) {
        done();
        return reader.cancel(reason);
      },
    });
    return new Response(out, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }
}

/** 429 with `Retry-After: 5` for an event stream {@linkcode StreamLimiter.admit} refused for `reason`. */
export function streamRefusal(reason: string): HttpError {
  log.info("Refused an event stream: {Reason}", { Reason: reason });
  return new HttpError(429, reason, { headers: { "retry-after": "5" } });
}
