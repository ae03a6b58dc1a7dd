/**
 * The worker pool of the HTTP transport. Each tool call leases exactly one warm worker and returns it;
 * the worker is reset to its post-startup snapshot after the response is sent and re-enters the pool
 * only when the reset succeeded. The pool warms `EagerWarmCount` workers at start, grows on demand up
 * to `MaxPoolSize`, replenishes below `MinPoolSize`, reclaims idle workers and drains on shutdown.
 *
 * States: creating → warm → leased → resetting → warm; any of them → evicted.
 *
 * Workers are runspaces; up to `RunspacesPerProcess` of them share one pwsh process. A new worker
 * opens in a process with room (a fraction of a second) before a new process is spawned (seconds).
 *
 * @module
 */
import { hostCacheDirectory } from "./cache_directory.ts";
import type { PoolSettings, ShellSettings } from "./config.ts";
import { logger } from "./log.ts";
import { observePoolWorkers, poolTelemetry } from "./telemetry.ts";
import { Worker } from "./shell.ts";
import type { StartupResult } from "./worker_protocol.ts";

const log = logger("pool");

/** State of one pooled worker. */
export type WorkerState = "creating" | "warm" | "leased" | "resetting" | "evicted";

/** Codes of {@linkcode PoolError}. */
export type PoolErrorCode = "EXHAUSTED" | "DRAINING";

/** No worker could be leased: the pool is exhausted or shutting down. */
export class PoolError extends Error {
  override name = "PoolError";
  /** Why no worker was leased. */
  readonly code: PoolErrorCode;
  /** Seconds a client should wait before retrying (for `Retry-After`). */
  readonly retryAfterSeconds: number;
  /** Builds the error. */
  constructor(code: PoolErrorCode, message: string, retryAfterSeconds = 1) {
    super(message);
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }
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
}

/** Health of the pool, as `/health` reports it. */
export type PoolStatus = "Healthy" | "Degraded" | "Unhealthy";

/** A leased worker. Call `release()` exactly once when the call's response has been sent. */
export interface Lease {
  /** The worker serving this call. */
  readonly worker: Worker;
  /** What the worker's startup reported (module versions). */
  readonly startup: StartupResult;
  /** Returns the worker: it is reset in the background and re-enters the pool if that succeeds. */
  release(): void;
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

interface Slot {
  id: number;
  createdAt: string;
  state: WorkerState;
  worker: Worker | null;
  startup: StartupResult | null;
  lastActive: number;
}

interface Waiter {
  resolve: (slot: Slot) => void;
  reject: (error: Error) => void;
}

/** The HTTP worker pool (see the module documentation). */
export class WorkerPool implements AsyncDisposable {
  readonly #options: WorkerPoolOptions;
  readonly #slots = new Set<Slot>();
  // Workers being closed or killed; drain() waits for them, so shutdown leaves no process behind.
  readonly #closing = new Set<Promise<void>>();
  readonly #warm: Slot[] = [];
  readonly #waiters: Waiter[] = [];
  readonly #timers: ReturnType<typeof setInterval>[] = [];
  #unobserve = () => {};
  #nextId = 0;
  #draining = false;
  /** A process being spawned that will have room for more workers once it has said hello. */
  #spawning: Promise<Worker> | null = null;

  private constructor(options: WorkerPoolOptions) {
    this.#options = options;
  }

  /** Starts the pool: warms `EagerWarmCount` workers in parallel, then starts the background checks. */
  static async start(options: WorkerPoolOptions): Promise<WorkerPool> {
    const pool = new WorkerPool(options);
    const { minPoolSize: min, maxPoolSize: max, eagerWarmCount: eager } = options.pool;
    log.info("Starting StatelessRunspacePool: min={Min}, max={Max}, eager={Eager}.", {
      Min: min,
      Max: max,
      Eager: eager,
    });
    await Promise.all(Array.from({ length: eager }, () => pool.#create()));
    log.info("Startup complete: {Warm}/{Eager} workers initialized.", {
      Warm: pool.#warm.length,
      Eager: eager,
    });
    pool.#unobserve = observePoolWorkers(() => {
      const { creating, warm, leased, resetting } = pool.stats();
      return { creating, warm, leased, resetting };
    });
    const { replenishCheckIntervalMs, sweepIntervalMs } = options.pool;
    pool.#timers.push(setInterval(() => pool.#replenish(), replenishCheckIntervalMs));
    pool.#timers.push(setInterval(() => pool.#sweep(), sweepIntervalMs));
    pool.#replenish();
    return pool;
  }

  /** Counts of workers by state. */
  stats(): PoolStats {
    const count = (state: WorkerState) => [...this.#slots].filter((s) => s.state === state).length;
    return {
      warm: count("warm"),
      leased: count("leased"),
      resetting: count("resetting"),
      creating: count("creating"),
      total: this.#slots.size,
      min: this.#options.pool.minPoolSize,
      max: this.#options.pool.maxPoolSize,
      draining: this.#draining,
    };
  }

  /**
   * Health of the pool (SPEC §3.4): Healthy when warm + leased workers reach `MinPoolSize`, where a
   * worker resetting after its call still counts as leased (its lease ends when the reset does; svc
   * only sends the response earlier). Degraded while draining or while workers being created may
   * close the gap; else Unhealthy.
   */
  status(s: PoolStats = this.stats()): PoolStatus {
    if (s.draining) return "Degraded";
    // Without the resetting workers, readiness would drop to 503 after every burst of calls on a
    // real pwsh (a reset takes milliseconds there), taking a busy replica out of its load balancer.
    if (s.warm + s.leased + s.resetting >= s.min) return "Healthy";
    return s.creating > 0 ? "Degraded" : "Unhealthy";
  }

  /** True when the pool is Healthy: ready to serve (see {@linkcode WorkerPool.status}). */
  ready(): boolean {
    return this.status() === "Healthy";
  }

  /**
   * Leases a warm worker, growing the pool when all are busy. Rejects with `EXHAUSTED` when none is
   * free within `AcquisitionTimeout`, with `DRAINING` during shutdown, and on `signal` abort.
   */
  lease(signal?: AbortSignal): Promise<Lease> {
    if (this.#draining) {
      poolTelemetry.acquisitions.add(1, { outcome: "draining" });
      return Promise.reject(
        new PoolError("DRAINING", "The worker pool is shutting down and accepts no new calls"),
      );
    }
    const started = performance.now();
    const waited = (outcome: string) => {
      poolTelemetry.acquisitions.add(1, { outcome });
      poolTelemetry.acquisitionWait.record(performance.now() - started);
    };
    const slot = this.#takeWarm();
    if (slot) {
      waited("ok");
      return Promise.resolve(this.#leaseOf(slot));
    }
    const { acquisitionTimeoutMs } = this.#options.pool;
    return new Promise<Lease>((resolve, reject) => {
      const timer = { id: undefined as ReturnType<typeof setTimeout> | undefined };
      const onAbort = () => finish(new Error("The call was cancelled while waiting for a worker"));
      const waiter: Waiter = {
        resolve: (s) => {
          cleanup();
          waited("ok");
          resolve(this.#leaseOf(s));
        },
        reject: (error) => finish(error),
      };
      const cleanup = () => {
        clearTimeout(timer.id);
        signal?.removeEventListener("abort", onAbort);
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
      };
      const finish = (error: Error) => {
        cleanup();
        waited(error instanceof PoolError ? error.code.toLowerCase() : "cancelled");
        reject(error);
      };
      timer.id = setTimeout(() => {
        const s = this.stats();
        finish(
          new PoolError(
            "EXHAUSTED",
            `No PowerShell worker became free within ${
              acquisitionTimeoutMs / 1000
            } s: ${s.leased} busy, ${s.total} of at most ${s.max} workers (McpServer:RunspacePool:MaxPoolSize)`,
            Math.max(1, Math.ceil(acquisitionTimeoutMs / 1000)),
          ),
        );
      }, acquisitionTimeoutMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
      this.#grow();
    });
  }

  /**
   * Stops accepting calls, lets leased workers finish for up to `ShutdownDrainTimeout`, then closes
   * every worker (killing those that do not exit).
   */
  async drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    this.#unobserve();
    for (const timer of this.#timers) clearInterval(timer);
    for (const waiter of this.#waiters.splice(0)) {
      waiter.reject(
        new PoolError("DRAINING", "The worker pool is shutting down and accepts no new calls"),
      );
    }
    log.info("Pool draining: stopping new acquisitions.");
    const deadline = Date.now() + this.#options.pool.shutdownDrainTimeoutMs;
    while (
      Date.now() < deadline &&
      [...this.#slots].some((s) => s.state === "leased" || s.state === "resetting")
    ) {
      await new Promise((r) => setTimeout(r, 25));
    }
    const remaining = [...this.#slots].filter((s) => s.state === "leased").length;
    if (remaining > 0) {
      log.warning("Drain timed out; force-closing {Count} busy worker(s).", { Count: remaining });
    }
    // A worker still starting has nothing to close yet: #create closes it once it has started. Evicting
    // its slot here would make that a no-op and leave the worker running, its directory behind.
    await Promise.all(
      [...this.#slots].filter((s) => s.state !== "creating").map((s) => this.#evict(s, "shutdown")),
    );
    while ([...this.#slots].some((s) => s.state === "creating")) {
      await new Promise((r) => setTimeout(r, 25));
    }
    await Promise.all(this.#closing);
    log.info("RunspacePool disposed.");
  }

  /** Drains the pool (see {@linkcode WorkerPool.drain}). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.drain();
  }

  #takeWarm(): Slot | null {
    while (this.#warm.length > 0) {
      // Most recently used first, so idle workers at the bottom age out and are reclaimed.
      const slot = this.#warm.pop()!;
      if (slot.state === "warm" && slot.worker?.alive) {
        slot.state = "leased";
        return slot;
      }
      if (slot.state === "warm") void this.#evict(slot, "died");
    }
    return null;
  }

  #leaseOf(slot: Slot): Lease {
    let released = false;
    return {
      worker: slot.worker!,
      startup: slot.startup!,
      release: () => {
        if (released) return;
        released = true;
        void this.#reset(slot);
      },
    };
  }

  /**
   * Adds a worker when more callers wait than workers are on their way (starting, or resetting
   * after a call), the pool is below its maximum, and fewer than `growthConcurrency` are starting.
   * Called again whenever a start ends, so a burst grows the pool one paced step at a time.
   */
  #grow(): void {
    const s = this.stats();
    const coming = s.creating + s.resetting;
    const limit = this.#options.growthConcurrency ??
      Math.max(1, Math.floor(navigator.hardwareConcurrency / 2));
    if (this.#waiters.length > coming && s.total < s.max && s.creating < limit) {
      void this.#create();
    }
  }

  #lastTicks = 0n;

  /**
   * The creation time as .NET's round-trip format writes it (7 fraction digits), unique within the
   * pool: it names the worker in log lines, and two workers created in the same millisecond must
   * not share a name.
   */
  #uniqueTimestamp(): string {
    const now = performance.timeOrigin + performance.now();
    const ms = Math.floor(now);
    // 100 ns ticks overflow a double's integers, hence bigint.
    let ticks = BigInt(ms) * 10_000n + BigInt(Math.floor((now - ms) * 10_000));
    if (ticks <= this.#lastTicks) ticks = this.#lastTicks + 1n;
    this.#lastTicks = ticks;
    const seconds = new Date(Number(ticks / 10_000n)).toISOString().slice(0, 19);
    return `${seconds}.${String(ticks % 10_000_000n).padStart(7, "0")}Z`;
  }

  async #create(): Promise<void> {
    if (this.#draining || this.#slots.size >= this.#options.pool.maxPoolSize) return;
    const slot: Slot = {
      id: ++this.#nextId,
      createdAt: this.#uniqueTimestamp(),
      state: "creating",
      worker: null,
      startup: null,
      lastActive: Date.now(),
    };
    this.#slots.add(slot);
    const { shell } = this.#options;
    try {
      slot.worker = await this.#startWorker(slot);
      slot.startup = await slot.worker.startup({
        modules: shell.modules,
        scriptPath: shell.startupScriptPath,
        script: shell.startupScript,
      }, shell.workerStartTimeoutMs);
    } catch (error) {
      log.warning("Worker startup failed; evicting without entering pool.", {
        Worker: slot.id,
        Error: error instanceof Error ? error.message : String(error),
      });
      await this.#evict(slot, "startup_failed");
      return;
    }
    if (this.#draining) {
      await this.#evict(slot, "shutdown");
      return;
    }
    slot.worker.exited.then(async () => {
      if (slot.state !== "warm") return;
      await this.#evict(slot, "died");
      // Replace it now rather than at the next replenish tick (up to ReplenishCheckInterval away).
      this.#replenish();
    });
    this.#makeWarm(slot);
    log.debug("Worker {CreatedAt} initialized and enqueued. Total={Total}.", {
      CreatedAt: slot.createdAt,
      Total: this.#slots.size,
    });
    this.#grow();
  }

  /** A worker in a process with room, else in a new process (whose room the next creations use). */
  async #startWorker(slot: Slot): Promise<Worker> {
    const { pwsh, pool } = this.#options;
    const label = `worker ${slot.id}`;
    while (true) {
      const host = this.#workerWithRoom();
      if (host) return slot.worker = await host.openSibling(label);
      const spawning = this.#spawning;
      if (!spawning || pool.runspacesPerProcess === 1) break;
      // #spawning is cleared as soon as the spawn ends, before this resumes: no spin on a settled one.
      await spawning.catch(() => {});
    }
    const start = Worker.start({
      pwsh,
      stopTimeoutMs: pool.stopTimeoutMs,
      runspacesPerProcess: pool.runspacesPerProcess,
      label,
      cacheDirectory: hostCacheDirectory(this.#options.shell),
      environment: this.#options.shell.workerEnvironment,
    });
    this.#spawning = start;
    try {
      // Set before the creations waiting on this spawn resume, so they find this process.
      slot.worker = await start;
    } finally {
      if (this.#spawning === start) this.#spawning = null;
    }
    // Let the creations waiting on this spawn send their `open` before this worker's startup: the
    // process reads frames in order, and startup blocks its loop for a few hundred ms.
    await new Promise((resolve) => setTimeout(resolve, 0));
    return slot.worker;
  }

  /** A live worker whose process can take one more, preferring a warm one (its loop is idle). */
  #workerWithRoom(): Worker | null {
    let found: Worker | null = null;
    for (const slot of this.#slots) {
      const worker = slot.worker;
      if (!worker?.alive || !worker.process.hasRoom) continue;
      if (slot.state === "warm") return worker;
      found ??= worker;
    }
    return found;
  }

  #makeWarm(slot: Slot): void {
    slot.lastActive = Date.now();
    const waiter = this.#waiters.shift();
    if (waiter) {
      slot.state = "leased";
      waiter.resolve(slot);
    } else {
      slot.state = "warm";
      this.#warm.push(slot);
    }
  }

  async #reset(slot: Slot): Promise<void> {
    slot.state = "resetting";
    const worker = slot.worker!;
    if (!worker.alive || this.#draining) {
      // A retiring process ends when its last worker is closed: idle siblings would keep it (and
      // the stuck call's native children) alive until their next lease, so they go now.
      if (worker.process.retiring) {
        for (const other of [...this.#warm]) {
          if (other.worker?.process === worker.process) void this.#evict(other, "retired");
        }
      }
      await this.#evict(slot, worker.alive ? "shutdown" : "died");
      if (!this.#draining) this.#replenish();
      return;
    }
    try {
      await worker.reset();
    } catch (error) {
      log.warning("Worker {CreatedAt} reset failed; evicting it: {Error}", {
        CreatedAt: slot.createdAt,
        Error: error instanceof Error ? error.message : String(error),
      });
      poolTelemetry.resets.add(1, { outcome: "failed" });
      await this.#evict(slot, "reset_failure");
      this.#replenish();
      // A caller may be waiting for exactly this worker.
      if (this.#waiters.length > 0) this.#grow();
      return;
    }
    poolTelemetry.resets.add(1, { outcome: "ok" });
    if (this.#draining) {
      await this.#evict(slot, "shutdown");
      return;
    }
    this.#makeWarm(slot);
  }

  async #evict(slot: Slot, reason: string): Promise<void> {
    if (slot.state === "evicted") return;
    const from = slot.state;
    slot.state = "evicted";
    poolTelemetry.evictions.add(1, { reason });
    const i = this.#warm.indexOf(slot);
    if (i >= 0) this.#warm.splice(i, 1);
    this.#slots.delete(slot);
    if (slot.worker) {
      const closing = reason === "shutdown" || reason === "idle"
        ? slot.worker.close()
        : slot.worker.kill();
      this.#closing.add(closing);
      try {
        await closing;
      } finally {
        this.#closing.delete(closing);
      }
    }
    log.debug("Worker {CreatedAt} evicted from {From} (reason={Reason}). Total={Total}.", {
      CreatedAt: slot.createdAt,
      From: from,
      Reason: reason,
      Total: this.#slots.size,
    });
  }

  #replenish(): void {
    if (this.#draining) return;
    const s = this.stats();
    const deficit = Math.min(s.min - s.total, s.max - s.total);
    for (let i = 0; i < deficit; i++) void this.#create();
  }

  #sweep(): void {
    if (this.#draining) return;
    const { idleTtlMs, minPoolSize } = this.#options.pool;
    const now = Date.now();
    // Oldest first: the bottom of the warm stack has been idle longest.
    for (const slot of [...this.#warm]) {
      if (this.#slots.size <= minPoolSize) break;
      if (slot.state === "warm" && now - slot.lastActive > idleTtlMs) {
        log.debug("Idle sweep evicted worker {CreatedAt} (idle since {LastActive}).", {
          CreatedAt: slot.createdAt,
          LastActive: new Date(slot.lastActive).toISOString(),
        });
        void this.#evict(slot, "idle");
      }
    }
  }
}
