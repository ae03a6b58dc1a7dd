/** The front composed: the order a request meets its parts, answered without a socket. */
import assert from "node:assert/strict";
import { Authenticator } from "../lib/auth.ts";
import { HttpFront } from "../lib/http_front.ts";
import type { PoolHealth } from "../lib/http_health.ts";
import { withHeader } from "../lib/http_responses.ts";
import type { ToolRunner } from "../lib/call.ts";
import type { PoolStats } from "../lib/pool_contract.ts";
import {
  BASE,
  errorIn,
  logsOf,
  mcpOptionsOf,
  requestTo,
  runnerOf,
  settingsOf,
} from "./support/http_front.ts";

const POOL: PoolHealth = {
  stats: (): PoolStats => ({
    warm: 2,
    leased: 0,
    resetting: 0,
    creating: 0,
    total: 2,
    min: 2,
    max: 4,
    draining: false,
    startFailing: false,
  }),
  status: () => "Healthy",
};

const BEARER = {
  Enabled: true,
  DefaultScheme: "entra",
  DefaultPolicy: { RequireAuthentication: true },
  Schemes: {
    entra: { Type: "JwtBearer", Authority: "https://login.example/t", Audience: "api://svc" },
  },
};

async function frontOf(
  config: Record<string, unknown> = {},
  runner: ToolRunner = runnerOf([]),
  mcpPath: string | null = null,
) {
  const settings = await settingsOf(config);
  const front = new HttpFront({
    // `--mcp-path` is a flag (and SVC_MCP_PATH), not a configuration key.
    http: { ...settings.http, mcpPath },
    pool: POOL,
    mcp: mcpOptionsOf(settings, runner),
    auth: new Authenticator({ auth: settings.auth, shell: settings.shell }),
  });
  return { front, [Symbol.asyncDispose]: () => front.closeStreams() };
}

Deno.test("health answers before the Host check; every answer carries the correlation id", async () => {
  await using f = await frontOf();
  const health = await f.front.handle(
    requestTo("/health", { headers: { host: "evil.example", "x-correlation-id": "given-1" } }),
  );
  assert.equal(health.status, 200);
  assert.equal(health.headers.get("x-correlation-id"), "given-1");
  assert.equal((await health.json()).status, "Healthy");
  const tools = await f.front.handle(requestTo("/tools", { headers: { host: "evil.example" } }));
  assert.equal(tools.status, 403);
  assert.match(tools.headers.get("x-correlation-id")!, /^\d{8}-\d{6}-[0-9a-f]{8}$/);
  assert.equal(tools.headers.get("vary"), "Origin");
  assert.match((await errorIn(tools)).message, /Host 'evil\.example' is not served here/);
});

Deno.test("a preflight from an allowed origin is 204 with CORS; a foreign origin is 403 without", async () => {
  await using f = await frontOf({
    Authentication: { Cors: { AllowedOrigins: ["https://app.example"] } },
  });
  const preflight = await f.front.handle(
    requestTo("/mcp", { method: "OPTIONS", headers: { origin: "https://app.example" } }),
  );
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get("access-control-allow-origin"), "https://app.example");
  const foreign = await f.front.handle(
    requestTo("/mcp", { method: "OPTIONS", headers: { origin: "https://evil.example" } }),
  );
  assert.equal(foreign.status, 403);
  assert.equal(foreign.headers.get("access-control-allow-origin"), null);
});

Deno.test("an unknown path is 404 before authentication; a known one asks for credentials", async () => {
  await using f = await frontOf({ Authentication: BEARER });
  const missing = await f.front.handle(requestTo("/nothing"));
  assert.equal(missing.status, 404);
  assert.deepEqual(await missing.json(), {
    jsonrpc: "2.0",
    id: null,
    error: { code: -32000, message: "Not found: GET /nothing" },
  });
  const mcp = await f.front.handle(requestTo("/mcp", { body: {} }));
  assert.equal(mcp.status, 401);
  assert.match(
    mcp.headers.get("www-authenticate")!,
    new RegExp(`resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp"`),
  );
  const tools = await f.front.handle(requestTo("/tools"));
  assert.equal(tools.status, 401);
  assert.match(
    tools.headers.get("www-authenticate")!,
    new RegExp(`resource_metadata="${BASE}/.well-known/oauth-protected-resource"$`),
  );
  const metadata = await f.front.handle(requestTo("/.well-known/oauth-protected-resource/mcp"));
  assert.equal(metadata.status, 200, "metadata needs no credentials");
  assert.equal((await metadata.json()).resource, `${BASE}/mcp`);
});

Deno.test("routes: legacy SSE only when enabled, a dedicated MCP path only, methods per route", async () => {
  await using plain = await frontOf();
  assert.equal((await plain.front.handle(requestTo("/sse"))).status, 404);
  assert.equal((await plain.front.handle(requestTo("/tools"))).status, 200);
  // Paths are matched as sent: a proxy that allows `/tools` only and svc agree on `/tools/`.
  for (const path of ["/tools/", "/call/", "/health/", "/mcp//"]) {
    assert.equal((await plain.front.handle(requestTo(path))).status, 404, path);
  }
  const wrong = await plain.front.handle(requestTo("/tools", { method: "DELETE" }));
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get("allow"), "GET");
  await using legacy = await frontOf({ McpServer: { EnableLegacySse: true } });
  const post = await legacy.front.handle(requestTo("/sse", { body: {} }));
  assert.equal(post.status, 405);
  assert.equal((await errorIn(post)).message, "Method POST is not allowed on /sse");
  const get = await legacy.front.handle(requestTo("/messages"));
  assert.equal((await errorIn(get)).message, "Method GET is not allowed on /messages");
  const stream = await legacy.front.handle(requestTo("/sse"));
  assert.match(stream.headers.get("content-type")!, /text\/event-stream/);
  await stream.body!.cancel();
  await using dedicated = await frontOf({}, runnerOf([]), "/custom");
  assert.equal((await dedicated.front.handle(requestTo("/", { body: {} }))).status, 404);
  assert.equal((await dedicated.front.handle(requestTo("/mcp", { body: {} }))).status, 404);
  const custom = await dedicated.front.handle(requestTo("/custom", { method: "GET" }));
  assert.equal(
    (await errorIn(custom)).message,
    "GET needs a session (McpServer:HttpTransportMode=Stateful)",
  );
});

Deno.test("an unexpected error is a logged 500 naming the correlation id", async () => {
  const broken: ToolRunner = {
    tools: () => Promise.reject(new Error("catalog exploded")),
    withWorker: () => Promise.reject(new Error("unused")),
  };
  await using f = await frontOf({}, broken);
  let response: Response | undefined;
  const lines = await logsOf(async () => {
    response = await f.front.handle(
      requestTo("/tools", { headers: { "x-correlation-id": "corr-500" } }),
    );
  });
  assert.equal(response!.status, 500);
  assert.deepEqual(await errorIn(response!), {
    code: -32603,
    message: "Internal error; correlation id corr-500",
  });
  const logged = lines.find((line) => line.text.startsWith("Unhandled error for GET /tools"));
  assert.equal(logged?.level, "error");
  assert.match(logged!.text, /catalog exploded/);
  assert.equal(logged!.properties.CorrelationId, "corr-500");
});

Deno.test("withHeader() sets a header on a response whose headers are immutable by copying it", async () => {
  const redirect = withHeader(Response.redirect(`${BASE}/x`, 302), "x-correlation-id", "c");
  assert.equal(redirect.status, 302);
  assert.equal(redirect.headers.get("x-correlation-id"), "c");
  assert.equal(redirect.headers.get("location"), `${BASE}/x`);
  const plain = new Response("body");
  assert.equal(withHeader(plain, "x-a", "1"), plain, "a mutable response is changed in place");
  assert.equal(await plain.text(), "body");
});
