/**
 * Latency statistics of the benchmark harness: N, mean, median, p95, p99 (nearest-rank on the sorted
 * samples), min and max, plus throughput helpers. All times are milliseconds.
 *
 * @module
 */

/** Summary of a set of latency samples, in milliseconds. */
export interface Summary {
  /** Number of samples. */
  n: number;
  /** Arithmetic mean. */
  mean: number;
  /** Median (p50). */
  median: number;
  /** 95th percentile (nearest rank). */
  p95: number;
  /** 99th percentile (nearest rank). */
  p99: number;
  /** Smallest sample. */
  min: number;
  /** Largest sample. */
  max: number;
}

/** The `p`-th percentile (0–100) of already sorted samples, nearest-rank; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** Median, p95, p99, mean, min, max and N of the samples. */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  const mean = n === 0 ? Number.NaN : sorted.reduce((sum, x) => sum + x, 0) / n;
  const median = n === 0
    ? Number.NaN
    : n % 2 === 1
    ? sorted[(n - 1) / 2]!
    : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  return {
    n,
    mean,
    median,
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    min: n === 0 ? Number.NaN : sorted[0]!,
    max: n === 0 ? Number.NaN : sorted[n - 1]!,
  };
}

/** Calls per second: `count` completed in `elapsedMs`. */
export function throughput(count: number, elapsedMs: number): number {
  return elapsedMs <= 0 ? 0 : (count * 1000) / elapsedMs;
}

/** Slope of the least-squares line through (x, y) points; NaN with fewer than two points. */
export function slope(points: readonly (readonly [number, number])[]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
}

/** Formats milliseconds for tables: 3 significant digits below 10, else 1 decimal. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return "–";
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

/** Formats a byte count as MB with one decimal. */
export function mb(bytes: number): string {
  return Number.isFinite(bytes) ? (bytes / (1024 * 1024)).toFixed(1) : "–";
}

/** Times one async action in milliseconds. */
export async function timed<T>(action: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await action();
  return [value, performance.now() - started];
}
