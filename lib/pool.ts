/**
 * The worker pool of the HTTP transport. Each tool call leases exactly one warm worker and returns it;
 * the worker is reset to its post-startup snapshot after the response is sent and re-enters the pool
 * only when the reset succeeded. The pool warms `EagerWarmCount` workers at start, grows on demand up
 * to `MaxPoolSize`, replenishes below `MinPoolSize`, reclaims idle workers and drains on shutdown
 * (states: creating → warm → leased → resetting → warm; any of them → evicted).
 *
 * Workers are runspaces; up to `RunspacesPerProcess` of them share one pwsh process. A new worker
 * opens in a process with room (a fraction of a second) before a new process is spawned (seconds).
 * A process serves one tenant at a time (`lib/pool_tenancy.ts`): a lease names its caller's tenant
 * and gets a worker only in a process that is free or already serves that tenant. Callers wait in
 * order; when one cannot be served and the pool cannot grow for it (at `MaxPoolSize` with nothing
 * to give back, or `SubprocessHostMode` `Single`), the processes of other tenants take no further
 * calls until they are free, so no tenant is starved.
 *
 * @module
 */
import { logger } from "./log.ts";
import { observePoolWorkers, poolTelemetry } from "./telemetry.ts";
import type { RunspaceWorker, StartupResult } from "./worker.ts";
import { startWorker, WorkerStartError } from "./worker_start.ts";
import type { WorkerProcess } from "./worker_process.ts";
import { liveProcesses, SHARED_TENANT, Tenancy } from "./pool_tenancy.ts";
import { CreationClock } from "./creation_clock.ts";
import { GrowthHoldBack, pollWhile, type Waiter, waitInLine } from "./pool_wait.ts";
import { closeByDeadline, cutOffReason, type DrainOptions, SHUTTING_DOWN } from "./pool_drain.ts";
import {
  acquisitionOutcome,
  exhausted,
  type Lease,
  type LeaseOptions,
  PoolError,
  type PoolStats,
  type PoolStatus,
  poolStatus,
  type WorkerPoolOptions,
  type WorkerState,
} from "./pool_contract.ts";

const log = logger("pool");

interface PoolEntry {
  id: number;
  createdAt: string;
  state: WorkerState;
  worker: RunspaceWorker | null;
  startup: StartupResult | null;
  lastActive: number;
  /** The tenant of the call it runs or is being reset after; null while warm or starting. */
  tenant: string | null;
  /** The tenant whose waiting call made the pool create it, if any (where to open it). */
  createdFor: string | null;
}

/** The HTTP worker pool (see the module documentation). */
export class WorkerPool implements AsyncDisposable {
  readonly #options: WorkerPoolOptions;
  readonly #entries = new Set<PoolEntry>();
  // Workers being closed or killed; drain() waits for them, so shutdown leaves no process behind.
  readonly #closing = new Set<Promise<void>>();
  readonly #warm: PoolEntry[] = [];
  readonly #waiters: Waiter<PoolEntry>[] = [];
  readonly #timers: ReturnType<typeof setInterval>[] = [];
  readonly #tenancy = new Tenancy();
  readonly #clock = new CreationClock();
  #unobserve = () => {};
  #nextId = 0;
  #draining = false;
  #warming = true;
  /** The last worker start failed (see `PoolStats.startFailing`). */
  #startFailing = false;
  readonly #holdBack = new GrowthHoldBack({
    recheck: () => this.#grow(),
    waiting: (tenant) => this.#waiters.some((waiter) => waiter.tenant === tenant),
  });
  /** A process being spawned that will have room for more workers once it has said hello. */
  #spawning: Promise<RunspaceWorker> | null = null;

  /**
   * Creates the pool and begins warming `EagerWarmCount` workers in parallel (see
   * {@linkcode WorkerPool.started}); the background checks start once they are up. The HTTP front
   * listens meanwhile, so a client's handshake and `tools/list` overlap the seconds a process takes.
   */
  constructor(options: WorkerPoolOptions) {
    this.#options = options;
    this.spawned = new Promise((resolve) => (this.#markSpawned = resolve));
    this.started = this.#warmUp();
    this.started.then(() => this.#markSpawned(), () => this.#markSpawned());
  }

  /** Resolves once the workers warmed at start have started or failed to; leases wait meanwhile. */
  readonly started: Promise<void>;
  /**
   * Resolves once the first worker process has been spawned (before its hello), or once `started`
   * has settled if none was: start work of svc's own can follow it without delaying the process.
   */
  readonly spawned: Promise<void>;
  #markSpawned!: () => void;

  /** A new pool, resolved once {@linkcode WorkerPool.started} has. */
  static async start(options: WorkerPoolOptions): Promise<WorkerPool> {
    const pool = new WorkerPool(options);
    await pool.started;
    return pool;
  }

  async #warmUp(): Promise<void> {
    const { minPoolSize: Min, maxPoolSize: Max, eagerWarmCount: Eager } = this.#options.pool;
    const counts = { Min, Max, Eager };
    log.info("Starting StatelessRunspacePool: min={Min}, max={Max}, eager={Eager}.", counts);
    await Promise.all(Array.from({ length: Eager }, () => this.#create()));
    this.#warming = false;
    if (this.#draining) return;
    // Calls may already hold some of them: svc listens during the warm-up.
    const { warm, leased, resetting } = this.stats();
    const Started = warm + leased + resetting;
    log.info("Startup complete: {Started}/{Eager} workers initialized.", { Started, Eager });
    this.#unobserve = observePoolWorkers(() => this.stats());
    const { replenishCheckIntervalMs, sweepIntervalMs } = this.#options.pool;
    this.#timers.push(setInterval(() => this.#replenish(), replenishCheckIntervalMs));
    this.#timers.push(setInterval(() => this.#sweep(), sweepIntervalMs));
    this.#replenish();
  }

  /** Counts of workers by state. */
  stats(): PoolStats {
    return {
      warm: this.#count("warm"),
      leased: this.#count("leased"),
      resetting: this.#count("resetting"),
      creating: this.#count("creating"),
      total: this.#entries.size,
      min: this.#options.pool.minPoolSize,
      max: this.#options.pool.maxPoolSize,
      draining: this.#draining,
      startFailing: this.#startFailing,
    };
  }

  /** Health of the pool (SPEC §3.4), as {@linkcode poolStatus} tells it from `s`. */
  status(s: PoolStats = this.stats()): PoolStatus {
    return poolStatus(s);
  }

  /** True when the pool is Healthy: ready to serve (see {@linkcode WorkerPool.status}). */
  ready(): boolean {
    return this.status() === "Healthy";
  }

  /**
   * Leases a warm worker, growing the pool when all are busy. Rejects with `EXHAUSTED` when none is
   * free within `AcquisitionTimeout`, with `DRAINING` during shutdown, and on `signal` abort.
   */
  lease(options: LeaseOptions = {}): Promise<Lease> {
    const { signal, tenant = SHARED_TENANT } = options;
    // A call that comes while the first workers start waits for them, not for AcquisitionTimeout.
    if (this.#warming) return this.started.then(() => this.lease(options));
    if (this.#draining) {
      poolTelemetry.acquisitions.add(1, { outcome: "draining" });
      return Promise.reject(
        new PoolError("DRAINING", SHUTTING_DOWN),
      );
    }
    const started = performance.now();
    const waited = (outcome: string) => {
      poolTelemetry.acquisitions.add(1, { outcome });
      poolTelemetry.acquisitionWait.record(performance.now() - started);
    };
    // Behind callers already waiting, never ahead of them.
    const entry = this.#waiters.length === 0 ? this.#takeWarm(tenant, new Set()) : null;
    if (entry) {
      this.#assign(entry, tenant);
      waited("ok");
      return Promise.resolve(this.#leaseOf(entry));
    }
    const { acquisitionTimeoutMs } = this.#options.pool;
    const waiting = waitInLine(this.#waiters, {
      tenant,
      signal,
      timeoutMs: acquisitionTimeoutMs,
      timedOut: () => exhausted(this.stats(), acquisitionTimeoutMs),
      settled: (error) => waited(acquisitionOutcome(error)),
    });
    this.#dispatch();
    return waiting.then((entry) => this.#leaseOf(entry));
  }

  /**
   * Makes later calls run on workers started from now on, with the code as it is on disk now
   * (`ReloadOnChange`): every process retires (a binary module cannot be unloaded from one), idle
   * workers close now, busy ones when their call ends, and new processes replace them.
   */
  renew(): void {
    if (this.#draining) return;
    for (const process of liveProcesses(this.#entries)) process.retire();
    for (const entry of [...this.#warm]) void this.#evict(entry, "renewed");
    this.#replenish();
  }

  /**
   * Stops accepting calls, lets leased workers finish until `options.deadline` (by default
   * `ShutdownDrainTimeout` from now) or `options.force`, then closes every worker: idle ones
   * politely within what is left of the time, the rest at once, their calls failing with "svc is
   * shutting down". Returns by the deadline, bar killing and reaping the processes.
   */
  async drain(options: DrainOptions = {}): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    const { shutdownDrainTimeoutMs } = this.#options.pool;
    const { deadline = Date.now() + shutdownDrainTimeoutMs, force } = options;
    this.#unobserve();
    for (const timer of this.#timers) clearInterval(timer);
    this.#holdBack.clear();
    for (const waiter of this.#waiters.splice(0)) {
      waiter.reject(new PoolError("DRAINING", SHUTTING_DOWN));
    }
    log.info("Pool draining: stopping new acquisitions.");
    const busy = () => this.#count("leased") + this.#count("resetting") > 0;
    await pollWhile(() => busy() && force?.aborted !== true, deadline);
    const remaining = this.#count("leased");
    const cutOff = cutOffReason(shutdownDrainTimeoutMs, force?.aborted === true);
    if (remaining > 0) {
      log.warning("Drain ended; force-closing {Count} busy worker(s).", { Count: remaining });
    }
    // A worker still starting has nothing to close yet: #create closes it once it has started. Evicting
    // its entry here would make that a no-op and leave the worker running, its directory behind.
    const entries = [...this.#entries].filter((s) => s.state !== "creating");
    const closing = entries.map((s) =>
      s.state === "warm" ? this.#evict(s, "shutdown") : this.#evict(s, "drain_timeout", cutOff)
    );
    const workers = entries.flatMap((s) => s.worker ? [s.worker] : []);
    await closeByDeadline(closing, workers, { deadline, force, reason: cutOff });
    await pollWhile(() => this.#count("creating") > 0);
    await Promise.all(this.#closing);
    log.info("RunspacePool disposed.");
  }

  #count(state: WorkerState): number {
    let n = 0;
    for (const entry of this.#entries) if (entry.state === state) n++;
    return n;
  }

  /** Drains the pool (see {@linkcode WorkerPool.drain}). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.drain();
  }

  /**
   * The most recently used warm worker `tenant` may have, preferring a process that already serves
   * it (so free processes stay free for others), never one in `held`. Dead ones found are evicted.
   */
  #takeWarm(tenant: string, held: Set<WorkerProcess>): PoolEntry | null {
    let found: PoolEntry | null = null;
    let free: PoolEntry | null = null;
    const stale: PoolEntry[] = [];
    // Most recently used first, so idle workers at the bottom age out and are reclaimed.
    for (const entry of [...this.#warm].reverse()) {
      if (entry.state !== "warm" || !entry.worker?.alive) {
        this.#unwarm(entry);
        if (entry.state === "warm") void this.#evict(entry, "died");
        continue;
      }
      const process = entry.worker.process;
      if (held.has(process) || !this.#tenancy.mayServe(process, tenant)) continue;
      // Another tenant's call ran beside it since its reset: reset it again before anyone has it.
      if (!this.#tenancy.cleanFor(entry.worker, tenant)) stale.push(entry);
      else if (this.#tenancy.tenantOf(process) === tenant) {
        found = entry;
        break;
      } else free ??= entry;
    }
    for (const entry of stale) void this.#reset(this.#unwarm(entry));
    const taken = found ?? free;
    return taken && this.#unwarm(taken);
  }

  #unwarm(entry: PoolEntry): PoolEntry {
    this.#warm.splice(this.#warm.indexOf(entry), 1);
    return entry;
  }

  #assign(entry: PoolEntry, tenant: string): void {
    entry.state = "leased";
    entry.tenant = tenant;
    const process = entry.worker!.process;
    const others = [...this.#entries].filter((e) => e !== entry && e.worker?.process === process);
    this.#tenancy.begin(process, tenant, others.map((e) => e.worker!));
  }

  /** The entry's call is over (reset done, or the entry is gone); true when that freed its process. */
  #endCall(entry: PoolEntry): boolean {
    if (entry.tenant === null) return false;
    entry.tenant = null;
    return entry.worker !== null && this.#tenancy.end(entry.worker.process);
  }

  /**
   * Serves waiting callers in order with the warm workers they may have. A caller that gets none,
   * and for whom the pool cannot grow, holds the processes of other tenants: they take no further
   * calls until free, when that caller gets them.
   */
  #dispatch(): void {
    const held = new Set<WorkerProcess>();
    for (const waiter of [...this.#waiters]) {
      const entry = this.#takeWarm(waiter.tenant, held);
      if (entry) {
        this.#assign(entry, waiter.tenant);
        waiter.resolve(entry);
      } else if (!this.#canGrowFor(waiter.tenant)) {
        for (const other of this.#entries) {
          const process = other.worker?.process;
          if (process && !this.#tenancy.mayServe(process, waiter.tenant)) held.add(process);
        }
      }
    }
    if (this.#waiters.length > 0) this.#grow();
  }

  #leaseOf(entry: PoolEntry): Lease {
    let released = false;
    return {
      worker: entry.worker!,
      startup: entry.startup!,
      release: () => {
        if (released) return;
        released = true;
        void this.#reset(entry);
      },
    };
  }

  /**
   * Adds workers while a tenant has more callers waiting than workers on their way to it (starting
   * for it or for anyone, or resetting in a process that serves it), the pool is below its maximum,
   * and fewer than `growthConcurrency` are starting. At the maximum, an idle worker in a process
   * serving another tenant is closed to make room. Called again whenever a start ends, so a burst
   * grows the pool one paced step at a time.
   */
  #grow(): void {
    const limit = this.#options.growthConcurrency ??
      Math.max(1, Math.floor(navigator.hardwareConcurrency / 2));
    const waiting = new Map<string, number>();
    for (const waiter of this.#waiters) {
      waiting.set(waiter.tenant, (waiting.get(waiter.tenant) ?? 0) + 1);
    }
    for (const [tenant, count] of waiting) {
      if (this.#holdBack.holds(tenant, () => this.#needsProcess(tenant))) continue;
      let coming = 0;
      for (const entry of this.#entries) {
        if (entry.state === "creating" && (entry.createdFor ?? tenant) === tenant) coming++;
        if (entry.state === "resetting" && (entry.tenant ?? tenant) === tenant) coming++;
      }
      while (count > coming && this.stats().creating < limit && this.#canGrowFor(tenant)) {
        if (this.#entries.size >= this.#options.pool.maxPoolSize && !this.#makeRoomFor(tenant)) {
          break;
        }
        void this.#create(tenant);
        coming++;
      }
    }
  }

  /** True when a worker for `tenant` could only open in a new process, other tenants holding the rest. */
  #needsProcess(tenant: string): boolean {
    return this.#options.pool.hostMode !== "Single" &&
      this.#tenancy.workerWithRoom(this.#entries, tenant) === null &&
      liveProcesses(this.#entries).some((process) => !this.#tenancy.mayServe(process, tenant));
  }

  /** True when a worker `tenant` may have can still be created (see {@linkcode WorkerPool.#grow}). */
  #canGrowFor(tenant: string): boolean {
    const { maxPoolSize, hostMode } = this.#options.pool;
    if (hostMode === "Single") {
      // One process: the pool grows only inside it, and only while it is free or serves `tenant`.
      if (this.#entries.size >= maxPoolSize) return false;
      const alive = [...this.#entries].filter((s) => s.worker?.alive);
      return alive.every((s) => this.#tenancy.mayServe(s.worker!.process, tenant));
    }
    return this.#entries.size < maxPoolSize || this.#idleElsewhere(tenant) !== null;
  }

  /** The longest-idle warm worker in a process that serves a tenant other than `tenant`. */
  #idleElsewhere(tenant: string): PoolEntry | null {
    return this.#warm.find((entry) =>
      entry.state === "warm" && entry.worker !== null &&
      !this.#tenancy.mayServe(entry.worker.process, tenant)
    ) ?? null;
  }

  /** Closes an idle worker no call of `tenant` could use, so the pool can create one it can. */
  #makeRoomFor(tenant: string): boolean {
    const idle = this.#idleElsewhere(tenant);
    if (idle) void this.#evict(idle, "rebalanced");
    return idle !== null;
  }

  async #create(createdFor: string | null = null): Promise<void> {
    if (this.#draining || this.#entries.size >= this.#options.pool.maxPoolSize) return;
    const entry: PoolEntry = {
      id: ++this.#nextId,
      createdAt: this.#clock.next(),
      state: "creating",
      worker: null,
      startup: null,
      lastActive: Date.now(),
      tenant: null,
      createdFor,
    };
    this.#entries.add(entry);
    const { pwsh, shell, pool } = this.#options;
    const label = `worker ${entry.id}`;
    try {
      const ready = await startWorker({
        pwsh,
        shell,
        stopTimeoutMs: pool.stopTimeoutMs,
        runspacesPerProcess: pool.runspacesPerProcess,
        maxWorkerMemoryMB: pool.maxWorkerMemoryMB || null,
        label,
        place: (spawn) => this.#place(entry, label, spawn),
        onSpawn: () => this.#markSpawned(),
      });
      entry.worker = ready.worker;
      entry.startup = ready.startup;
      this.#startFailing = false;
    } catch (error) {
      this.#startFailing = true;
      log.warning("Worker startup failed; evicting without entering pool.", {
        RunspaceWorker: entry.id,
        Error: error instanceof WorkerStartError ? error.reason : String(error),
      });
      await this.#evict(entry, "startup_failed");
      return;
    }
    if (this.#draining) {
      await this.#evict(entry, "shutdown");
      return;
    }
    if (entry.worker.process.retiring) {
      // Started in a process renew() retired meanwhile: it may hold the code as it was.
      await this.#evict(entry, "renewed");
      this.#replenish();
      return;
    }
    entry.worker.exited.then(async () => {
      if (entry.state !== "warm") return;
      await this.#evict(entry, "died");
      // Replace it now rather than at the next replenish tick (up to ReplenishCheckInterval away).
      this.#replenish();
    });
    this.#makeWarm(entry);
    log.debug("Worker {CreatedAt} initialized and enqueued. Total={Total}.", {
      CreatedAt: entry.createdAt,
      Total: this.#entries.size,
    });
    this.#grow();
  }

  /**
   * Places a new worker in a process with room, else in a new process started by `spawn` (whose room
   * the next creations use). Sets `entry.worker` as soon as it exists, so others find its process.
   */
  async #place(
    entry: PoolEntry,
    label: string,
    spawn: () => Promise<RunspaceWorker>,
  ): Promise<RunspaceWorker> {
    const { pool } = this.#options;
    while (true) {
      const host = this.#tenancy.workerWithRoom(this.#entries, entry.createdFor);
      if (host) return entry.worker = await host.openSibling(label);
      const spawning = this.#spawning;
      if (pool.hostMode === "Single" && liveProcesses(this.#entries).length > 0) {
        // Single mode: the one process has room for every worker but may serve another tenant now;
        // the worker opens there and waits for it to be free.
        const any = this.#tenancy.workerWithRoom(this.#entries, null);
        if (any) return entry.worker = await any.openSibling(label);
      }
      if (!spawning || pool.runspacesPerProcess === 1) break;
      // #spawning is cleared as soon as the spawn ends, before this resumes: no spin on a settled one.
      await spawning.catch(() => {});
    }
    const start = spawn();
    this.#spawning = start;
    try {
      // Set before the creations waiting on this spawn resume, so they find this process.
      entry.worker = await start;
    } finally {
      if (this.#spawning === start) this.#spawning = null;
    }
    // Let the creations waiting on this spawn send their `open` before this worker's startup: the
    // process reads frames in order, and startup blocks its loop for a few hundred ms.
    await new Promise((resolve) => setTimeout(resolve, 0));
    return entry.worker;
  }

  #makeWarm(entry: PoolEntry): void {
    entry.lastActive = Date.now();
    entry.state = "warm";
    this.#warm.push(entry);
    this.#dispatch();
  }

  async #reset(entry: PoolEntry): Promise<void> {
    entry.state = "resetting";
    const worker = entry.worker!;
    this.#tenancy.resetStarts(worker, worker.process, entry.tenant !== null);
    if (!worker.alive || this.#draining) {
      // A retiring process ends when its last worker is closed: idle siblings would keep it (and
      // the stuck call's native children) alive until their next lease, so they go now.
      if (worker.process.retiring) {
        for (const other of [...this.#warm]) {
          if (other.worker?.process === worker.process) void this.#evict(other, "retired");
        }
      }
      await this.#evict(entry, worker.alive ? "shutdown" : "died");
      if (!this.#draining) this.#replenish();
      return;
    }
    try {
      await worker.reset();
    } catch (error) {
      log.warning("Worker {CreatedAt} reset failed; evicting it: {Error}", {
        CreatedAt: entry.createdAt,
        Error: error instanceof Error ? error.message : String(error),
      });
      poolTelemetry.resets.add(1, { outcome: "failed" });
      await this.#evict(entry, "reset_failure");
      this.#replenish();
      // A caller may be waiting for exactly this worker.
      if (this.#waiters.length > 0) this.#grow();
      return;
    }
    poolTelemetry.resets.add(1, { outcome: "ok" });
    if (this.#draining) {
      await this.#evict(entry, "shutdown");
      return;
    }
    // Warm before the call ends, so a process freed by it offers this worker to any tenant too.
    entry.state = "warm";
    this.#warm.push(entry);
    entry.lastActive = Date.now();
    this.#endCall(entry);
    this.#dispatch();
  }

  async #evict(entry: PoolEntry, reason: string, cutOff?: string): Promise<void> {
    if (entry.state === "evicted") return;
    const from = entry.state;
    entry.state = "evicted";
    poolTelemetry.evictions.add(1, { reason });
    const i = this.#warm.indexOf(entry);
    if (i >= 0) this.#warm.splice(i, 1);
    this.#entries.delete(entry);
    if (this.#endCall(entry)) this.#dispatch();
    if (entry.worker) {
      // An idle worker closes alone; kill() retires a shared process, ending its siblings' workers
      // too, which is right for a broken worker but would make room for one tenant at another's cost.
      const closing = reason === "shutdown" || reason === "idle" || reason === "rebalanced" ||
          reason === "renewed"
        ? entry.worker.close()
        : entry.worker.kill(cutOff);
      this.#closing.add(closing);
      try {
        await closing;
      } finally {
        this.#closing.delete(closing);
      }
    }
    log.debug("Worker {CreatedAt} evicted from {From} (reason={Reason}). Total={Total}.", {
      CreatedAt: entry.createdAt,
      From: from,
      Reason: reason,
      Total: this.#entries.size,
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
    for (const entry of [...this.#warm]) {
      if (this.#entries.size <= minPoolSize) break;
      if (entry.state === "warm" && now - entry.lastActive > idleTtlMs) {
        log.debug("Idle sweep evicted worker {CreatedAt} (idle since {LastActive}).", {
          CreatedAt: entry.createdAt,
          LastActive: new Date(entry.lastActive).toISOString(),
        });
        void this.#evict(entry, "idle");
      }
    }
  }
}
