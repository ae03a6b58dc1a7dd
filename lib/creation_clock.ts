/**
 * Creation times that name pooled workers in log lines.
 *
 * @module
 */

/**
 * Hands out creation times as .NET's round-trip format writes them (7 fraction digits), each later
 * than the one before: two workers created in the same millisecond must not share a name.
 */
export class CreationClock {
  #lastTicks = 0n;

  /** The current time, or 100 ns after the previous one when the clock has not moved on. */
  next(): string {
    const now = performance.timeOrigin + performance.now();
    const ms = Math.floor(now);
    // 100 ns ticks overflow a double's integers, hence bigint.
    let ticks = BigInt(ms) * 10_000n + BigInt(Math.floor((now - ms) * 10_000));
    if (ticks <= this.#lastTicks) ticks = this.#lastTicks + 1n;
    this.#lastTicks = ticks;
    const seconds = new Date(Number(ticks / 10_000n)).toISOString().slice(0, 19);
    return `${seconds}.${String(ticks % 10_000_000n).padStart(7, "0")}Z`;
  }
}
