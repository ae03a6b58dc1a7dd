/**
 * What the scenarios of `bench/perf.ts` share: their counts (quick, or the with `--full`)
 * and the statistics columns of their tables.
 *
 * @module
 */
import type { Bench } from "./common.ts";
import { ms, type Summary } from "./stats.ts";

/** Iteration counts: quick by default, the with --full. */
export function counts(b: Bench): {
  p1: number;
  p2: number;
  p3: number;
  warmup: number;
  p4Seconds: number;
  p4Warmup: number;
  p6Warmup: number;
  p5: number;
  pwsh: number;
} {
  const { full, iterations, seconds } = b.options;
  return {
    p1: full ? 10 : 3,
    p2: iterations ?? (full ? 1000 : 300),
    p3: iterations ?? (full ? 1000 : 300),
    warmup: 50,
    p4Seconds: seconds ?? (full ? 30 : 4),
    p4Warmup: full ? 3 : 1,
    // A fresh server's pool grows during the first seconds of P6's loop; the peak comes after.
    p6Warmup: full ? 15 : 5,
    p5: full ? 100 : 20,
    pwsh: full ? 10 : 5,
  };
}

/** The statistics columns. */
export const STATS = ["N", "median", "p95", "p99", "mean"];

/** The statistics cells of a summary. */
export function statCells(s: Summary): (string | number)[] {
  return [s.n, ms(s.median), ms(s.p95), ms(s.p99), ms(s.mean)];
}

/**
 * The ceiling of `Start-Sleep -Milliseconds 50` calls/s at `c` clients: c × 1000 / 50, capped by a
 * pool of `poolMax` (16, both svc's and PoshMcp's default) workers: 320/s from c = 16 on.
 */
export function sleepCeiling(c: number, poolMax = 16): number {
  return Math.min(c, poolMax) * (1000 / 50);
}
