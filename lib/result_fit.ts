/**
 * Fits pipeline output into `ShellConfiguration:MaxResultBytes` without breaking it: whole items are
 * kept from the start, and when not even the first fits, its long strings keep their head and tail
 * with a marker between, so what remains is still valid JSON a model can read. Output the worker
 * already cut (docs/worker-protocol.md §4.4, `outputCut`) is fitted the same way, its notice saying
 * that the whole size is a lower bound.
 *
 * @module
 */
import type { OutputCut } from "./worker_protocol.ts";

/** What {@linkcode fitOutput} cut. */
export interface Truncation {
  /** Size of the whole output as JSON, in bytes (a lower bound when `atLeast` is set). */
  bytes: number;
  /**
   * Present (true) when the worker stopped encoding the output past what svc keeps: `bytes` is then
   * what the output was known to take at least.
   */
  atLeast?: true;
  /** The cap, `MaxResultBytes`. */
  limit: number;
  /** Items in the whole output (those written until the stop when `stopped` is set). */
  items: number;
  /** Items kept whole from the start. */
  keptItems: number;
  /** True when the first item did not fit and was shortened rather than dropped. */
  shortenedFirst: boolean;
  /**
   * Present (true) when the worker stopped the command once no more output could be kept: `items`
   * and `bytes` count what it wrote until then.
   */
  stopped?: true;
}

/** Output as JSON text and as items, both within the cap. */
export interface FittedOutput {
  /** The kept items' JSON, then the notice on a line of its own when something was cut. */
  text: string;
  /** The kept items' JSON. */
  json: string;
  kept: unknown[];
  truncated: Truncation | null;
  /** The sentence saying what was cut and how to ask for less; null when nothing was. */
  notice: string | null;
}

const encoder = new TextEncoder();
/** Room left for the notice that follows the JSON in the text block. */
const NOTICE_ROOM = 400;
/** Strings are never cut below this many characters, head and tail together. */
const SHORTEST_CUT = 64;

function byteLength(text: string): number {
  return encoder.encode(text).length;
}

function itemBudget(maxBytes: number): number {
  return Math.max(maxBytes - NOTICE_ROOM, SHORTEST_CUT * 2);
}

/**
 * Bytes the worker shortens a lone oversized first item to (`limits.firstItemBytes`): what
 * {@linkcode fitOutput} shortens it to, less 64 bytes for the ways the worker's JSON of the same item
 * differs from svc's, so svc keeps it as the worker cut it and the marker's count stays exact.
 */
export function firstItemBudget(maxBytes: number): number {
  return itemBudget(maxBytes) - 2 - 64;
}

/**
 * Serializes output; over `maxBytes`, keeps what fits and says what was dropped. `cut` is what the
 * worker left out (protocol §4.4): `output` is then only the start of the output, and `cut` gives the
 * number of items and a lower bound of the whole output's size.
 */
export function fitOutput(
  output: unknown[],
  maxBytes: number,
  cut: OutputCut | null = null,
): FittedOutput {
  const text = JSON.stringify(output);
  const bytes = byteLength(text);
  if (bytes <= maxBytes && cut === null) {
    return { text, json: text, kept: output, truncated: null, notice: null };
  }
  const budget = itemBudget(maxBytes);
  let used = 2;
  const kept: unknown[] = [];
  for (const item of output) {
    const size = byteLength(JSON.stringify(item) ?? "null") + 1;
    if (used + size > budget) break;
    used += size;
    kept.push(item);
  }
  const svcShortened = kept.length === 0 && output.length > 0;
  if (svcShortened) kept.push(shorten(output[0], budget - 2));
  // The worker shortens a lone first item to less than svc would, so svc keeps it as it came.
  const shortenedFirst = svcShortened || (cut !== null && cut.shortenedFirst && kept.length === 1);
  const items = cut === null ? output.length : cut.items;
  const total = cut === null ? bytes : Math.max(cut.bytes, bytes);
  const dropped = items - kept.length;
  const what = shortenedFirst
    ? `the first item was shortened to fit${
      dropped > 0 ? ` and ${dropped} item(s) after it were dropped` : ""
    }`
    : cut?.stopped
    ? `the first ${kept.length} item(s) are kept whole, and the command was stopped after ${items}, as no more could be kept`
    : `the first ${kept.length} of ${items} item(s) are kept whole, ${dropped} dropped`;
  const size = cut === null ? `${total} bytes` : `at least ${total} bytes`;
  const notice =
    `[svc: output truncated: ${size} exceed ShellConfiguration:MaxResultBytes (${maxBytes}); ${what}. Ask for less with _MaxResults or _RequestedProperties.]`;
  const json = JSON.stringify(kept);
  return {
    text: `${json}\n${notice}`,
    json,
    notice,
    kept,
    truncated: {
      bytes: total,
      ...(cut === null ? {} : { atLeast: true as const }),
      ...(cut?.stopped ? { stopped: true as const } : {}),
      limit: maxBytes,
      items,
      keptItems: kept.length,
      shortenedFirst,
    },
  };
}

/**
 * Shortens one value to about `budget` bytes of JSON: a string keeps its head and tail; in an
 * object or array every string longer than a limit is cut, the limit halving until the value fits.
 * A value that still does not fit becomes its JSON text, cut the same way.
 */
export function shorten(value: unknown, budget: number): unknown {
  if (typeof value === "string") return cutMiddle(value, budget);
  for (
    let limit = Math.max(SHORTEST_CUT, Math.floor(budget / 2));
    limit >= SHORTEST_CUT;
    limit >>= 1
  ) {
    const cut = cutStrings(value, limit);
    if (byteLength(JSON.stringify(cut) ?? "null") <= budget) return cut;
  }
  return cutMiddle(JSON.stringify(value) ?? "null", budget);
}

function cutStrings(value: unknown, limit: number): unknown {
  if (typeof value === "string") return value.length > limit ? cutMiddle(value, limit) : value;
  if (Array.isArray(value)) return value.map((item) => cutStrings(item, limit));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = cutStrings(item, limit);
    return out;
  }
  return value;
}

/** Head and tail of `text` within about `budget` bytes of JSON, with a marker saying how much went. */
function cutMiddle(text: string, budget: number): string {
  const bytes = byteLength(JSON.stringify(text));
  if (bytes <= budget) return text;
  // JSON escapes and multi-byte characters make bytes outnumber characters; scale down to fit.
  // The estimate can miss where head and tail escape more than the average; shrink until it fits.
  const ratio = bytes / text.length;
  let keep = Math.max(SHORTEST_CUT, Math.floor((budget - 60) / ratio));
  for (;;) {
    const head = Math.ceil(keep / 2);
    const cut = `${safeSlice(text, 0, head)}\n…[svc: ${text.length - keep} characters cut]…\n${
      safeSlice(text, text.length - (keep - head), text.length)
    }`;
    const over = byteLength(JSON.stringify(cut)) - budget;
    if (over <= 0 || keep <= SHORTEST_CUT) return cut;
    keep = Math.max(SHORTEST_CUT, keep - Math.ceil(over / ratio) - 8);
  }
}

/** Slices without splitting a surrogate pair. */
function safeSlice(text: string, start: number, end: number): string {
  const isLow = (i: number) => i > 0 && i < text.length && /[\uDC00-\uDFFF]/.test(text[i]!);
  while (isLow(start)) start++;
  while (isLow(end)) end--;
  return text.slice(start, end);
}
