/**
 * The line of callers waiting for a worker: one caller's place in it, ended by a worker, an error,
 * its time limit or its abort signal, whichever comes first. The pool decides who is served.
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
