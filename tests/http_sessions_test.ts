/** Stateful sessions: owners, the GET stream's slots, idle expiry. */
import assert from "node:assert/strict";
import type { Principal } from "../lib/auth.ts";
import { StatefulSessions } from "../lib/http_sessions.ts";
import { StreamLimiter } from "../lib/http_streams.ts";
import { keyCaller, mcpOptionsOf, refusal, requestTo, settingsOf } from "./support/http_front.ts";

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "u", version: "1" },
  },
};

async function sessionsOf(idleSessionTimeoutMs: number, maxStreamsPerCaller = 16) {
  const settings = await settingsOf();
  const streams = new StreamLimiter({ ...settings.http.limits, maxStreamsPerCaller });
  const sessions = new StatefulSessions({
    mcp: mcpOptionsOf(settings),
    idleSessionTimeoutMs,
    sessionIdPrefix: null,
    streams,
  });
  return {
    sessions,
    streams,
    /** Opens a session for `principal` and returns its id. */
    async open(principal: Principal): Promise<string> {
      const response = await sessions.handle(
        requestTo("/mcp", { body: INIT, headers: { accept: "application/json" } }),
        INIT,
        "json",
        { sessionId: null, principal },
      );
      await response.body?.cancel();
      return response.headers.get("mcp-session-id")!;
    },
    /** Opens the GET event stream of session `id`. */
    stream(id: string, principal: Principal): Promise<Response> {
      return sessions.handle(
        requestTo("/mcp", {
          headers: {
            accept: "text/event-stream",
            "mcp-session-id": id,
            "mcp-protocol-version": "2025-11-25",
          },
        }),
        undefined,
        "sse",
        { sessionId: id, principal },
      );
    },
    [Symbol.asyncDispose]: () => sessions.close(),
  };
}

Deno.test("a caller without an identity can neither open nor use a session", async () => {
  await using s = await sessionsOf(60_000);
  const ownerless: Principal = { ...keyCaller("x"), scheme: "jwt", subject: null };
  const error = await refusal(
    s.sessions.handle(requestTo("/mcp", { body: INIT }), INIT, "json", {
      sessionId: null,
      principal: ownerless,
    }),
  );
  assert.equal(error.status, 403);
  assert.match(error.message, /token has no 'sub' claim/);
});

Deno.test("a GET stream takes one of the caller's stream slots until it ends; past the limit 429", async () => {
  await using s = await sessionsOf(60_000, 1);
  const alice = keyCaller("alice");
  const first = await s.open(alice);
  const second = await s.open(alice);
  const stream = await s.stream(first, alice);
  assert.equal(stream.status, 200);
  assert.match(stream.headers.get("content-type")!, /text\/event-stream/);
  assert.equal(s.streams.open, 1);
  const refused = await refusal(s.stream(second, alice));
  assert.equal(refused.status, 429);
  assert.equal(refused.headers["retry-after"], "5");
  assert.match(refused.message, /McpServer:MaxStreamsPerCaller/);
  // Another caller has slots of their own.
  const bob = keyCaller("bob");
  const bobs = await s.stream(await s.open(bob), bob);
  assert.equal(bobs.status, 200);
  await stream.body!.cancel();
  await bobs.body!.cancel();
  assert.equal(s.streams.open, 0, "a stream that ends gives its slot back");
  const again = await s.stream(second, alice);
  assert.equal(again.status, 200);
  await again.body!.cancel();
});

Deno.test("a session idle longer than the timeout expires and is then unknown", async () => {
  await using s = await sessionsOf(300);
  const alice = keyCaller("alice");
  const id = await s.open(alice);
  assert.equal(s.sessions.size, 1);
  // The sweep runs every 250 ms; the bound is generous for two busy cores.
  const deadline = Date.now() + 10_000;
  while (s.sessions.size > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(s.sessions.size, 0);
  const gone = await refusal(s.stream(id, alice));
  assert.deepEqual([gone.status, gone.code], [404, -32001]);
});
