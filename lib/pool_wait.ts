/**
 * Waiting for a worker: a caller's place in the line, ended by a worker, an error, its time limit or
 * its abort signal, whichever comes first; and the short hold on a new process for a tenant whose
 * callers can wait for a busy one instead. The pool decides who is served and when it grows.
 *
 * @module
 */

/** A caller in the line. */
export interface Waiter<T> {
  /** The tenant the caller belongs to (`lib/pool_tenancy.ts`). */
  tenant: string;
  /** Serves the caller with `entry` and takes it out of the line. */
  resolve: (entry: T) => void;
  /** Fails the caller with `error` and takes it out of the line. */
  reject: (error: Error) => void;
}

/** Options of {@linkcode waitInLine}. */
export interface WaitOptions {
  /** The caller's tenant. */
  tenant: string;
  /** Ends the wait with an error saying the call was cancelled. @default none */
  signal?: AbortSignal | undefined;
  /** How long to wait before {@linkcode WaitOptions.timedOut}'s error, in ms. */
  timeoutMs: number;
  /** The error of a wait that ran out of time. */
  timedOut: () => Error;
  /** Told once how the wait ended: null when served, else the error. */
  settled: (error: Error | null) => void;
}

/** Puts a caller at the end of `line` and resolves when the pool serves it. */
export function waitInLine<T>(line: Waiter<T>[], options: WaitOptions): Promise<T> {
  const { tenant, signal, timeoutMs, timedOut, settled } = options;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => fail(new Error("The call was cancelled while waiting for a worker"));
    const waiter: Waiter<T> = {
      tenant,
      resolve: (entry) => {
        leave();
        settled(null);
        resolve(entry);
      },
      reject: (error) => fail(error),
    };
    const timer = setTimeout(() => fail(timedOut()), timeoutMs);
    const leave = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      const i = line.indexOf(waiter);
      if (i >= 0) line.splice(i, 1);
    };
    const fail = (error: Error) => {
      leave();
      settled(error);
      reject(error);
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    line.push(waiter);
  });
}

/**
 * How long a tenant's callers wait for processes busy with other tenants before a process is
 * spawned for them, in ms. Calls are short, so such a process is often free within milliseconds:
 * spawning at once for every wait gave 5, 7 and 10 processes of about 170 MB for 2, 4 and 8
 * principals calling at once, where holding back gave 3, 3 and 4 (bench P7). A spawn takes seconds;
 * this adds at most a quarter of one to the call that needed it.
 */
export const GROWTH_HOLD_BACK_MS = 250;

/** Options of {@linkcode GrowthHoldBack}. */
export interface GrowthHoldBackOptions {
  /** Run when a hold ends: the pool looks again at whom it must grow for. */
  recheck: () => void;
  /** True while `tenant` has callers waiting. */
  waiting: (tenant: string) => boolean;
}

/** The tenants whose growth into a new process is held back, each once for {@linkcode GROWTH_HOLD_BACK_MS}. */
export class GrowthHoldBack {
  readonly #options: GrowthHoldBackOptions;
  readonly #held = new Map<string, { timer: ReturnType<typeof setTimeout>; over: boolean }>();

  /** Builds the hold-back; nothing is held until {@linkcode GrowthHoldBack.holds} says so. */
  constructor(options: GrowthHoldBackOptions) {
    this.#options = options;
  }

  /**
   * True while growth for `tenant` waits: it starts a hold when `needsProcess()` says growing would
   * spawn a process, and after the hold the next growth goes ahead.
   */
  holds(tenant: string, needsProcess: () => boolean): boolean {
    const held = this.#held.get(tenant);
    if (held) {
      if (!held.over) return true;
      this.#held.delete(tenant);
      return false;
    }
    if (!needsProcess()) return false;
    const hold = {
      over: false,
      timer: setTimeout(() => {
        hold.over = true;
        if (!this.#options.waiting(tenant)) this.#held.delete(tenant);
        this.#options.recheck();
      }, GROWTH_HOLD_BACK_MS),
    };
    this.#held.set(tenant, hold);
    return true;
  }

  /** Ends every hold without rechecking (the pool is draining). */
  clear(): void {
    for (const { timer } of this.#held.values()) clearTimeout(timer);
    this.#held.clear();
  }
}

/** Resolves once `busy()` is false or `deadline` (ms since the epoch) has passed, looking every 25 ms. */
export async function pollWhile(busy: () => boolean, deadline = Infinity): Promise<void> {
  while (busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
}
