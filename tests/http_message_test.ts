import assert from "node:assert/strict";
import {
  asksForProgress,
  claimsModernEra,
  plainToolCall,
  responseModeOf,
  withBothAccepts,
  withoutBody,
} from "../lib/http_message.ts";

Deno.test("responseModeOf() reads Accept: JSON only, SSE only, or either", () => {
  assert.equal(responseModeOf("application/json"), "json");
  assert.equal(responseModeOf("text/event-stream"), "sse");
  assert.equal(responseModeOf("application/json, text/event-stream"), "auto");
  assert.equal(responseModeOf("*/*"), "json");
  assert.equal(responseModeOf("text/event-stream, */*"), "auto");
  // Nothing usable in Accept leaves the choice to svc.
  assert.equal(responseModeOf(""), "auto");
  assert.equal(responseModeOf("text/html"), "auto");
});

Deno.test("asksForProgress() finds a progressToken in a request or in any request of a batch", () => {
  const withToken = (token: unknown) => ({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "x", _meta: { progressToken: token } },
  });
  assert.equal(asksForProgress(withToken("p1")), true);
  assert.equal(asksForProgress(withToken(0)), true, "0 is a valid token");
  assert.equal(asksForProgress(withToken(null)), false);
  assert.equal(asksForProgress({ jsonrpc: "2.0", id: 1, method: "ping" }), false);
  assert.equal(asksForProgress([{ jsonrpc: "2.0", id: 1, method: "ping" }, withToken("p")]), true);
  assert.equal(asksForProgress([]), false);
  assert.equal(asksForProgress(null), false);
  assert.equal(asksForProgress("text"), false);
});

Deno.test("claimsModernEra() is true only for a string protocol version in _meta", () => {
  const meta = (value: unknown) => ({
    method: "tools/list",
    params: { _meta: { "io.modelcontextprotocol/protocolVersion": value } },
  });
  assert.equal(claimsModernEra(meta("2026-07-28")), true);
  assert.equal(claimsModernEra(meta(20260728)), false);
  assert.equal(claimsModernEra({ method: "tools/list", params: {} }), false);
  assert.equal(claimsModernEra({ method: "tools/list" }), false);
  assert.equal(claimsModernEra(null), false);
});

Deno.test("withoutBody() copies method, URL and headers without the body; withBothAccepts() sets Accept", async () => {
  const controller = new AbortController();
  const original = new Request("http://localhost/mcp?x=1", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", "x-a": "1" },
    body: '{"a":1}',
    signal: controller.signal,
  });
  const copy = withoutBody(original);
  assert.equal(copy.url, "http://localhost/mcp?x=1");
  assert.equal(copy.method, "POST");
  assert.equal(copy.body, null);
  assert.equal(copy.headers.get("x-a"), "1");
  // The original body is still there to be read once.
  assert.equal(await original.text(), '{"a":1}');

  const other = withoutBody(original, { "x-b": "2" });
  assert.equal(other.headers.get("x-b"), "2");
  assert.equal(other.headers.get("x-a"), null);

  const both = withBothAccepts(original);
  assert.equal(both.headers.get("accept"), "application/json, text/event-stream");
  assert.equal(both.headers.get("x-a"), "1");
  assert.equal(original.headers.get("accept"), "application/json", "the original is unchanged");

  assert.equal(copy.signal.aborted, false);
  controller.abort();
  assert.equal(copy.signal.aborted, true, "the copy follows the client's disconnect");
});

Deno.test("plainToolCall takes a 2025-era tools/call that nothing else can come of, and nothing more", () => {
  const call = (params: unknown, extra: Record<string, unknown> = {}) => ({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params,
    ...extra,
  });
  assert.deepEqual(plainToolCall(call({ name: "t", arguments: { A: 1 } }), "2025-11-25"), {
    id: 1,
    name: "t",
    arguments: { A: 1 },
  });
  assert.deepEqual(plainToolCall(call({ name: "t" }), null), {
    id: 1,
    name: "t",
    arguments: undefined,
  });
  assert.ok(plainToolCall(call({ name: "t", _meta: { x: 1 } }), "2025-06-18"));
  for (
    const [body, version] of [
      [call({ name: "t" }), "2026-07-28"], // the 2026 era
      [call({ name: "t" }), "2024-11-05"], // a version left to the SDK
      [call({ name: "t" }), "garbage"],
      [[call({ name: "t" })], null], // a batch
      [call({ name: "t", _meta: { progressToken: 1 } }), null], // wants progress
      [call({ name: "t", _meta: { "io.modelcontextprotocol/logLevel": "info" } }), null],
      [call({ name: "t", task: {} }), null], // a key of params svc does not know
      [call({ name: "t", arguments: [] }), null],
      [call({ name: "t", arguments: null }), null],
      [call({ name: 7 }), null],
      [call(null), null],
      [call({ name: "t" }, { id: null }), null],
      [call({ name: "t" }, { id: 1.5 }), null],
      [call({ name: "t" }, { extra: 1 }), null],
      [call({ name: "t" }, { jsonrpc: "1.0" }), null],
      [call({ name: "t" }, { method: "tools/list" }), null],
    ] as [unknown, string | null][]
  ) {
    assert.equal(plainToolCall(body, version), null, JSON.stringify([body, version]));
  }
});
