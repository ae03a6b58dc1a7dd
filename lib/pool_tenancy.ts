/**
 * Which tenant each worker process serves. A tenant is who a call runs for, `ownerOf(principal)` of
 * `lib/auth.ts` (scheme, issuer and subject, or the API key's id; `anonymous` without
 * authentication). Runspaces of one process are not a boundary between callers: a call can read a
 * neighbour's `$env:` changes, reach its runspace with `Get-Runspace` and reflection, or end the
 * process with `[Environment]::Exit`. So a process serves one tenant at a time: while any of its
 * workers runs (or is being reset after) a call of tenant T, its other workers go only to T's calls;
 * when the last of those calls has ended and its worker has been reset, the process is free for
 * anyone. Without authentication every call is the one tenant `anonymous`, and processes are shared
 * as before.
 *
 * @module
 */
import { ownerOf } from "./auth.ts";
import { ANONYMOUS } from "./auth.ts";
import type { WorkerProcess } from "./worker_process.ts";
import type { RunspaceWorker } from "./worker.ts";

/** A worker of the pool as placement reads it: its state and, once it exists, the worker. */
export interface PlacedWorker {
  state: string;
  worker: RunspaceWorker | null;
}

/** Live processes of `entries` that are not retiring. */
export function liveProcesses(entries: Iterable<PlacedWorker>): WorkerProcess[] {
  const all = new Set<WorkerProcess>();
  for (const entry of entries) if (entry.worker?.alive) all.add(entry.worker.process);
  return [...all];
}

/** The tenant of calls that name none: unauthenticated callers and svc's own discovery. */
export const SHARED_TENANT: string = ownerOf(ANONYMOUS)!;

let unnamed = 0;

/**
 * The tenant of a caller: `ownerOf(principal)`, or, for a token that names no subject (so no two
 * of its calls can be told to be the same caller's), a tenant of its own for this one call, as the
 * rule of `ownerOf` says.
 */
export function tenantOf(principal: Parameters<typeof ownerOf>[0]): string {
  return ownerOf(principal) ?? `unnamed-caller-${++unnamed}`;
}

/**
 * The tenant each busy process serves and how many of its workers are busy for it, and which tenants'
 * calls ran beside each worker since its last reset began. A call can reach an idle sibling runspace
 * of its process (`Get-Runspace`, then `[powershell]::Create()` on it) and plant state there that only
 * that sibling's next reset removes: before, another tenant's next call on the sibling met it. So a
 * worker is given to a tenant only when no other tenant's call ran beside it since; else it is reset
 * again first.
 */
export class Tenancy {
  readonly #served = new Map<WorkerProcess, { tenant: string; calls: number }>();

  /**
   * A live worker of `entries` whose process can take one more and may serve `tenant` (any, when
   * null), preferring a warm one (its loop is idle).
   */
  workerWithRoom(entries: Iterable<PlacedWorker>, tenant: string | null): RunspaceWorker | null {
    let found: RunspaceWorker | null = null;
    for (const entry of entries) {
      const worker = entry.worker;
      if (!worker?.alive || !worker.process.hasRoom) continue;
      if (tenant !== null && !this.mayServe(worker.process, tenant)) continue;
      if (entry.state === "warm") return worker;
      found ??= worker;
    }
    return found;
  }
  readonly #beside = new WeakMap<object, Set<string>>();

  /** The tenant `process` serves, or null when none of its workers is busy. */
  tenantOf(process: WorkerProcess): string | null {
    return this.#served.get(process)?.tenant ?? null;
  }

  /** True when a worker of `process` may run a call of `tenant`: the process is free or serves it. */
  mayServe(process: WorkerProcess, tenant: string): boolean {
    const served = this.#served.get(process);
    return served === undefined || served.tenant === tenant;
  }

  /**
   * A worker of `process` starts a call of `tenant` (which {@linkcode Tenancy.mayServe} allowed),
   * beside `others`, the other workers of the process. @default others: none
   */
  begin(process: WorkerProcess, tenant: string, others: Iterable<object> = []): void {
    for (const worker of others) {
      const tenants = this.#beside.get(worker) ?? new Set<string>();
      this.#beside.set(worker, tenants.add(tenant));
    }
    const served = this.#served.get(process);
    if (served === undefined) this.#served.set(process, { tenant, calls: 1 });
    else if (served.tenant === tenant) served.calls++;
    else throw new Error(`A worker process serving one tenant was given another tenant's call`);
  }

  /**
   * A reset of `worker` (after a call of its own when `ownCall`) starts in `process`: it removes what
   * earlier calls planted, but a call still running beside it may plant again.
   */
  resetStarts(worker: object, process: WorkerProcess, ownCall: boolean): void {
    const served = this.#served.get(process);
    if (served && served.calls > (ownCall ? 1 : 0)) {
      this.#beside.set(worker, new Set([served.tenant]));
    } else this.#beside.delete(worker);
  }

  /** True when no call of a tenant other than `tenant` ran beside `worker` since its last reset began. */
  cleanFor(worker: object, tenant: string): boolean {
    for (const other of this.#beside.get(worker) ?? []) if (other !== tenant) return false;
    return true;
  }

  /** A worker of `process` is back from its call (reset or gone); true when the process is now free. */
  end(process: WorkerProcess): boolean {
    const served = this.#served.get(process);
    if (served === undefined) return true;
    if (--served.calls > 0) return false;
    this.#served.delete(process);
    return true;
  }
}
