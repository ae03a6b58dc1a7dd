/**
 * A caller may hold at most `MaxStreamsPerCaller` event streams (legacy `GET /sse` and the MCP GET
 * stream together); the next gets 429 naming the setting, and a slot is free again once a stream
 * ends (issue 28, finding 5).
 */
import assert from "node:assert/strict";
import { eventually, fixtureConfig, post, startHttpSvc } from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };

/** Opens an event stream with fetch and returns its status, body text so far and a closer. */
async function openStream(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { headers: { accept: "text/event-stream", ...headers } });
  return {
    status: response.status,
    text: response.status === 200 ? "" : await response.text(),
    close: () => response.body?.cancel() ?? Promise.resolve(),
  };
}

Deno.test("a caller's N+1th event stream gets 429 naming MaxStreamsPerCaller", async () => {
  const config = {
    ...fixtureConfig(),
    McpServer: {
      RunspacePool: LIGHT_POOL,
      EnableLegacySse: true,
      HttpTransportMode: "Stateful",
      MaxStreamsPerCaller: 2,
    },
  };
  await using svc = await startHttpSvc({ config });
  const first = await openStream(`${svc.url}/sse`);
  assert.equal(first.status, 200);
  // The MCP GET stream of a Stateful session counts with the legacy ones.
  const init = await post(`${svc.url}/mcp`, {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "t", version: "1" },
    },
  });
  const session = init.headers.get("mcp-session-id")!;
  assert.ok(session, JSON.stringify(init.body));
  const headers = { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" };
  await post(`${svc.url}/mcp`, { jsonrpc: "2.0", method: "notifications/initialized" }, headers);
  const second = await openStream(`${svc.url}/mcp`, headers);
  assert.equal(second.status, 200);
  const third = await openStream(`${svc.url}/sse`);
  assert.equal(third.status, 429);
  assert.match(third.text, /2 open, at most 2 \(McpServer:MaxStreamsPerCaller\)/);
  await first.close();
  // Closing a stream frees its slot once svc notices the client left.
  let again = third;
  assert.ok(
    await eventually(async () => {
      again = await openStream(`${svc.url}/sse`);
      if (again.status !== 200) return false;
      return true;
    }),
  );
  await again.close();
  await second.close();
});
