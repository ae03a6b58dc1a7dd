/**
 * Authentication and authorization over real HTTP: API keys (a matrix of missing, invalid and valid
 * keys × roles × per-tool overrides on MCP, /tools and /call), OAuth 2.1 bearer tokens against a local
 * OIDC/JWKS server started here, config validation, and a check that no secret ever reaches the logs.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  Client,
  ClientCredentialsProvider,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { Client as V1Client } from "sdk1/client/index.js";
import { StreamableHTTPClientTransport as V1HttpTransport } from "sdk1/client/streamableHttp.js";
import {
  errorOf,
  eventually,
  fixtureConfig,
  logged,
  post,
  runHttpSvc,
  startHttpSvc,
} from "./support/harness.ts";
import { type Issuer, startIssuer } from "./support/issuer.ts";

const SECRETS = {
  alice: "alice-secret-8f3a2d",
  bob: "bob-secret-77c1e0",
  poshMcp: "poshmcp-secret-key-5d2e9b",
  nobody: "nobody-secret-1b9c4f",
};

function apiKeyConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...fixtureConfig({
      CommandOverrides: {
        "Set-Variable": { RequiredRoles: ["ops"] },
        "get_fixture_greeting": { RequiredRoles: ["ops"] },
      },
    }),
    Authentication: {
      Enabled: true,
      DefaultScheme: "keys",
      DefaultPolicy: { RequireAuthentication: true, RequiredRoles: ["reader"] },
      Schemes: {
        keys: {
          Type: "ApiKey",
          // The poshMcp entry is PoshMcp's form: its name is the key.
          EntryNameIsKey: true,
          Keys: {
            alice: { Value: SECRETS.alice, Roles: ["reader"] },
            bob: { Sha256: createHash("sha256").update(SECRETS.bob).digest("hex"), Roles: ["ops"] },
            [SECRETS.poshMcp]: { Roles: ["reader", "ops"] },
            nobody: { Value: SECRETS.nobody, Roles: [] },
          },
        },
      },
      Cors: { AllowedOrigins: ["https://app.example"] },
      Audit: { LogArguments: true },
      ...extra,
    },
  };
}

async function getTools(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; names: string[] }> {
  const response = await fetch(`${url}/tools`, { headers });
  const body = await response.json();
  return {
    status: response.status,
    names: (body.tools ?? []).map((t: { name: string }) => t.name),
  };
}

Deno.test("API keys: missing, invalid and valid keys × roles × per-tool overrides on MCP, /tools and /call", async (t) => {
  await using svc = await startHttpSvc({ config: apiKeyConfig() });
  const key = (secret: string) => ({ "x-api-key": secret });

  await t.step(
    "no key, an empty key or a wrong key is 401 with a challenge; health stays anonymous",
    async () => {
      for (const headers of [{}, key(" "), key("not-a-key")]) {
        const tools = await fetch(`${svc.url}/tools`, { headers });
        assert.equal(tools.status, 401);
        assert.equal(tools.headers.get("www-authenticate"), 'ApiKey header="X-API-Key"');
        assert.match(
          errorOf(await tools.json()).message,
          /API key|Authentication is required|empty/,
        );
        const call = await post(`${svc.url}/call`, {
          tool: "get_fixture_item_by_id",
          arguments: { Id: [1] },
        }, headers);
        assert.equal(call.status, 401);
        const mcp = await post(`${svc.url}/mcp`, {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/list",
          params: {},
        }, headers);
        assert.equal(mcp.status, 401);
      }
      assert.equal((await fetch(`${svc.url}/health`)).status, 200);
      // Readiness dips while the worker that ran discovery resets; it is anonymous either way.
      assert.ok(
        await eventually(async () => (await fetch(`${svc.url}/health/ready`)).status === 200),
      );
    },
  );

  await t.step("a key with none of the required roles is 403", async () => {
    const response = await fetch(`${svc.url}/tools`, { headers: key(SECRETS.nobody) });
    assert.equal(response.status, 403);
    assert.match(errorOf(await response.json()).message, /none of the required roles/);
  });

  await t.step(
    "the default roles gate ordinary tools; override roles replace them per tool",
    async () => {
      const alice = await getTools(svc.url, key(SECRETS.alice));
      assert.equal(alice.status, 200);
      assert.ok(alice.names.includes("get_fixture_item_by_id"));
      assert.ok(
        !alice.names.includes("set_variable"),
        "Set-Variable needs ops (override by command name)",
      );
      assert.ok(
        !alice.names.includes("get_fixture_greeting"),
        "greeting needs ops (override by tool name)",
      );
      const bob = await getTools(svc.url, key(SECRETS.bob));
      assert.equal(bob.status, 200, "an override role is enough to be let in");
      assert.deepEqual(bob.names.sort(), ["get_fixture_greeting", "set_variable"]);
      const poshMcp = await getTools(svc.url, key(SECRETS.poshMcp));
      assert.ok(
        poshMcp.names.includes("set_variable") && poshMcp.names.includes("get_fixture_item_by_id"),
      );
    },
  );

  await t.step(
    "calling a hidden tool is refused like an unknown tool, on /call and over MCP",
    async () => {
      const hidden = await post(`${svc.url}/call`, {
        tool: "set_variable",
        arguments: { Name: "x", Value: 1 },
      }, key(SECRETS.alice));
      assert.equal(hidden.status, 404);
      assert.match(errorOf(hidden.body).message, /^Unknown tool 'set_variable'(;|$)/);
      const allowed = await post(`${svc.url}/call`, {
        tool: "set_variable",
        arguments: { Name: "x", Value: 1 },
      }, key(SECRETS.bob));
      assert.equal(allowed.status, 200);
      const client = new V1Client({ name: "auth", version: "1" });
      await client.connect(
        new V1HttpTransport(new URL(`${svc.url}/mcp`), {
          requestInit: { headers: key(SECRETS.alice) },
        }),
      );
      try {
        const { tools } = await client.listTools();
        assert.ok(!tools.some((tool: { name: string }) => tool.name === "set_variable"));
        assert.ok(tools.some((tool: { name: string }) => tool.name === "get_fixture_item_by_id"));
        await assert.rejects(
          () => client.callTool({ name: "set_variable", arguments: { Name: "x", Value: 1 } }),
          (error: unknown) => (error as { code?: number }).code === -32602,
        );
        const ok = await client.callTool({
          name: "get_fixture_item_by_id",
          arguments: { Id: [4] },
        });
        assert.equal(ok.isError, undefined);
      } finally {
        await client.close();
      }
    },
  );

  await t.step("an allowed Origin gets CORS headers; others get 403", async () => {
    const allowed = await fetch(`${svc.url}/tools`, {
      headers: { ...key(SECRETS.alice), origin: "https://app.example" },
    });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers.get("access-control-allow-origin"), "https://app.example");
    await allowed.body?.cancel();
    const refused = await fetch(`${svc.url}/tools`, {
      headers: { ...key(SECRETS.alice), origin: "https://evil.example" },
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get("access-control-allow-origin"), null);
    await refused.body?.cancel();
  });

  await t.step(
    "audit lines name the principal, tool, command, outcome, duration and correlation id",
    async () => {
      await post(`${svc.url}/call`, { tool: "get_fixture_item_by_id", arguments: { Id: [2] } }, {
        ...key(SECRETS.alice),
        "x-correlation-id": "audit-check-1",
      });
      await logged(
        svc.stderr,
        /INFO +mcp: Tool call get_fixture_item_by_id \(Get-FixtureItem\) by alice finished: ok in \d+ ms\..*CorrelationId=audit-check-1/,
      );
      await post(
        `${svc.url}/call`,
        { tool: "set_variable", arguments: { Name: "y", Value: 2 } },
        key(SECRETS.poshMcp),
      );
      await logged(
        svc.stderr,
        /Tool call set_variable \(Set-Variable\) by api-key-[0-9a-f]{8} finished/,
      );
    },
  );

  await t.step("credential arguments are redacted when argument logging is on", async () => {
    await post(`${svc.url}/call`, {
      tool: "test_fixture_credential",
      arguments: { Credential: { UserName: "u", Password: "pw-never-logged-93kd" } },
    }, key(SECRETS.alice));
    await logged(
      svc.stderr,
      /Tool call test_fixture_credential .*Arguments=\{"Credential":"\[redacted\]"\}/,
    );
    assert.doesNotMatch(svc.stderr(), /pw-never-logged-93kd/);
  });

  await t.step("no API key ever appears in the logs", () => {
    for (const secret of Object.values(SECRETS)) {
      assert.ok(!svc.stderr().includes(secret), `secret ${secret.slice(0, 6)}… leaked`);
    }
  });
});

Deno.test("authentication settings are validated at startup: exit 2 with the key named", async () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [
      { Enabled: true },
      /'Authentication:Enabled' in '[^']+': true, but 'Authentication:Schemes' configures no scheme/,
    ],
    [{
      Enabled: true,
      DefaultScheme: "nope",
      Schemes: { k: { Type: "ApiKey", Keys: { a: { Value: "x" } } } },
    }, /'Authentication:DefaultScheme' in '[^']+': no scheme named 'nope'/],
    [
      { Enabled: true, Schemes: { k: { Type: "ApiKey", Keys: {} } } },
      /'Authentication:Schemes:k' in '[^']+': an ApiKey scheme needs at least one entry under 'Authentication:Schemes:k:Keys'/,
    ],
    [
      { Enabled: true, Schemes: { j: { Type: "JwtBearer", Audience: "api://svc" } } },
      /needs 'Authentication:Schemes:j:Authority' or 'Authentication:Schemes:j:JwksUri'/,
    ],
  ];
  for (const [auth, message] of cases) {
    const { code, stderr } = await runHttpSvc({ ...fixtureConfig(), Authentication: auth });
    assert.equal(code, 2, stderr);
    assert.match(stderr, message);
  }
});

Deno.test("OAuth bearer tokens: valid, expired, wrong audience or issuer, unknown kid then rotation, scopes and roles", async (t) => {
  await using issuer = await startIssuer();
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig({ CommandOverrides: { "Get-FixtureGreeting": { RequiredRoles: ["ops"] } } }),
      Authentication: {
        Enabled: true,
        DefaultScheme: "entra",
        DefaultPolicy: {
          RequireAuthentication: true,
          RequiredScopes: ["tools.call"],
          RequiredRoles: [],
        },
        Schemes: { entra: { Type: "JwtBearer", Authority: issuer.url, Audience: "api://svc" } },
        ProtectedResource: { Resource: "api://svc", ScopesSupported: ["tools.call"] },
      },
    },
  });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const claims = {
    "preferred_username": "carol@example.com",
    scp: "tools.read tools.call",
    roles: ["reader"],
  };
  const tokens: string[] = [];
  const sign = async (c: Record<string, unknown>, o?: Parameters<Issuer["sign"]>[1]) => {
    const token = await issuer.sign(c, o);
    tokens.push(token);
    return token;
  };

  // JOSE loads on the first bearer token svc sees: make that first one a forgery.
  await t.step("the first token svc sees, its payload changed after signing, is 401", async () => {
    const [header, , signature] = (await sign(claims)).split(".");
    const payload = btoa(JSON.stringify({ ...claims, roles: ["ops"], exp: 9_999_999_999 }))
      .replace(/=+$/, "").replaceAll("+", "-").replaceAll("/", "_");
    const forged = `${header}.${payload}.${signature}`;
    tokens.push(forged);
    const response = await fetch(`${svc.url}/tools`, { headers: bearer(forged) });
    assert.equal(response.status, 401);
    assert.match(await response.text(), /signature does not verify/);
    await logged(svc.stderr, /signature does not verify/);
  });

  await t.step("a valid token is accepted and the audit line names its user", async () => {
    const token = await sign(claims);
    const response = await post(`${svc.url}/call`, {
      tool: "get_fixture_item_by_id",
      arguments: { Id: [1] },
    }, bearer(token));
    assert.equal(response.status, 200);
    await logged(
      svc.stderr,
      /Tool call get_fixture_item_by_id \(Get-FixtureItem\) by carol@example\.com finished: ok/,
    );
  });

  await t.step("a missing or malformed token is 401 with resource_metadata", async () => {
    for (const headers of [{}, { authorization: "Basic abc" }]) {
      const response = await fetch(`${svc.url}/tools`, { headers });
      assert.equal(response.status, 401);
      assert.equal(
        response.headers.get("www-authenticate"),
        `Bearer scope="tools.call", resource_metadata="${svc.url}/.well-known/oauth-protected-resource"`,
      );
      await response.body?.cancel();
    }
    const metadata = await (await fetch(`${svc.url}/.well-known/oauth-protected-resource`)).json();
    assert.equal(metadata.resource, "api://svc");
    assert.deepEqual(metadata.authorization_servers, [issuer.url]);
    assert.deepEqual(metadata.bearer_methods_supported, ["header"]);
  });

  await t.step("expired, wrong-audience and wrong-issuer tokens are 401", async () => {
    const expired = await sign(claims, { expiresIn: Math.floor(Date.now() / 1000) - 600 });
    const audience = await sign(claims, { audience: "api://someone-else" });
    const wrongIssuer = await sign(claims, { issuer: "https://evil.example" });
    for (
      const [token, reason] of [[expired, /expired/], [audience, /'aud'/], [
        wrongIssuer,
        /'iss'/,
      ]] as const
    ) {
      const response = await fetch(`${svc.url}/tools`, { headers: bearer(token) });
      assert.equal(response.status, 401);
      assert.match(errorOf(await response.json()).message, reason);
    }
  });

  await t.step("a token lacking a required scope is 403", async () => {
    const token = await sign({ ...claims, scp: "tools.read" });
    const response = await fetch(`${svc.url}/tools`, { headers: bearer(token) });
    assert.equal(response.status, 403);
    assert.equal(
      response.headers.get("www-authenticate"),
      `Bearer error="insufficient_scope", scope="tools.call", resource_metadata="${svc.url}/.well-known/oauth-protected-resource"`,
    );
    assert.match(errorOf(await response.json()).message, /required scope 'tools\.call'/);
  });

  await t.step("the roles claim decides which tools a caller sees", async () => {
    const reader = await getTools(svc.url, bearer(await sign(claims)));
    assert.ok(!reader.names.includes("get_fixture_greeting"));
    const ops = await getTools(svc.url, bearer(await sign({ ...claims, roles: ["ops"] })));
    assert.ok(ops.names.includes("get_fixture_greeting"));
  });

  await t.step(
    "a token signed by an unknown key is refused until the provider publishes it",
    async () => {
      const rotated = await sign(claims, { kid: "k2" });
      const before = await fetch(`${svc.url}/tools`, { headers: bearer(rotated) });
      assert.equal(before.status, 401);
      assert.match(errorOf(await before.json()).message, /no signing key matches/);
      await issuer.rotate();
      // The key set is refetched on an unknown kid at most once per 5 s cooldown.
      await new Promise((r) => setTimeout(r, 5_200));
      const after = await fetch(`${svc.url}/tools`, { headers: bearer(rotated) });
      assert.equal(after.status, 200);
      await after.body?.cancel();
    },
  );

  await t.step("no token appears in the logs", () => {
    for (const token of tokens) {
      assert.ok(!svc.stderr().includes(token.split(".")[2]!), "a token signature leaked");
    }
  });
});

Deno.test("OAuth discovery needs no extra settings: the SDK client finds the issuer, gets a token and calls", async (t) => {
  await using issuer = await startIssuer();
  // What a new user writes: the scheme only. No ProtectedResource section.
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      Authentication: {
        Enabled: true,
        DefaultPolicy: { RequiredScopes: ["tools.call"] },
        Schemes: {
          entra: {
            Type: "JwtBearer",
            Authority: issuer.url,
            Audience: "api://svc",
            ValidIssuers: [issuer.url],
          },
        },
      },
    },
  });
  const endpoint = `${svc.url}/mcp`;

  await t.step("a 401 names the metadata of the endpoint it came from", async () => {
    const response = await fetch(endpoint, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    assert.equal(response.status, 401);
    assert.equal(
      response.headers.get("www-authenticate"),
      `Bearer scope="tools.call", resource_metadata="${svc.url}/.well-known/oauth-protected-resource/mcp"`,
    );
    await response.body?.cancel();
  });

  await t.step("RFC 9728 metadata is derived from the scheme, in both forms", async () => {
    for (const [path, resource] of [["/mcp", endpoint], ["", `${svc.url}/`]]) {
      const response = await fetch(`${svc.url}/.well-known/oauth-protected-resource${path}`);
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), {
        resource,
        "authorization_servers": [issuer.url],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["tools.call"],
      });
    }
    const other = await fetch(`${svc.url}/.well-known/oauth-protected-resource/elsewhere`);
    assert.equal(other.status, 404);
    await other.body?.cancel();
  });

  await t.step("discovery, then a client_credentials token, then a tool call", async () => {
    const client = new Client({ name: "svc-oauth-test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
      authProvider: new ClientCredentialsProvider({
        clientId: "svc-robot",
        clientSecret: "robot-secret-4c1d",
        expectedIssuer: issuer.url,
      }),
    });
    await client.connect(transport);
    try {
      const result = await client.callTool({
        name: "get_fixture_greeting",
        arguments: { Name: "oauth" },
      });
      assert.equal(result.isError, undefined);
      assert.match(JSON.stringify(result.content), /Hello, oauth!/);
    } finally {
      await client.close();
    }
    // The client asked for the scope and the resource the metadata named (RFC 8707).
    assert.deepEqual(issuer.tokenRequests[0], { resource: endpoint, scope: "tools.call" });
    await logged(
      svc.stderr,
      /Tool call get_fixture_greeting \(Get-FixtureGreeting\) by robot@example\.com finished: ok/,
    );
  });
});
