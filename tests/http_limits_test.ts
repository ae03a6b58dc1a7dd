/**
 * Limits on what an HTTP client can send: `McpServer:MaxRequestBodyBytes` (4 MiB by default) on every
 * endpoint that reads a body, enforced by counting the stream (not by trusting `Content-Length`), and
 * 415 for a `/call` body that is not JSON.
 */
import assert from "node:assert/strict";
import { within } from "./support/deadline.ts";
import { errorOf, fixtureConfig, post, processMemory, startHttpSvc } from "./support/harness.ts";

const MIB = 1024 * 1024;

/** A body of `bytes` bytes sent in 64 KiB chunks, with no Content-Length (chunked encoding). */
function streamOf(bytes: number): ReadableStream<Uint8Array> {
  const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      controller.enqueue(chunk);
      sent += chunk.byteLength;
    },
  });
}

/** POSTs a streamed body; the server may answer and close before the upload ends. */
async function postStream(url: string, bytes: number): Promise<{ status: number; body: string }> {
  const response = await within(
    fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: streamOf(bytes),
    }),
    `the answer to a ${bytes}-byte streamed POST ${url}`,
  );
  return { status: response.status, body: await response.text() };
}

Deno.test("http refuses bodies over MaxRequestBodyBytes with 413 on every endpoint, before reading them", async (t) => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { EnableLegacySse: true } },
  });
  const oversized = JSON.stringify({ tool: "get_date", arguments: {}, pad: "x".repeat(5 * MIB) });

  await t.step("/call, / and /mcp answer 413 with a JSON error naming the setting", async () => {
    const call = await post(`${svc.url}/call`, oversized);
    assert.equal(call.status, 413);
    assert.match(
      errorOf(call.body).message,
      /larger than McpServer:MaxRequestBodyBytes \(4194304 bytes\)/,
    );
    for (const path of ["/", "/mcp"]) {
      const mcp = await post(`${svc.url}${path}`, oversized);
      assert.equal(mcp.status, 413, path);
      const error = (mcp.body as { error: { code: number; message: string } }).error;
      assert.equal(error.code, -32600);
      assert.match(error.message, /MaxRequestBodyBytes/);
    }
  });

  await t.step("a body just under the limit is read and run", async () => {
    const padded = JSON.stringify({
      tool: "get_fixture_greeting",
      arguments: { Name: "big" },
      pad: "x".repeat(4 * MIB - 200),
    });
    const call = await post(`${svc.url}/call`, padded);
    assert.equal(call.status, 200, JSON.stringify(call.body).slice(0, 300));
  });

  await t.step(
    "a 64 MiB chunked body (no Content-Length) is cut off at the limit, RSS barely moves",
    async () => {
      const before = processMemory(svc.pid) / 1024;
      for (const path of ["/call", "/mcp"]) {
        const answer = await postStream(`${svc.url}${path}`, 64 * MIB).catch((error) => {
          // The server may close the connection while the upload is still being written.
          return { status: 0, body: String(error) };
        });
        if (answer.status !== 0) {
          assert.equal(answer.status, 413, `${path}: ${answer.body.slice(0, 200)}`);
        }
      }
      const grown = processMemory(svc.pid) / 1024 - before;
      assert.ok(grown < 48 * 1024, `svc grew by ${grown} KiB while refusing two 64 MiB bodies`);
      // And it still serves.
      const health = await fetch(`${svc.url}/health`);
      assert.equal(health.status, 200);
      await health.body?.cancel();
    },
  );

  await t.step("a legacy SSE message over the limit gets 413", async () => {
    const controller = new AbortController();
    const stream = await fetch(`${svc.url}/sse`, { signal: controller.signal });
    try {
      const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = "";
      while (!/data: (\S+)/.test(text)) {
        const { value, done } = await within(reader.read(), "the SSE endpoint event");
        if (done) break;
        text += value;
      }
      const endpoint = /data: (\S+)/.exec(text)![1]!;
      const message = await post(new URL(endpoint, svc.url).href, oversized);
      assert.equal(message.status, 413);
    } finally {
      controller.abort();
    }
  });

  await t.step("/call answers 415 to a body that is not application/json", async () => {
    const plain = await post(`${svc.url}/call`, '{"tool":"get_date"}', {
      "content-type": "text/plain",
    });
    assert.equal(plain.status, 415);
    assert.match(errorOf(plain.body).message, /Content-Type must be application\/json/);
    const mcp = await post(`${svc.url}/mcp`, "{}", { "content-type": "text/plain" });
    assert.equal(mcp.status, 415);
  });
});

Deno.test("http MaxRequestBodyBytes is configurable", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { MaxRequestBodyBytes: 1024 } },
  });
  const small = await post(`${svc.url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "a" },
  });
  assert.equal(small.status, 200);
  const big = await post(`${svc.url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "a".repeat(2000) },
  });
  assert.equal(big.status, 413);
  assert.match(errorOf(big.body).message, /\(1024 bytes\)/);
  const streamed = await postStream(`${svc.url}/call`, 8 * 1024);
  assert.equal(streamed.status, 413);
});
