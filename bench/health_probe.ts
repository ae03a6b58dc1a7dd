/**
 * Out-of-process health prober for the benchmarks: GETs a URL every `everyMs` and writes one JSON
 * line per sample to stdout (`{"at": <epoch ms>, "ms": <latency>, "status": <code>, "pool": {...}}`),
 * until its stdin closes or `maxMs` pass. Running apart from the load generator keeps the load
 * generator's own event-loop delays out of the health latency.
 *
 * Usage: `deno run -A bench/health_probe.ts <url> [everyMs=50] [maxMs=600000]`.
 *
 * @module
 */
const [url, everyText = "50", maxText = "600000"] = Deno.args;
if (!url) {
  Deno.stderr.writeSync(
    new TextEncoder().encode("usage: health_probe.ts <url> [everyMs] [maxMs]\n"),
  );
  Deno.exit(2);
}
const everyMs = Number(everyText);
const end = performance.now() + Number(maxText);
let running = true;
(async () => {
  for await (const _ of Deno.stdin.readable) { /* ignore input */ }
  running = false;
})().catch(() => (running = false));

const encoder = new TextEncoder();
while (running && performance.now() < end) {
  const started = performance.now();
  const at = Date.now();
  let status = 0;
  let pool: unknown = undefined;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    status = response.status;
    const body = await response.json().catch(() => null) as { pool?: unknown } | null;
    pool = body?.pool;
  } catch { /* status 0 */ }
  const ms = performance.now() - started;
  Deno.stdout.writeSync(encoder.encode(JSON.stringify({ at, ms, status, pool }) + "\n"));
  const wait = everyMs - (performance.now() - started);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}
Deno.exit(0);
