/**
 * `/health` (liveness) and `/health/ready` (readiness): the pool's figures, answered without a
 * worker, without authentication and before the Host check, so an orchestrator always gets an
 * answer. `/health` says whether svc can serve and recover: 503 only when the pool is Unhealthy
 * (below its minimum, nothing starting, its last start failed), never while it only replenishes;
 * `/health/ready` is 200 only when it is Healthy (warm + leased ≥ `MinPoolSize`).
 *
 * @module
 */
import { HttpError } from "./http_errors.ts";
import { routePath } from "./http_message.ts";
import { jsonResponse } from "./http_responses.ts";
import type { PoolStats, PoolStatus } from "./pool_contract.ts";

/** What health reads of the worker pool (`WorkerPool` has it). */
export interface PoolHealth {
  /** Counts of workers by state. */
  stats(): PoolStats;
  /** The pool's health judged from `stats`. */
  status(stats: PoolStats): PoolStatus;
}

/** True when `url`'s path is `/health` or `/health/ready`, exactly, as routing matches paths. */
export function isHealthCheck(url: URL): boolean {
  const path = routePath(url);
  return path === "/health" || path === "/health/ready";
}

/**
 * The answer to a health check (`req` is one {@linkcode isHealthCheck} accepts): 200 or 503 with
 * the pool's status, its figures and one check, never cached.
 *
 * @throws {HttpError} 405 with `Allow: GET` for any method but GET.
 */
export function health(req: Request, pool: PoolHealth): Response {
  if (req.method !== "GET") throw new HttpError(405, "Use GET", { headers: { allow: "GET" } });
  const readiness = routePath(new URL(req.url)) === "/health/ready";
  const stats = pool.stats();
  const status = pool.status(stats);
  const ok = readiness ? status === "Healthy" : status !== "Unhealthy";
  const description = stats.draining
    ? "Worker pool is draining"
    : `Worker pool: ${stats.warm} warm, ${stats.leased} leased, ${stats.creating} creating, minimum ${stats.min}`;
  return jsonResponse(ok ? 200 : 503, {
    status,
    pool: stats,
    checks: [{ name: "worker_pool", status, description, data: stats }],
  }, { "cache-control": "no-store" });
}
