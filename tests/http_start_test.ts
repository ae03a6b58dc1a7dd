/**
 * svc over HTTP listens while its pool warms: liveness answers at once, readiness only once
 * `MinPoolSize` workers are warm, and a call that arrives first waits for a worker instead of failing.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { eventually, fixtureConfig, startHttpSvc } from "./support/harness.ts";

Deno.test("svc listens before its pool is warm: /health 200, /health/ready 503, and an early call waits for a worker", async () => {
  // A slow startup script keeps the pool warming long enough to be seen from outside.
  await using svc = await startHttpSvc({
    warm: false,
    config: fixtureConfig({ Environment: { StartupScript: "Start-Sleep -Milliseconds 2500" } }),
  });
  assert.doesNotMatch(svc.stderr(), /Startup complete/);
  const live = await fetch(`${svc.url}/health`);
  assert.equal(live.status, 200);
  assert.equal((await live.json()).status, "Degraded");
  const ready = await fetch(`${svc.url}/health/ready`);
  assert.equal(ready.status, 503);
  await ready.body?.cancel();

  const client = new Client({ name: "t", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)));
  try {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === "get_fixture_greeting");
    assert.ok(tool, tools.map((t) => t.name).join(", "));
    const result = await client.callTool({ name: tool.name, arguments: { Name: "early" } });
    assert.equal(result.isError ?? false, false, JSON.stringify(result));
    assert.deepEqual((result.structuredContent as { output?: unknown }).output, ["Hello, early!"]);
  } finally {
    await client.close();
  }
  assert.ok(
    await eventually(async () => {
      const response = await fetch(`${svc.url}/health/ready`);
      await response.body?.cancel();
      return response.status === 200;
    }, 30_000),
    svc.stderr(),
  );
  assert.match(
    svc.stderr(),
    /listening on [^\n]*\n[\s\S]*Startup complete: 2\/2 workers initialized/,
  );
});
