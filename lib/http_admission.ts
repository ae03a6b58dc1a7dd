/**
 * A cap on HTTP requests handled at once (`McpServer:MaxConcurrentRequests`): past it a request gets
 * 503 with `Retry-After` before anything is read or leased, so a flood of slow requests cannot pile
 * up without bound in svc. `/health` and `/health/ready` are never refused, so an orchestrator keeps
 * seeing a busy svc as alive. A request counts until it is answered; a POST answered with events (SSE)
 * counts until they have been sent, since the call runs while they are. A GET counts until its
 * answer starts: the long-lived GETs are event streams, bounded by `MaxStreams`.
 *
 * @module
 */
import { onBodyEnd } from "./http_body.ts";
import { errorResponse, HttpError } from "./http_errors.ts";
import { isHealthCheck } from "./http_health.ts";
import { isEventStream } from "./http_responses.ts";
import { logger } from "./log.ts";

const log = logger("http");

/** Seconds a refused client is told to wait. */
const RETRY_AFTER_SECONDS = 1;

/** Admits at most `max` requests at once (health checks aside); see the module documentation. */
export class RequestLimiter {
  readonly #max: number;
  #inFlight = 0;
  /** Requests refused since the cap was last reached, or 0 while admitting. */
  #refused = 0;

  /** @param max `McpServer:MaxConcurrentRequests` @default 1024 */
  constructor(max: number) {
    this.#max = max;
  }

  /** Handles `req` with `next` if under the cap, else answers 503 with `Retry-After`. */
  async handle(
    req: Request,
    next: (req: Request) => Response | Promise<Response>,
  ): Promise<Response> {
    const url = URL.parse(req.url);
    if (url !== null && isHealthCheck(url)) return await next(req);
    if (this.#inFlight >= this.#max) return this.#refuse();
    if (this.#refused > 0) {
      log.info(
        "Admitting requests again; {Refused} were refused at McpServer:MaxConcurrentRequests.",
        {
          Refused: this.#refused,
        },
      );
      this.#refused = 0;
    }
    this.#inFlight++;
    let counted = true;
    const release = () => {
      if (counted) {
        counted = false;
        this.#inFlight--;
      }
    };
    try {
      const response = await next(req);
      // Only a POST answered with events is still working; other answers are complete already.
      if (req.method === "GET" || !isEventStream(response)) {
        release();
        return response;
      }
      return onBodyEnd(response, release);
    } catch (error) {
      release();
      throw error;
    }
  }

  #refuse(): Response {
    // One warning when the cap is reached, not one per refused request: a flood would flood the log.
    if (this.#refused++ === 0) {
      log.warning("Refusing requests: {Max} in flight (McpServer:MaxConcurrentRequests).", {
        Max: this.#max,
      });
    }
    // Outside the front's error funnel (it runs before the front), so it answers rather than throws.
    return errorResponse(
      new HttpError(
        503,
        `Too many requests in flight: at most ${this.#max} (McpServer:MaxConcurrentRequests); try again shortly`,
        { headers: { "retry-after": String(RETRY_AFTER_SECONDS) } },
      ),
    );
  }
}
