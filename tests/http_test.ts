/**
 * End-to-end tests of `svc serve --transport http`: real MCP clients (SDK v2 at 2026-07-28, the v1
 * SDK at 2025-11-25 and at 2024-11-05) and raw HTTP against svc with its pool of pwsh workers.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as V1Client } from "sdk1/client/index.js";
import { StreamableHTTPClientTransport as V1HttpTransport } from "sdk1/client/streamableHttp.js";
import { SSEClientTransport as V1SseTransport } from "sdk1/client/sse.js";
import { ElicitRequestSchema, LoggingMessageNotificationSchema } from "sdk1/types.js";
import {
  errorOf,
  eventually,
  fixtureConfig,
  logged,
  post,
  startHttpSvc,
} from "./support/harness.ts";
import { within } from "./support/deadline.ts";
import { TOOLS_LIST_TTL_MS } from "../lib/mcp.ts";

const INIT = (version: string) => ({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

function textOf(result: { content: unknown }): string {
  return (result.content as { text?: string }[]).map((c) => c.text ?? "").join("\n");
}

function outputOf(result: { structuredContent?: unknown }): unknown {
  return (result.structuredContent as { output?: unknown } | undefined)?.output;
}

/** The v1 SDK always offers its newest version; this rewrites initialize and drops the version header. */
function as2024(): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    headers.delete("mcp-protocol-version");
    let body = init?.body;
    if (typeof body === "string" && body.includes('"initialize"')) {
      body = body.replace(/"protocolVersion":"[^"]+"/, '"protocolVersion":"2024-11-05"');
    }
    return await fetch(input, { ...init, headers, body: body ?? null });
  };
}

Deno.test("http serves MCP to every client era, plus /tools, /call and health, in Stateless mode", async (t) => {
  await using svc = await startHttpSvc({
    config: fixtureConfig({
      Environment: { StartupScript: "Set-Variable -Name fromStartup -Value 'yes'" },
    }),
  });

  await t.step(
    "a 2026-07-28 tool list may be cached by anyone for five minutes: no authentication, no reload",
    async () => {
      const listed = await post(`${svc.url}/mcp`, {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/list",
        params: {
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      }, {
        accept: "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list",
      });
      assert.equal(listed.status, 200);
      const result = (listed.body as { result: Record<string, unknown> }).result;
      assert.equal(result.ttlMs, TOOLS_LIST_TTL_MS);
      assert.equal(result.cacheScope, "public");
    },
  );

  await t.step("SDK v2 client at 2026-07-28 lists and calls tools without a session", async () => {
    const client = new Client({ name: "t", version: "1" }, {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)));
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28");
      const { tools } = await client.listTools();
      assert.ok(tools.some((tool) => tool.name === "get_fixture_greeting"));
      const result = await client.callTool({
        name: "get_fixture_greeting",
        arguments: { Name: "modern" },
      });
      assert.deepEqual(outputOf(result), ["Hello, modern!"]);
      // Under the default MaxResultBytes no size hint, and a cut result says so in both halves.
      assert.ok(tools.every((tool) => tool._meta === undefined));
      const cut = await client.callTool({
        name: "get_fixture_record",
        arguments: { Count: 100_000 },
      });
      const structured = cut.structuredContent as {
        output: unknown[];
        truncated: { keptItems: number; stopped?: true };
        notes: string[];
      };
      assert.equal(structured.output.length, structured.truncated.keptItems);
      assert.equal(structured.truncated.stopped, true);
      const notice = structured.notes.find((note) => note.includes("output truncated"));
      assert.ok(notice, JSON.stringify(structured.notes));
      const text = (cut.content as { text?: string }[]).map((c) => c.text ?? "").join("\n");
      assert.ok(text.includes(notice), text.slice(-600));
    } finally {
      await client.close();
    }
  });

  await t.step("v1 client at 2025-11-25 and at 2024-11-05 without the version header", async () => {
    for (const era2024 of [false, true]) {
      const client = new V1Client({ name: "t1", version: "1" });
      const transport = new V1HttpTransport(
        new URL(svc.url),
        era2024 ? { fetch: as2024() } : {},
      );
      await client.connect(transport);
      try {
        assert.equal(transport.sessionId, undefined, "Stateless mode issues no session id");
        const result = await client.callTool({
          name: "get_fixture_greeting",
          arguments: { Name: "legacy" },
        });
        assert.deepEqual(outputOf(result), ["Hello, legacy!"]);
        if (era2024) assert.equal(transport.protocolVersion, "2024-11-05");
      } finally {
        await client.close();
      }
    }
  });

  await t.step("the response format follows Accept: JSON or SSE", async () => {
    const json = await post(svc.url, INIT("2025-11-25"), { accept: "application/json" });
    assert.equal(json.status, 200);
    assert.match(json.contentType, /application\/json/);
    const sse = await post(svc.url, INIT("2025-11-25"), { accept: "text/event-stream" });
    assert.equal(sse.status, 200);
    assert.match(sse.contentType, /text\/event-stream/);
    assert.equal(
      (sse.body as { result: { protocolVersion: string } }).result.protocolVersion,
      "2025-11-25",
    );
    assert.equal(sse.headers.get("mcp-session-id"), null);
  });

  await t.step("an unsupported or invalid protocol version is a 400", async () => {
    const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };
    const unsupported = await post(svc.url, list, { "mcp-protocol-version": "1999-01-01" });
    assert.equal(unsupported.status, 400);
    const modern = await post(svc.url, {
      ...list,
      params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } },
    }, { "mcp-protocol-version": "banana", "mcp-method": "tools/list" });
    assert.equal(modern.status, 400);
    const missing = await post(svc.url, {
      ...list,
      params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } },
    }, { "mcp-method": "tools/list" });
    assert.equal(missing.status, 400, "a modern request without MCP-Protocol-Version");
  });

  await t.step(
    "a foreign Origin is a 403, same-origin passes, and Host is checked first",
    async () => {
      const foreign = await post(svc.url, INIT("2025-11-25"), { origin: "https://evil.example" });
      assert.equal(foreign.status, 403);
      const same = await post(svc.url, INIT("2025-11-25"), { origin: svc.url });
      assert.equal(same.status, 200);
      assert.equal(same.headers.get("access-control-allow-origin"), svc.url);
      // DNS rebinding: Host and Origin agree with each other but not with this server. fetch() cannot
      // set Host, so this request is written by hand.
      const { hostname, port } = new URL(svc.url);
      const conn = await Deno.connect({ hostname, port: Number(port) });
      const body = JSON.stringify(INIT("2025-11-25"));
      await conn.write(new TextEncoder().encode(
        `POST /mcp HTTP/1.1\r\nHost: evil.example:${port}\r\nOrigin: http://evil.example:${port}\r\n` +
          `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
          `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      ));
      let raw = "";
      await within(
        (async () => {
          for await (const chunk of conn.readable) raw += new TextDecoder().decode(chunk);
        })(),
        "the reply to a hand-written request",
      );
      assert.match(raw, /^HTTP\/1\.1 403/);
      assert.match(raw, /Host 'evil\.example/);
    },
  );

  await t.step("GET /tools lists descriptors and POST /call runs a tool", async () => {
    const tools = await (await fetch(`${svc.url}/tools`)).json();
    assert.ok(tools.tools.some((tool: { name: string }) => tool.name === "test_fixture_binding"));
    const ok = await post(`${svc.url}/call`, {
      tool: "get_fixture_greeting",
      arguments: { Name: "rest" },
    });
    assert.equal(ok.status, 200);
    assert.deepEqual(outputOf(ok.body as { structuredContent: unknown }), ["Hello, rest!"]);
    assert.match(ok.headers.get("x-correlation-id") ?? "", /^\d{8}-\d{6}-[0-9a-f]{8}$/);
    const unknown = await post(`${svc.url}/call`, { tool: "nope", arguments: {} });
    assert.equal(unknown.status, 404);
    assert.match(errorOf(unknown.body).message, /nope/);
    assert.equal(errorOf(unknown.body).code, -32602);
    const notJson = await post(`${svc.url}/call`, "not json");
    assert.equal(notJson.status, 400);
    assert.equal(errorOf(notJson.body).code, -32700);
    assert.equal((await post(`${svc.url}/call`, { arguments: {} })).status, 400);
    const invalid = await post(`${svc.url}/call`, {
      tool: "get_fixture_item_by_id",
      arguments: { Id: ["x"] },
    });
    assert.equal(invalid.status, 400);
    assert.match(errorOf(invalid.body).message, /'Id'/);
    // The tool's own failure result travels in `error.data`.
    assert.equal((errorOf(invalid.body).data as { isError: boolean }).isError, true);
  });

  await t.step("the correlation id is echoed and appears in the call's log lines", async () => {
    const id = "test-correlation-42";
    const response = await post(`${svc.url}/call`, {
      tool: "get_fixture_greeting",
      arguments: { Name: "c" },
    }, {
      "x-correlation-id": id,
    });
    assert.equal(response.headers.get("x-correlation-id"), id);
    await logged(svc.stderr, new RegExp(`Tool call get_fixture_greeting .*CorrelationId=${id}`));
  });

  await t.step("the pool logs the SPEC §6 events with their exact templates and levels", () => {
    const log = svc.stderr();
    assert.match(log, /INFO +pool: Starting StatelessRunspacePool: min=2, max=16, eager=2\.\n/);
    assert.match(log, /INFO +pool: Startup complete: 2\/2 workers initialized\.\n/);
    assert.match(
      log,
      /DEBUG +pool: Worker \d{4}-\d\d-\d\dT[\d:.]+Z initialized and enqueued\. Total=\d+\.\n/,
    );
  });

  await t.step("health reports pool figures and never leases a worker", async () => {
    for (const path of ["/health", "/health/ready"]) {
      const response = await fetch(`${svc.url}${path}`);
      assert.equal(response.status, 200);
      const body = await response.json();
      assert.equal(body.status, "Healthy");
      for (const key of ["warm", "leased", "resetting", "creating", "total", "min", "max"]) {
        assert.equal(typeof body.pool[key], "number", `${path} lacks ${key}`);
      }
      assert.equal(body.pool.leased, 0);
    }
  });

  await t.step(
    "each call gets a clean worker: nothing one call leaves is seen by the next",
    async () => {
      for (let round = 0; round < 50; round++) {
        const read = await post(`${svc.url}/call`, {
          tool: "get_variable",
          arguments: { Name: ["leftover", "fromStartup"], ValueOnly: true },
        });
        const body = read.body as { structuredContent: { output: unknown[] } };
        assert.deepEqual(
          body.structuredContent.output,
          ["yes"],
          `round ${round} saw state from an earlier call`,
        );
        await post(`${svc.url}/call`, {
          tool: "set_variable",
          arguments: { Name: "leftover", Value: round },
        });
        await post(`${svc.url}/call`, { tool: "set_location_path", arguments: { Path: "/tmp" } });
        const where = await post(`${svc.url}/call`, {
          tool: "get_location_location",
          arguments: {},
        });
        const path = (where.body as { structuredContent: { output: { Path: string }[] } })
          .structuredContent.output[0]?.Path;
        assert.notEqual(path, "/tmp", `round ${round} inherited the location of an earlier call`);
      }
    },
  );

  await t.step("100 concurrent calls each see a clean worker", async () => {
    const results = await Promise.all(Array.from({ length: 100 }, async (_, i) => {
      const read = await post(`${svc.url}/call`, {
        tool: "get_variable",
        arguments: { Name: ["leftover", "fromStartup"], ValueOnly: true },
      });
      await post(`${svc.url}/call`, {
        tool: "set_variable",
        arguments: { Name: "leftover", Value: i },
      });
      return (read.body as { structuredContent: { output: unknown[] } }).structuredContent.output;
    }));
    for (const output of results) assert.deepEqual(output, ["yes"]);
    // A sibling runspace opened while the pool grew is the host's, not a call's leftover: taken for
    // one, every reset during growth retired its process (35 times here, and 20 s for this step).
    assert.doesNotMatch(svc.stderr(), /a call left runspace \d+ open/);
  });
});

Deno.test("http Stateful mode issues sessions, ends them on DELETE and expires idle ones", async (t) => {
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: { HttpTransportMode: "Stateful", IdleSessionTimeoutSeconds: 2 },
    },
  });

  await t.step(
    "initialize issues Mcp-Session-Id; DELETE answers 200; the id is then 404",
    async () => {
      const init = await post(svc.url, INIT("2025-11-25"));
      assert.equal(init.status, 200);
      const id = init.headers.get("mcp-session-id");
      assert.ok(id, "a session id is issued");
      const headers = { "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" };
      const list = await post(
        svc.url,
        { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} },
        headers,
      );
      assert.equal(list.status, 200);
      const deleted = await fetch(svc.url, { method: "DELETE", headers });
      assert.equal(deleted.status, 200);
      await deleted.body?.cancel();
      const after = await post(
        svc.url,
        { jsonrpc: "2.0", id: 3, method: "tools/list", params: {} },
        headers,
      );
      assert.equal(after.status, 404);
    },
  );

  await t.step("GET with the session id opens the server-to-client event stream", async () => {
    const init = await post(svc.url, INIT("2025-11-25"));
    const id = init.headers.get("mcp-session-id")!;
    const controller = new AbortController();
    const stream = await fetch(svc.url, {
      headers: {
        accept: "text/event-stream",
        "mcp-session-id": id,
        "mcp-protocol-version": "2025-11-25",
      },
      signal: controller.signal,
    });
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get("content-type") ?? "", /text\/event-stream/);
    controller.abort();
    await stream.body?.cancel().catch(() => {});
    const deleted = await fetch(svc.url, { method: "DELETE", headers: { "mcp-session-id": id } });
    assert.equal(deleted.status, 200);
    await deleted.body?.cancel();
  });

  await t.step("a session idle longer than IdleSessionTimeoutSeconds is 404", async () => {
    const init = await post(svc.url, INIT("2025-11-25"));
    const id = init.headers.get("mcp-session-id")!;
    await new Promise((r) => setTimeout(r, 2_900));
    const late = await post(svc.url, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, {
      "mcp-session-id": id,
      "mcp-protocol-version": "2025-11-25",
    });
    assert.equal(late.status, 404);
  });

  await t.step("a call longer than IdleSessionTimeoutSeconds keeps its session", async () => {
    const init = await post(svc.url, INIT("2025-11-25"));
    const headers = {
      "mcp-session-id": init.headers.get("mcp-session-id")!,
      "mcp-protocol-version": "2025-11-25",
    };
    const call = await post(svc.url, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "start_sleep_seconds", arguments: { Seconds: 3 } },
    }, headers);
    assert.equal(call.status, 200);
    const next = await post(
      svc.url,
      { jsonrpc: "2.0", id: 3, method: "tools/list", params: {} },
      headers,
    );
    assert.equal(next.status, 200, "the session outlived its long call");
    const deleted = await fetch(svc.url, { method: "DELETE", headers });
    await deleted.body?.cancel();
  });

  await t.step(
    "the v1 client works with a session; the session never keeps shell state",
    async () => {
      const client = new V1Client({ name: "t1", version: "1" });
      const transport = new V1HttpTransport(new URL(`${svc.url}/mcp`));
      await client.connect(transport);
      try {
        assert.ok(transport.sessionId);
        await client.callTool({
          name: "set_variable",
          arguments: { Name: "sessionState", Value: "x" },
        });
        const read = await client.callTool({
          name: "get_variable",
          arguments: { Name: ["sessionState"] },
        });
        assert.equal(read.isError, true, "state does not persist within a session");
      } finally {
        await client.close();
      }
    },
  );

  await t.step("2026-07-28 clients are served alongside", async () => {
    const client = new Client({ name: "t", version: "1" }, {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(svc.url)));
    try {
      const result = await client.callTool({
        name: "get_fixture_greeting",
        arguments: { Name: "both" },
      });
      assert.deepEqual(outputOf(result), ["Hello, both!"]);
    } finally {
      await client.close();
    }
  });
});

Deno.test("http serves the deprecated HTTP+SSE transport when enabled, even in Stateless mode, and its stream carries a prompt's question and log messages", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { EnableLegacySse: true } },
  });
  const client = new V1Client({ name: "sse", version: "1" }, {
    capabilities: { elicitation: {} },
  });
  // The user answers Read-Host's one field, whatever the form names it.
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, (request: { params: unknown }) => {
    const params = request.params as { message: string; requestedSchema: { properties: object } };
    asked.push(params.message);
    const [field] = Object.keys(params.requestedSchema.properties);
    return Promise.resolve({ action: "accept" as const, content: { [field!]: "teal" } });
  });
  await client.connect(new V1SseTransport(new URL(`${svc.url}/sse`)));
  try {
    const result = await client.callTool({
      name: "get_fixture_greeting",
      arguments: { Name: "sse" },
    });
    assert.deepEqual(outputOf(result), ["Hello, sse!"]);
    const prompted = await client.callTool({ name: "read_fixture_prompt", arguments: {} });
    assert.notEqual(prompted.isError, true, textOf(prompted));
    assert.deepEqual(outputOf(prompted), ["teal"]);
    assert.deepEqual(asked, ["Read-FixturePrompt: Favourite colour"]);
    // The connection keeps its log level: warnings and information arrive, verbose and debug not.
    const messages: unknown[] = [];
    client.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (notification: { params: { level: string; data: unknown } }) => {
        messages.push([notification.params.level, notification.params.data]);
      },
    );
    await client.setLoggingLevel("info");
    await client.callTool({ name: "test_logging_tool", arguments: {} });
    assert.deepEqual(messages, [
      ["warning", "logging tool warning"],
      ["info", "logging tool info"],
    ]);
  } finally {
    await client.close();
  }
});

Deno.test("http --mcp-path serves MCP only at the dedicated path", async () => {
  await using svc = await startHttpSvc({ args: ["--mcp-path", "custom/endpoint"] });
  assert.equal((await post(`${svc.url}/custom/endpoint`, INIT("2025-11-25"))).status, 200);
  assert.equal((await post(`${svc.url}/mcp`, INIT("2025-11-25"))).status, 404);
  assert.equal((await post(svc.url, INIT("2025-11-25"))).status, 404);
});

Deno.test("a tool call's text names the error when the command fails over HTTP", async () => {
  await using svc = await startHttpSvc();
  const response = await post(`${svc.url}/call`, {
    tool: "invoke_fixture_error",
    arguments: { Message: "http boom", Terminating: true },
  });
  assert.equal(response.status, 200);
  const result = response.body as { isError: boolean; content: unknown };
  assert.equal(result.isError, true);
  assert.match(textOf(result), /http boom/);
});

Deno.test("http: a per-call time limit stops the command, and a client that disconnects frees its worker", async () => {
  await using svc = await startHttpSvc({
    config: fixtureConfig({ CommandOverrides: { "Start-Sleep": { ToolCallTimeout: "00:00:01" } } }),
  });
  // The catalog first, so that the clock below starts at the call, not at a cold discovery.
  assert.equal((await fetch(`${svc.url}/tools`).then((r) => r.json())).tools.length > 0, true);
  const started = Date.now();
  const limited = await post(`${svc.url}/call`, {
    tool: "start_sleep_seconds",
    arguments: { Seconds: 60 },
  });
  // Well short of the 60 s sleep, with room for two busy cores.
  assert.ok(Date.now() - started < 10_000, `the call took ${Date.now() - started} ms`);
  const result = limited.body as { isError: boolean; content: unknown };
  assert.equal(result.isError, true);
  assert.match(textOf(result), /timed out after 1 s/);

  const pool = async () =>
    (await (await fetch(`${svc.url}/health`)).json()).pool as { leased: number; resetting: number };
  const controller = new AbortController();
  const call = fetch(`${svc.url}/call`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tool: "start_sleep_milliseconds", arguments: { Milliseconds: 30_000 } }),
    signal: controller.signal,
  });
  assert.ok(await eventually(async () => (await pool()).leased === 1), "the call holds a worker");
  controller.abort();
  await call.catch(() => {});
  assert.ok(
    await eventually(async () => {
      const { leased, resetting } = await pool();
      return leased === 0 && resetting === 0;
    }, 15_000),
    "the cancelled call's worker came back long before its 30 s sleep would have ended",
  );
});

Deno.test("http: a 2025-11-25 client that disconnects mid-call stops the call, not just the time limit", async () => {
  await using svc = await startHttpSvc({ config: fixtureConfig() });
  const controller = new AbortController();
  const call = fetch(svc.url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "start_sleep_seconds", arguments: { Seconds: 30 } },
    }),
    signal: controller.signal,
  });
  const pool = async () =>
    (await (await fetch(`${svc.url}/health`)).json()).pool as { leased: number; resetting: number };
  assert.ok(await eventually(async () => (await pool()).leased === 1), "the call holds a worker");
  controller.abort();
  await call.catch(() => {});
  const aborted = Date.now();
  // Freed well before the 30 s sleep would have ended, with room for two busy cores.
  assert.ok(
    await eventually(async () => {
      const { leased, resetting } = await pool();
      return leased === 0 && resetting === 0;
    }, 15_000),
    `the worker was not freed ${Date.now() - aborted} ms after the client went away`,
  );
});
