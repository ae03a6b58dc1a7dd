/**
 * Every endpoint that takes a body answers 415 to anything but `application/json`: `/call`, the MCP
 * endpoint and the legacy `POST /messages`, whose `text/plain` a cross-site form could send without
 * a preflight.
 */
import assert from "node:assert/strict";
import { fixtureConfig, startHttpSvc } from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };
const NOT_JSON = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", null];

/** Opens GET /sse and returns the messages URL from its endpoint event, and a way to close it. */
async function openSse(url: string): Promise<{ messages: string; close: () => Promise<void> }> {
  const response = await fetch(`${url}/sse`, { headers: { accept: "text/event-stream" } });
  assert.equal(response.status, 200);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!/event: endpoint\ndata: (\S+)\n/.test(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the SSE stream ended before its endpoint event");
    text += value;
  }
  const path = /event: endpoint\ndata: (\S+)\n/.exec(text)![1]!;
  return { messages: `${url}${path}`, close: () => reader.cancel() };
}

Deno.test("POST /call, /mcp and /messages answer 415 to anything but application/json", async () => {
  const config = {
    ...fixtureConfig(),
    McpServer: { RunspacePool: LIGHT_POOL, EnableLegacySse: true },
  };
  await using svc = await startHttpSvc({ config });
  const sse = await openSse(svc.url);
  try {
    const ping = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
    for (const contentType of NOT_JSON) {
      for (const target of [`${svc.url}/call`, `${svc.url}/mcp`, sse.messages]) {
        const headers: Record<string, string> = { accept: "application/json, text/event-stream" };
        if (contentType) headers["content-type"] = contentType;
        const response = await fetch(target, { method: "POST", headers, body: ping });
        assert.equal(response.status, 415, `${target} with ${contentType}`);
        assert.match(await response.text(), /Content-Type must be application\/json/);
      }
    }
    const ok = await fetch(sse.messages, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: ping,
    });
    assert.equal(ok.status, 202, "application/json (with a charset) is still accepted");
    await ok.body?.cancel();
  } finally {
    await sse.close();
  }
});
