/**
 * What the worker pool (`lib/pool.ts`) offers its callers: a lease, its options, the pool's counts
 * and health, and why a lease was refused.
 *
 * @module
 */
import type { ShellSettings } from "./config.ts";
import type { PoolSettings } from "./config_pool.ts";
import { WorkerUnavailableError } from "./errors.ts";
import type { RunspaceWorker, StartupResult } from "./worker.ts";

/** State of one pooled worker. */
export type WorkerState = "creating" | "warm" | "leased" | "resetting" | "evicted";

/** Codes of {@linkcode PoolError}. */
export type PoolErrorCode = "EXHAUSTED" | "DRAINING";

/** No worker could be leased: the pool is exhausted or shutting down. */
export class PoolError extends WorkerUnavailableError {
  override name = "PoolError";
  /** Why no worker was leased. */
  readonly code: PoolErrorCode;
  /** Builds the error. @default retryAfterSeconds 1 */
  constructor(code: PoolErrorCode, message: string, retryAfterSeconds = 1) {
    super(message, retryAfterSeconds);
    this.code = code;
  }
}

/** The `outcome` of a lease that waited, for telemetry: ok, the pool's error code, or cancelled. */
export function acquisitionOutcome(error: Error | null): string {
  if (error === null) return "ok";
  return error instanceof PoolError ? error.code.toLowerCase() : "cancelled";
}

/** The `EXHAUSTED` error of a lease that waited `timeoutMs` in a pool counted by `s`. */
export function exhausted(s: PoolStats, timeoutMs: number): PoolError {
  return new PoolError(
    "EXHAUSTED",
    `No PowerShell worker became free within ${
      timeoutMs / 1000
    } s: ${s.leased} busy, ${s.total} of at most ${s.max} workers (McpServer:RunspacePool:MaxPoolSize)`,
    Math.max(1, Math.ceil(timeoutMs / 1000)),
  );
}

/** Counts of workers by state, for health and logs. */
export interface PoolStats {
  warm: number;
  leased: number;
  resetting: number;
  creating: number;
  total: number;
  min: number;
  max: number;
  draining: boolean;
  /**
   * The last attempt to start a worker failed (pwsh missing or refused, a startup script that
   * throws, a time-out): the pool cannot reach its minimum on its own until a start succeeds.
   */
  startFailing: boolean;
}

/** Health of the pool, as `/health` reports it. */
export type PoolStatus = "Healthy" | "Degraded" | "Unhealthy";

/**
 * Health of a pool with counts `s`. Healthy (ready, SPEC §3.4) when warm + leased workers reach
 * `MinPoolSize`, where a worker resetting after its call still counts as leased (its lease ends when
 * the reset does; svc only sends the response earlier). Below that, Degraded while the pool can
 * recover on its own: it is draining, or starting workers, or replaces a worker it lost at its next
 * step (a process retired for `MaxWorkerMemoryMB`, one that died); Unhealthy only when nothing is
 * starting and its last start failed, so that it cannot reach its minimum by itself.
 */
export function poolStatus(s: PoolStats): PoolStatus {
  if (s.draining) return "Degraded";
  // Without the resetting workers, readiness would drop to 503 after every burst of calls on a
  // real pwsh (a reset takes milliseconds there), taking a busy replica out of its load balancer.
  if (s.warm + s.leased + s.resetting >= s.min) return "Healthy";
  // A pool that is only replenishing is alive: restarting the process would only lose its workers.
  return s.creating === 0 && s.startFailing ? "Unhealthy" : "Degraded";
}

/** A leased worker. Call `release()` exactly once when the call's response has been sent. */
export interface Lease {
  /** The worker serving this call. */
  readonly worker: RunspaceWorker;
  /** What the worker's startup reported (module versions). */
  readonly startup: StartupResult;
  /** Returns the worker: it is reset in the background and re-enters the pool if that succeeds. */
  release(): void;
}

/** Options of {@linkcode WorkerPool.lease}. */
export interface LeaseOptions {
  /** Ends the wait for a worker. @default none */
  signal?: AbortSignal;
  /**
   * Who the call runs for (`tenantOf(principal)` of `lib/pool_tenancy.ts`): the worker is in a
   * process that serves no other tenant while the call runs. @default SHARED_TENANT (`anonymous`)
   */
  tenant?: string;
}

/** Options of {@linkcode WorkerPool.start}. */
export interface WorkerPoolOptions {
  /** Absolute path of pwsh. */
  pwsh: string;
  /** Pool sizes and intervals (`McpServer:RunspacePool:*`). */
  pool: PoolSettings;
  /** Modules and startup script run in every new worker. */
  shell: ShellSettings;
  /**
   * Most workers starting at once while the pool grows under load. A pwsh start costs about one
   * CPU-second, so starting more than the machine has spare cores for starves the calls already
   * running, and a burst then waits on starts instead of on the workers it has.
   * @default half the CPU cores, at least 1
   */
  growthConcurrency?: number;
}
