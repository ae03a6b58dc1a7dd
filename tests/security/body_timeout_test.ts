/**
 * A request body that does not arrive in full within `McpServer:BodyReadTimeout` is refused with
 * 408 and dropped (issue 28, finding 2: stalled bodies held memory with no time limit). A raw
 * socket sends the headers of a `POST /call` with `Content-Length: 1000`, then 10 bytes, then
 * nothing.
 */
import assert from "node:assert/strict";
import { within } from "../support/deadline.ts";
import { rawRequest } from "./raw_http.ts";
import { fixtureConfig, post, processMemory, startHttpSvc } from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };
const TIMEOUT_MS = 2_000;

/** Sends the head of a POST to `path` promising 1000 bytes and 10 of them; returns what comes back. */
async function stalledPost(url: string, path: string) {
  const started = performance.now();
  const reply = await rawRequest(url, {
    method: "POST",
    path,
    headers: {
      Host: new URL(url).host,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    },
    body: '{"tool": "',
    contentLength: 1000,
    // A whole JSON body, or the last chunk of a chunked one.
    until: /\r\n\r\n[\s\S]*(\}\s*|\r\n0\r\n\r\n)$/,
  });
  return { ...reply, elapsedMs: performance.now() - started };
}

Deno.test("a body that stalls gets 408 after McpServer:BodyReadTimeout, on /call and /mcp", async () => {
  const config = {
    ...fixtureConfig(),
    McpServer: { RunspacePool: LIGHT_POOL, BodyReadTimeout: "00:00:02" },
  };
  await using svc = await startHttpSvc({ config });
  for (const path of ["/call", "/mcp"]) {
    const reply = await stalledPost(svc.url, path);
    assert.equal(reply.status, 408, `${reply.status} ${reply.body}`);
    assert.match(`${reply.status} ${reply.body}`, /McpServer:BodyReadTimeout \(2 s\)/);
    // Not before the timeout; the upper bound is `within`'s, generous for two busy cores.
    assert.ok(reply.elapsedMs >= TIMEOUT_MS - 100, `${path} answered after ${reply.elapsedMs} ms`);
  }
  // A body that arrives in time is served as before.
  const called = await post(`${svc.url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "prompt" },
  });
  assert.equal(called.status, 200, JSON.stringify(called.body));
});

Deno.test("stalled bodies hold at most McpServer:MaxBufferedBodyBytes; the rest get 503 at once", async () => {
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: {
        RunspacePool: LIGHT_POOL,
        BodyReadTimeout: "00:00:03",
        MaxBufferedBodyBytes: 2_097_152,
      },
    },
  });
  const rss = () => processMemory(svc.pid) / 1024 / 1024;
  const { hostname, port } = new URL(svc.url);
  // Twenty bodies of 4 MiB declared, each sending 768 KiB and stopping: two fit the 2 MiB budget.
  const piece = new TextEncoder().encode(`{"tool":"${"x".repeat(768 * 1024)}`);
  const before = rss();
  const conns = await Promise.all(Array.from({ length: 20 }, async () => {
    const conn = await Deno.connect({ hostname, port: Number(port) });
    await conn.write(new TextEncoder().encode(
      `POST /call HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: 4000000\r\n\r\n`,
    ));
    await conn.write(piece);
    return conn;
  }));
  const answers = await Promise.all(conns.map(async (conn) => {
    const buffer = new Uint8Array(4096);
    const n = await within(conn.read(buffer), "an answer to a stalled body");
    return n === null ? "" : new TextDecoder().decode(buffer.subarray(0, n));
  }));
  const grown = rss() - before;
  for (const conn of conns) conn.close();
  const refused = answers.filter((a) => /^HTTP\/1\.1 503 /.test(a));
  const timedOut = answers.filter((a) => /^HTTP\/1\.1 408 /.test(a));
  assert.ok(refused.length >= 17, `503s: ${refused.length}, 408s: ${timedOut.length}`);
  assert.match(refused[0]!, /McpServer:MaxBufferedBodyBytes \(2097152 bytes\)/);
  assert.equal(refused.length + timedOut.length, 20, answers.join("\n---\n"));
  // Before the budget, 100 such bodies of 4 MiB grew svc by 430 MB.
  assert.ok(grown < 64, `svc grew ${grown.toFixed(0)} MB`);
  // Once the stalled bodies have timed out, their share is free again.
  const called = await post(`${svc.url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "again" },
  });
  assert.equal(called.status, 200, JSON.stringify(called.body));
});
