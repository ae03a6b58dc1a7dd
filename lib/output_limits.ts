/**
 * What one call may send svc, all derived from `ShellConfiguration:MaxResultBytes`: the `limits` of an
 * invoke (docs/worker-protocol.md §4.4), within which the worker counts instead of sending, and the
 * largest frame svc reads from a worker, past which it stops reading and retires the worker. svc so
 * never holds much more of a call's output, or of its error and other streams, than it can keep.
 *
 * @module
 */
import { firstItemBudget } from "./result_fit.ts";
import type { CallLimits } from "./worker_protocol.ts";

const MIB = 1024 * 1024;

/**
 * Largest frame of a request that is not a call (`startup`, `commands`, `describe`): their size is
 * set by the configured modules (the help of thousands of commands), not by a caller.
 */
export const DISCOVERY_FRAME_BYTES = 256 * MIB;

/**
 * The `limits` of every invoke under `maxResultBytes`:
 * - `outputBytes` = 1.25 × it: output up to the cap is sent whole, so svc fits it exactly as it did
 *   before the worker bounded it; the quarter covers what svc's own encoding of the same items saves
 *   (ConvertTo-Json writes `1.0` where JSON.stringify writes `1`);
 * - `firstItemBytes`: what svc shortens a lone oversized first item to (so it does not cut it again);
 * - `streamBytes` = the cap: errors, warnings, information, verbose and debug records together;
 * - `textBytes` = 1/64 of the cap, at least 256: each string of a stream or progress record.
 */
export function callLimits(maxResultBytes: number): CallLimits {
  return {
    outputBytes: maxResultBytes + Math.floor(maxResultBytes / 4),
    firstItemBytes: firstItemBudget(maxResultBytes),
    streamBytes: maxResultBytes,
    textBytes: Math.max(256, Math.floor(maxResultBytes / 64)),
  };
}

/**
 * Largest frame svc reads while a call runs (or its reset, or between calls): 3 × `maxResultBytes` +
 * 2 MiB. A response within {@linkcode callLimits} holds at most 1.25 × the cap of output, the cap of
 * stream records, a terminating error of eight strings of 1/64 of the cap each (1/8), and a shape
 * report of at most 16 types of 2 × 256 names of 128 bytes (about 1.1 MiB): under 2.4 × the cap +
 * 1.2 MiB. Only a worker whose connection a call wrote into directly sends more.
 */
export function callFrameBytes(maxResultBytes: number): number {
  return 3 * maxResultBytes + 2 * MIB;
}
