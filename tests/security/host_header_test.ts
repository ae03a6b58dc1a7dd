/**
 * Host is checked by default on every bind, including 0.0.0.0 (DNS rebinding): without
 * `AllowedHosts`, svc answers only to loopback names and its own addresses; a rebinding page's
 * `Host: evil.example` (with a matching `Origin`), an internal address or no Host at all is refused
 * on /call, /mcp, /tools and GET /sse. URLs svc builds come only from a checked Host, header values
 * are quoted, and the RFC 9728 `resource` is never a `ValidAudiences` entry.
 */
import assert from "node:assert/strict";
import { fixtureConfig, startHttpSvc } from "../support/harness.ts";
import { rawRequest } from "./raw_http.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };
const CALL = JSON.stringify({ tool: "get_fixture_greeting", arguments: { Name: "rebind" } });
const INIT = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "page", version: "1" },
  },
});

/** The requests a rebinding page makes, each with the given extra headers. */
function attacks(headers: Record<string, string>) {
  const json = { ...headers, "Content-Type": "application/json" };
  return [
    { method: "POST", path: "/call", headers: json, body: CALL },
    {
      method: "POST",
      path: "/mcp",
      headers: { ...json, Accept: "application/json, text/event-stream" },
      body: INIT,
    },
    { method: "GET", path: "/tools", headers },
    { method: "GET", path: "/sse", headers: { ...headers, Accept: "text/event-stream" } },
  ];
}

function localUrl(url: string): string {
  return url.replace("0.0.0.0", "127.0.0.1");
}

function ownAddress(): string | null {
  const found = Deno.networkInterfaces().find((i) =>
    i.family === "IPv4" && !i.address.startsWith("127.")
  );
  return found?.address ?? null;
}

Deno.test("bound to 0.0.0.0 without AllowedHosts: a rebinding page, an internal name or no Host is refused", async (t) => {
  const config = {
    ...fixtureConfig(),
    McpServer: { RunspacePool: LIGHT_POOL, EnableLegacySse: true },
  };
  await using svc = await startHttpSvc({
    config,
    args: ["--host", "0.0.0.0", "--allow-anonymous"],
  });
  const url = localUrl(svc.url);
  const port = new URL(url).port;

  await t.step("Host evil.example with the matching Origin: 403 on every endpoint", async () => {
    const evil = `evil.example:${port}`;
    for (const request of attacks({ Host: evil, Origin: `http://${evil}` })) {
      const response = await rawRequest(url, request);
      assert.equal(response.status, 403, `${request.method} ${request.path}`);
      assert.doesNotMatch(response.body, /Hello, rebind/);
    }
  });

  await t.step("an internal address, a malformed Host or none at all: refused", async () => {
    for (const host of ["169.254.169.254", "evil.example:1@127.0.0.1", "127.0.0.1 evil", null]) {
      for (const request of attacks(host === null ? {} : { Host: host })) {
        const response = await rawRequest(url, request);
        assert.ok(
          response.status === 403 || response.status === 400,
          `${request.method} ${request.path} with Host ${host}: ${response.status}`,
        );
        assert.doesNotMatch(response.body, /Hello, rebind/);
      }
    }
  });

  await t.step("loopback names and the machine's own address are served", async () => {
    const hosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
    const own = ownAddress();
    if (own) hosts.push(`${own}:${port}`);
    for (const host of hosts) {
      const response = await rawRequest(url, {
        method: "POST",
        path: "/call",
        headers: { Host: host, "Content-Type": "application/json", Origin: `http://${host}` },
        body: CALL,
      });
      assert.equal(response.status, 200, `Host ${host}: ${response.body}`);
      assert.match(response.body, /Hello, rebind/);
    }
  });
});

Deno.test("AllowedHosts adds names (and subdomains with *.); everything else stays refused", async () => {
  const config = {
    ...fixtureConfig(),
    McpServer: { RunspacePool: LIGHT_POOL, AllowedHosts: ["svc.example.com", "*.corp.example"] },
  };
  await using svc = await startHttpSvc({
    config,
    args: ["--host", "0.0.0.0", "--allow-anonymous"],
  });
  const url = localUrl(svc.url);
  const status = async (host: string) =>
    (await rawRequest(url, { method: "GET", path: "/tools", headers: { Host: host } })).status;
  assert.equal(await status("svc.example.com"), 200);
  assert.equal(await status("SVC.example.com:443"), 200);
  assert.equal(await status("a.corp.example"), 200);
  assert.equal(await status("corp.example.evil.example"), 403);
  assert.equal(await status("evil.example"), 403);
});

Deno.test("challenges and metadata: URLs only from a checked Host, values quoted, resource never another audience", async (t) => {
  const config = {
    ...fixtureConfig(),
    McpServer: { RunspacePool: LIGHT_POOL },
    Authentication: {
      Enabled: true,
      Schemes: {
        entra: {
          Type: "JwtBearer",
          // Never fetched: no request here carries a token.
          JwksUri: "http://127.0.0.1:9/jwks",
          ValidIssuers: ["http://127.0.0.1:9"],
          Audience: "api://svc",
          ValidAudiences: ["http://internal.example/secret-api"],
        },
      },
    },
  };
  await using svc = await startHttpSvc({ config, args: ["--host", "0.0.0.0"] });
  const url = localUrl(svc.url);
  const port = new URL(url).port;

  await t.step("a Host with quotes cannot inject parameters into WWW-Authenticate", async () => {
    for (const host of [`evil.example",error="invalid_request`, `localhost:${port}",x="y`]) {
      const response = await rawRequest(url, {
        method: "GET",
        path: "/tools",
        headers: { Host: host },
      });
      assert.ok(response.status === 403 || response.status === 400, `${host}: ${response.status}`);
      assert.equal(response.headers.get("www-authenticate"), undefined);
    }
  });

  await t.step("a foreign Host gets no metadata naming it", async () => {
    const response = await rawRequest(url, {
      method: "GET",
      path: "/.well-known/oauth-protected-resource/mcp",
      headers: { Host: "evil.example" },
    });
    assert.equal(response.status, 403);
    assert.doesNotMatch(response.body, /"resource"/);
  });

  await t.step("on an accepted Host, the challenge and the metadata name that Host", async () => {
    const host = `localhost:${port}`;
    const challenge = await rawRequest(url, {
      method: "GET",
      path: "/mcp",
      headers: { Host: host },
    });
    assert.equal(challenge.status, 401);
    assert.equal(
      challenge.headers.get("www-authenticate"),
      `Bearer resource_metadata="http://${host}/.well-known/oauth-protected-resource/mcp"`,
    );
    const metadata = await rawRequest(url, {
      method: "GET",
      path: "/.well-known/oauth-protected-resource/mcp",
      headers: { Host: host },
    });
    assert.equal(metadata.status, 200);
    const body = JSON.parse(metadata.body);
    // Audience api://svc is not an https URL and ValidAudiences are never published.
    assert.equal(body.resource, `http://${host}/mcp`);
    assert.doesNotMatch(metadata.body, /internal\.example/);
  });
});
