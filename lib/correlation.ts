/**
 * Correlation ids of HTTP requests: a caller's own `X-Correlation-ID` when it is printable ASCII of
 * at most 128 characters, else one svc makes.
 *
 * @module
 */

const CORRELATION_ID = /^[\x21-\x7e]{1,128}$/;

/** The caller's correlation id when usable (`given`), else a new one. */
export function correlationIdFor(given: string | null): string {
  return given && CORRELATION_ID.test(given) ? given : newCorrelationId();
}

const CORRELATION_PREFIX = Array.from(
  crypto.getRandomValues(new Uint8Array(2)),
  (b) => b.toString(16).padStart(2, "0"),
)
  .join("");
let correlationCounter = 0;
let correlationStamp = { second: -1, text: "" };

/** `yyyyMMdd-HHmmss-<8 hex>`: a per-process random prefix and a counter, cheap enough for every request. */
function newCorrelationId(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== correlationStamp.second) {
    const text = new Date(now).toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
    correlationStamp = { second, text };
  }
  correlationCounter = (correlationCounter + 1) & 0xffff;
  return `${correlationStamp.text}-${CORRELATION_PREFIX}${
    correlationCounter.toString(16).padStart(4, "0")
  }`;
}
