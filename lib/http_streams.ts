/**
 * Event streams a client holds open (`GET /sse`, the MCP GET stream) are bounded: what is queued for
 * a client that stops reading (`McpServer:MaxStreamQueueBytes`; past it the stream is closed and its
 * queue dropped), and how many streams a caller and all callers may hold
 * (`McpServer:MaxStreamsPerCaller`, `McpServer:MaxStreams`).
 *
 * @module
 */
import type { HttpLimits } from "./config_http_limits.ts";
import { logger } from "./log.ts";

const log = logger("http");

/** Counts open streams by caller and bounds each stream's queue. */
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
   * `response` with its body read eagerly into a queue of at most `MaxStreamQueueBytes`; when the
   * client falls further behind, the stream is closed (the producer's side cancelled, the queue
   * dropped). The owner's slot is released when the stream ends, however it ends.
   */
  bound(owner: string, response: Response): Response {
    if (response.body === null) {
      this.release(owner);
      return response;
    }
    const limit = this.#limits.maxStreamQueueBytes;
    let released = false;
    const done = () => {
      if (!released) {
        released = true;
        this.release(owner);
      }
    };
    const reader = response.body.getReader();
    let out!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        out = controller;
      },
      cancel: (reason) => {
        done();
        return reader.cancel(reason).catch(() => {});
      },
    }, new ByteLengthQueuingStrategy({ highWaterMark: limit }));
    // The producer (an SDK transport, or the legacy one) enqueues without looking at backpressure,
    // so its queue is moved here at once, where it is counted.
    (async () => {
      try {
        for (;;) {
          const { done: ended, value } = await reader.read();
          if (ended) {
            out.close();
            return;
          }
          out.enqueue(value);
          if ((out.desiredSize ?? 0) < 0) {
            log.warning(
              "Closed an event stream whose client fell {Bytes} bytes behind (McpServer:MaxStreamQueueBytes {Limit}).",
              { Bytes: limit - (out.desiredSize ?? 0), Limit: limit },
            );
            out.error(new Error("the client fell too far behind"));
            await reader.cancel("the client fell too far behind").catch(() => {});
            return;
          }
        }
      } catch (error) {
        try {
          out.error(error);
        } catch { /* already closed */ }
      } finally {
        done();
      }
    })();
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }
}
