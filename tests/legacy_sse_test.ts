/** A legacy SSE session holds at most MAX_PENDING_REQUESTS posted requests without an answer. */
import assert from "node:assert/strict";
import { MAX_PENDING_REQUESTS, SseTransport } from "../lib/legacy_sse.ts";

Deno.test("SseTransport refuses posts while MAX_PENDING_REQUESTS wait for an answer, batches counted per request", async () => {
  const transport = new SseTransport("/messages", "owner");
  const received: unknown[] = [];
  transport.onmessage = (message) => received.push(message);
  const auth = { token: "", clientId: "t", scopes: [] };
  for (let id = 1; id < MAX_PENDING_REQUESTS; id++) {
    transport.receive({ jsonrpc: "2.0", id, method: "tools/list" }, auth);
  }
  // Notifications are not waiting for anything.
  transport.receive({ jsonrpc: "2.0", method: "notifications/initialized" }, auth);
  assert.equal(transport.busy, null);
  // deno-lint-ignore no-explicit-any
  transport.receive([{ jsonrpc: "2.0", id: "a", method: "ping" }] as any, auth);
  assert.match(transport.busy!, new RegExp(`at most ${MAX_PENDING_REQUESTS}`));
  await transport.send({ jsonrpc: "2.0", id: "a", result: {} });
  assert.equal(transport.busy, null, "an answer frees its request's place");
  assert.equal(received.length, MAX_PENDING_REQUESTS + 1);
  await transport.close();
});
