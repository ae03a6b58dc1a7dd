/** The MCP endpoint: dispatch by method, protocol era and session mode, without a socket. */
import assert from "node:assert/strict";
import type { PromptAnswer, WorkerPrompt } from "../lib/worker_protocol.ts";
import { BodyBudget } from "../lib/http_body.ts";
import { McpEndpoint } from "../lib/http_mcp.ts";
import { TOOLS_LIST_TTL_MS, toolsListCacheHint } from "../lib/mcp.ts";
import { StatefulSessions } from "../lib/http_sessions.ts";
import { StreamLimiter } from "../lib/http_streams.ts";
import { arg, toolOf } from "./support/descriptors.ts";
import {
  ANONYMOUS_CALLER,
  keyCaller,
  mcpOptionsOf,
  refusal,
  requestTo,
  runnerOf,
  settingsOf,
} from "./support/http_front.ts";

const INIT = (version: string) => ({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: version,
    capabilities: {},
    clientInfo: { name: "unit", version: "1" },
  },
});
const LIST = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };
const JSON_ONLY = { accept: "application/json" };

/**
 * An endpoint in `mode` offering one tool; `using` closes it (and its sessions' sweep). A call gets
 * a worker whose invoke fails, after telling `invoked` the options it got.
 */
async function endpointOf(
  mode: "Stateless" | "Stateful",
  invoked: (options: Record<string, unknown>) => void = () => {},
) {
  const settings = await settingsOf({
    McpServer: { HttpTransportMode: mode, SessionIdPrefix: "replica1" },
  });
  const worker = {
    invoke: (_request: unknown, options: Record<string, unknown>) => {
      invoked(options);
      return Promise.reject(new Error("no worker in unit tests"));
    },
  };
  const runner = runnerOf(
    [toolOf("get_greeting", [arg("Name")])],
    (_call, use) => use(worker as unknown as Parameters<typeof use>[0]),
  );
  const mcp = mcpOptionsOf(settings, runner);
  const sessions = new StatefulSessions({
    mcp,
    idleSessionTimeoutMs: settings.http.idleSessionTimeoutMs,
    sessionIdPrefix: settings.http.sessionIdPrefix,
    streams: new StreamLimiter(settings.http.limits),
  });
  const endpoint = new McpEndpoint({
    mcp,
    mode,
    sessions,
    bodyBounds: { limit: 4096, timeoutMs: 5_000, budget: new BodyBudget(1 << 20) },
  });
  return {
    endpoint,
    sessions,
    async [Symbol.asyncDispose]() {
      await sessions.close();
      await endpoint.close();
    },
  };
}

Deno.test("Stateless: a 2025-11-25 request is answered without a session, in the format Accept asks", async () => {
  await using mcp = await endpointOf("Stateless");
  const json = await mcp.endpoint.handle(
    requestTo("/mcp", { body: INIT("2025-11-25"), headers: JSON_ONLY }),
    ANONYMOUS_CALLER,
  );
  assert.equal(json.status, 200);
  assert.match(json.headers.get("content-type")!, /application\/json/);
  assert.equal(json.headers.get("mcp-session-id"), null);
  assert.equal((await json.json()).result.protocolVersion, "2025-11-25");
  const sse = await mcp.endpoint.handle(
    requestTo("/mcp", { body: INIT("2025-11-25"), headers: { accept: "text/event-stream" } }),
    ANONYMOUS_CALLER,
  );
  assert.match(sse.headers.get("content-type")!, /text\/event-stream/);
  assert.match(await sse.text(), /"protocolVersion":"2025-11-25"/);
  const list = await mcp.endpoint.handle(
    requestTo("/mcp", {
      body: LIST,
      headers: { ...JSON_ONLY, "mcp-protocol-version": "2025-11-25" },
    }),
    ANONYMOUS_CALLER,
  );
  assert.deepEqual((await list.json()).result.tools.map((t: { name: string }) => t.name), [
    "get_greeting",
  ]);
});

Deno.test("Stateless: a plain 2025-era tools/call is answered as the SDK answers it, without it", async () => {
  let invoked = 0;
  await using mcp = await endpointOf("Stateless", () => invoked++);
  const headers = { ...JSON_ONLY, "mcp-protocol-version": "2025-11-25" };
  const answer = async (params: Record<string, unknown>, id: string | number) => {
    const response = await mcp.endpoint.handle(
      requestTo("/mcp", { body: { jsonrpc: "2.0", id, method: "tools/call", params }, headers }),
      ANONYMOUS_CALLER,
    );
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      body: await response.text(),
    };
  };
  // A key of params the SDK ignores, but svc's own answer does not take: the SDK answers those.
  const viaSdk = (params: Record<string, unknown>) => ({ ...params, viaSdk: true });
  const cases: [Record<string, unknown>, string | number][] = [
    [{ name: "get_greeting", arguments: { Name: "Ada" } }, 1], // the worker fails: a tool error
    [{ name: "get_greeting", arguments: { Name: 7 } }, "a"], // an argument of the wrong type
    [{ name: "get_greeting" }, 2], // a required argument missing
    [{ name: "no_such_tool", arguments: {} }, 3], // a protocol error
    [{ name: "get_greeting", arguments: { Name: "Ada" }, _meta: { trace: "x" } }, 4],
  ];
  for (const [params, id] of cases) {
    const before = invoked;
    const direct = await answer(params, id);
    const directInvokes = invoked - before;
    const sdk = await answer(viaSdk(params), id);
    assert.deepEqual(direct, sdk, JSON.stringify(params));
    assert.equal(invoked - before - directInvokes, directInvokes, "the worker was asked alike");
    assert.equal(direct.status, 200);
    assert.match(direct.body, new RegExp(`"id":${JSON.stringify(id)}`));
  }
  assert.ok(invoked > 0, "the valid calls reached the worker");
});

Deno.test("Stateless: a 2026-07-28 request goes to the SDK's handler", async () => {
  await using mcp = await endpointOf("Stateless");
  const response = await mcp.endpoint.handle(
    requestTo("/mcp", {
      body: {
        ...LIST,
        params: {
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      },
      headers: { ...JSON_ONLY, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" },
    }),
    ANONYMOUS_CALLER,
  );
  assert.equal(response.status, 200, await response.clone().text());
  assert.deepEqual((await response.json()).result.tools.map((t: { name: string }) => t.name), [
    "get_greeting",
  ]);
});

Deno.test("Stateless: session ids, GET and DELETE are refused as before, with their Allow headers", async () => {
  await using mcp = await endpointOf("Stateless");
  const withId = await refusal(mcp.endpoint.handle(
    requestTo("/mcp", {
      body: LIST,
      headers: { "mcp-protocol-version": "2025-11-25", "mcp-session-id": "x" },
    }),
    ANONYMOUS_CALLER,
  ));
  assert.deepEqual([withId.status, withId.message], [
    400,
    "Bad Request: Mcp-Session-Id is not used in Stateless mode",
  ]);
  for (const method of ["GET", "DELETE"]) {
    const error = await refusal(
      mcp.endpoint.handle(requestTo("/mcp", { method }), ANONYMOUS_CALLER),
    );
    assert.deepEqual([error.status, error.headers.allow], [405, "POST"], method);
    assert.equal(error.message, `${method} needs a session (McpServer:HttpTransportMode=Stateful)`);
    const named = await refusal(
      mcp.endpoint.handle(
        requestTo("/mcp", { method, headers: { "mcp-session-id": "x" } }),
        ANONYMOUS_CALLER,
      ),
    );
    assert.equal(named.status, 400);
  }
  const put = await refusal(
    mcp.endpoint.handle(requestTo("/mcp", { method: "PUT", body: "{}" }), ANONYMOUS_CALLER),
  );
  assert.deepEqual([put.status, put.headers.allow], [405, "GET, POST, DELETE"]);
});

Deno.test("a POST body must be application/json and JSON", async () => {
  await using mcp = await endpointOf("Stateless");
  const text = await refusal(mcp.endpoint.handle(
    requestTo("/mcp", { body: "{}", headers: { "content-type": "text/plain" } }),
    ANONYMOUS_CALLER,
  ));
  assert.equal(text.status, 415);
  const broken = await refusal(mcp.endpoint.handle(
    requestTo("/mcp", { body: "{", headers: { "content-type": "application/json" } }),
    ANONYMOUS_CALLER,
  ));
  assert.deepEqual([broken.status, broken.code, broken.message], [
    400,
    -32700,
    "Parse error: the request body is not JSON",
  ]);
});

Deno.test("Stateful: initialize opens a session its owner uses and ends; others get 403, unknown ids 404", async () => {
  await using mcp = await endpointOf("Stateful");
  const alice = keyCaller("alice");
  const opened = await mcp.endpoint.handle(
    requestTo("/mcp", { body: INIT("2025-11-25"), headers: JSON_ONLY }),
    alice,
  );
  assert.equal(opened.status, 200);
  const id = opened.headers.get("mcp-session-id")!;
  assert.match(id, /^replica1\.[0-9a-f-]{36}$/);
  await opened.body?.cancel();
  assert.equal(mcp.sessions.size, 1);
  const headers = { ...JSON_ONLY, "mcp-protocol-version": "2025-11-25", "mcp-session-id": id };
  const list = await mcp.endpoint.handle(requestTo("/mcp", { body: LIST, headers }), alice);
  assert.equal(list.status, 200);
  assert.equal((await list.json()).result.tools.length, 1);
  const bob = await refusal(
    mcp.endpoint.handle(requestTo("/mcp", { body: LIST, headers }), keyCaller("bob")),
  );
  assert.deepEqual([bob.status, bob.message], [
    403,
    "Forbidden: the session belongs to another caller",
  ]);
  const noId = await refusal(mcp.endpoint.handle(
    requestTo("/mcp", { body: LIST, headers: { "mcp-protocol-version": "2025-11-25" } }),
    alice,
  ));
  assert.deepEqual([noId.status, noId.message], [
    400,
    "Bad Request: Mcp-Session-Id header required",
  ]);
  const getNoId = await refusal(mcp.endpoint.handle(requestTo("/mcp"), alice));
  assert.equal(getNoId.status, 400);
  const ended = await mcp.endpoint.handle(
    requestTo("/mcp", { method: "DELETE", headers: { "mcp-session-id": id } }),
    alice,
  );
  assert.equal(ended.status, 200);
  assert.equal(mcp.sessions.size, 0);
  const gone = await refusal(
    mcp.endpoint.handle(requestTo("/mcp", { body: LIST, headers }), alice),
  );
  assert.deepEqual([gone.status, gone.code, gone.message], [404, -32001, "Session not found"]);
});

Deno.test("a 2025-11-25 call may prompt only in a session that answers in SSE, for a client that declared elicitation", async () => {
  // Every call's prompts reach svc; only these can reach the client's user, the others are
  // answered at once: nobody can be asked.
  type Ask = (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>;
  const asks: Ask[] = [];
  await using mcp = await endpointOf("Stateful", (options) => {
    asks.push(options["onPrompt"] as Ask);
  });
  const caller = keyCaller("alice");
  const call = { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "get_greeting" } };
  const init = {
    ...INIT("2025-11-25"),
    params: { ...INIT("2025-11-25").params, capabilities: { elicitation: {} } },
  };
  for (const accept of ["application/json, text/event-stream", "application/json"]) {
    const opened = await mcp.endpoint.handle(
      requestTo("/mcp", { body: init, headers: { accept } }),
      caller,
    );
    await opened.body?.cancel();
    const headers = {
      accept,
      "mcp-protocol-version": "2025-11-25",
      "mcp-session-id": opened.headers.get("mcp-session-id")!,
    };
    const called = await mcp.endpoint.handle(requestTo("/mcp", { body: call, headers }), caller);
    assert.match(await called.text(), /no worker in unit tests/);
  }
  await using stateless = await endpointOf("Stateless", (options) => {
    asks.push(options["onPrompt"] as Ask);
  });
  const headers = { "mcp-protocol-version": "2025-11-25" };
  await (await stateless.endpoint.handle(requestTo("/mcp", { body: init, headers }), caller))
    .text();
  const called = await stateless.endpoint.handle(
    requestTo("/mcp", { body: call, headers }),
    caller,
  );
  assert.match(await called.text(), /no worker in unit tests/);
  const prompt: WorkerPrompt = {
    seq: 1,
    kind: "text",
    caption: "",
    message: "",
    fields: [{ name: "Name", label: "Name", help: "", type: "string" }],
  };
  const answers = await Promise.all(asks.map((ask) => ask(prompt, AbortSignal.abort())));
  const interactive = answers.map((answer) => answer.action !== "unavailable");
  assert.deepEqual(interactive, [true, false, false], "SSE session, JSON session, Stateless");
});

Deno.test("a tool list is private where roles decide what a caller sees, and not kept where tools reload", () => {
  const hint = (authenticated: boolean, reloadOnChange: boolean) =>
    toolsListCacheHint({ authenticated, reloadOnChange });
  assert.deepEqual(hint(false, false), { ttlMs: TOOLS_LIST_TTL_MS, cacheScope: "public" });
  assert.deepEqual(hint(true, false), { ttlMs: TOOLS_LIST_TTL_MS, cacheScope: "private" });
  assert.deepEqual(hint(false, true), { ttlMs: 0, cacheScope: "public" });
  assert.deepEqual(hint(true, true), { ttlMs: 0, cacheScope: "private" });
});
