/**
 * What svc's HTTP front does before authentication grows no faster than the request: heads built to
 * cost it the most take about what a plain request takes, not seconds of the one thread every
 * caller shares. Times are ratios to a plain `GET /health` on the same svc, measured the same way
 * (a new connection each, to the end of the answer), so that a busy machine moves both.
 */
import assert from "node:assert/strict";
import { answersOk, eventually, fixtureConfig, startHttpSvc } from "../support/harness.ts";
import { exchange } from "./raw_http.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };

/** Sends `request` on a new connection; the ms to the end of the answer, and its status line. */
async function timed(url: string, request: string): Promise<{ ms: number; status: string }> {
  const started = performance.now();
  const text = await exchange(url, request, { ms: 60_000 });
  return { ms: performance.now() - started, status: text.slice(0, text.indexOf("\r\n")) };
}

async function median(url: string, request: string, rounds: number) {
  const runs = [];
  for (let i = 0; i < rounds; i++) runs.push(await timed(url, request));
  const sorted = runs.map((r) => r.ms).sort((a, b) => a - b);
  return { ms: sorted[Math.floor(rounds / 2)]!, status: runs[0]!.status };
}

Deno.test("front work: heads built to be slow cost about what a plain request does", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const host = new URL(svc.url).host;
  const start = `Host: ${host}\r\nConnection: close\r\n`;
  let names = "";
  for (let i = 0; names.length < 32_000 - 64; i++) names += `${i.toString(36)}:\r\n`;
  // Warm: the first requests load the front.
  await median(svc.url, `GET /health HTTP/1.1\r\n${start}\r\n`, 10);
  const plain = await median(svc.url, `GET /health HTTP/1.1\r\n${start}\r\n`, 11);
  const cases: [string, string, RegExp][] = [
    // Before: 8.5 s (fetch's Headers is quadratic in distinct names; there was no cap).
    ["5,500 distinct field names", `GET /health HTTP/1.1\r\n${start}${names}\r\n`, / 431 /],
    // Before: 2.2 s (the trimming expression backtracked).
    [
      "32,000 inner spaces",
      `GET /health HTTP/1.1\r\n${start}X-Pad: a${" ".repeat(32_000)}b\r\n\r\n`,
      / 200 /,
    ],
    // Before: 7.6 s (the trailing-slash expression, three times a request).
    ["32,000 '/' and a letter", `GET ${"/".repeat(32_000)}a HTTP/1.1\r\n${start}\r\n`, / 404 /],
    ["32,000 '/'", `GET ${"/".repeat(32_000)} HTTP/1.1\r\n${start}\r\n`, / 404 /],
  ];
  for (const [name, request, status] of cases) {
    const result = await median(svc.url, request, 3);
    const ratio = result.ms / plain.ms;
    // A few times a plain request's cost (it reads 32 KB more), up to 60 times on two busy cores;
    // before, 760 to 4,800 times on the same busy cores, and seconds each.
    assert.ok(
      ratio < 200,
      `${name}: ${result.ms.toFixed(1)} ms, ${ratio.toFixed(0)} × a plain request's ${
        plain.ms.toFixed(1)
      } ms`,
    );
    assert.match(result.status, status, name);
  }
});
