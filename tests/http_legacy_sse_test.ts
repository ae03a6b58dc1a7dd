/** The legacy SSE routes: GET /sse opens a session, POST /messages feeds it, answers on the stream. */
import assert from "node:assert/strict";
import type { Principal } from "../lib/auth.ts";
import { BodyBudget } from "../lib/http_body.ts";
import { LegacySse } from "../lib/http_legacy_sse.ts";
import { StreamLimiter } from "../lib/http_streams.ts";
import {
  ANONYMOUS_CALLER,
  keyCaller,
  mcpOptionsOf,
  refusal,
  requestTo,
  settingsOf,
} from "./support/http_front.ts";

async function legacyOf(maxStreamsPerCaller = 16) {
  const settings = await settingsOf();
  const streams = new StreamLimiter({ ...settings.http.limits, maxStreamsPerCaller });
  const sse = new LegacySse({
    mcp: mcpOptionsOf(settings),
    streams,
    bodyBounds: { limit: 4096, timeoutMs: 5_000, budget: new BodyBudget(1 << 20) },
  });
  return { sse, streams, [Symbol.asyncDispose]: () => sse.close() };
}

/** Reads events from an SSE body until one has `name`; returns its data. */
async function nextEvent(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  name: string,
): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const match = new RegExp(`event: ${name}\\ndata: (.*)\\n\\n`).exec(text);
    if (match) return match[1]!;
    const { done, value } = await reader.read();
    if (done) assert.fail(`the stream ended before a '${name}' event: ${text}`);
    text += decoder.decode(value, { stream: true });
  }
}

const INIT = {
  jsonrpc: "2.0",
  id: 7,
  method: "initialize",
  params: {
    protocolVersion: "2024-11-05",
    capabilities: {},
    clientInfo: { name: "u", version: "1" },
  },
};

Deno.test("GET /sse names where to post; a posted request is accepted and answered on the stream", async () => {
  await using legacy = await legacyOf();
  const stream = legacy.sse.open(ANONYMOUS_CALLER);
  assert.match(stream.headers.get("content-type")!, /text\/event-stream/);
  const reader = stream.body!.getReader();
  const endpoint = await nextEvent(reader, "endpoint");
  assert.match(endpoint, /^\/messages\?sessionId=[0-9a-f-]{36}$/);
  const accepted = await legacy.sse.post(requestTo(endpoint, { body: INIT }), ANONYMOUS_CALLER);
  assert.equal(accepted.status, 202);
  const answer = JSON.parse(await nextEvent(reader, "message"));
  assert.equal(answer.id, 7);
  assert.equal(answer.result.protocolVersion, "2024-11-05");
  await reader.cancel();
  assert.equal(legacy.sse.size, 0, "a closed stream ends its session");
});

Deno.test("POST /messages refuses an unknown session, another caller, a wrong type and a broken body", async () => {
  await using legacy = await legacyOf();
  const alice = keyCaller("alice");
  const stream = legacy.sse.open(alice);
  const reader = stream.body!.getReader();
  const endpoint = await nextEvent(reader, "endpoint");
  const unknown = await refusal(() =>
    legacy.sse.post(requestTo("/messages?sessionId=nope", { body: INIT }), alice)
  );
  assert.deepEqual([unknown.status, unknown.message], [404, "Unknown or closed SSE session"]);
  const bob = await refusal(() =>
    legacy.sse.post(requestTo(endpoint, { body: INIT }), keyCaller("bob"))
  );
  assert.deepEqual([bob.status, bob.message], [403, "The SSE session belongs to another caller"]);
  const text = await refusal(() =>
    legacy.sse.post(
      requestTo(endpoint, { body: "{}", headers: { "content-type": "text/plain" } }),
      alice,
    )
  );
  assert.equal(text.status, 415);
  const broken = await refusal(() =>
    legacy.sse.post(
      requestTo(endpoint, { body: "{", headers: { "content-type": "application/json" } }),
      alice,
    )
  );
  assert.deepEqual([broken.status, broken.code, broken.message], [
    400,
    -32700,
    "Parse error: the body is not JSON",
  ]);
  await reader.cancel();
});

Deno.test("GET /sse needs a caller identity and a free stream slot", async () => {
  await using legacy = await legacyOf(1);
  const ownerless: Principal = { ...keyCaller("x"), scheme: "jwt", subject: null };
  assert.equal((await refusal(() => legacy.sse.open(ownerless))).status, 403);
  const first = legacy.sse.open(ANONYMOUS_CALLER);
  const second = await refusal(() => legacy.sse.open(ANONYMOUS_CALLER));
  assert.equal(second.status, 429);
  assert.match(second.message, /McpServer:MaxStreamsPerCaller/);
  await first.body!.cancel();
  assert.equal(legacy.streams.open, 0);
});
