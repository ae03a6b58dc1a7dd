/**
 * Sessions belong to an identity, not a name: the owner of a Stateful session and of a legacy SSE
 * session is the scheme plus the token's `iss` and `sub`. Two subjects with the same
 * `preferred_username` cannot list tools on, take the GET stream of, DELETE, or post to each
 * other's sessions; a token without `sub` cannot open one; audit lines carry the subject.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { fixtureConfig, post, startHttpSvc } from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };
const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "owner-test", version: "1" },
  },
};
const LIST = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };

async function startJwks() {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => Response.json({ keys: [jwk] }),
  );
  const url = `http://127.0.0.1:${server.addr.port}`;
  const sign = (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setIssuer(url)
      .setAudience("api://svc")
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);
  return { url, sign, [Symbol.asyncDispose]: () => server.shutdown() };
}

Deno.test("two subjects with the same preferred_username cannot use each other's sessions", async (t) => {
  await using jwks = await startJwks();
  const config = {
    ...fixtureConfig(),
    McpServer: { RunspacePool: LIGHT_POOL, HttpTransportMode: "Stateful", EnableLegacySse: true },
    Authentication: {
      Enabled: true,
      Schemes: {
        idp: {
          Type: "JwtBearer",
          JwksUri: `${jwks.url}/jwks`,
          ValidIssuers: [jwks.url],
          Audience: "api://svc",
        },
      },
    },
  };
  await using svc = await startHttpSvc({ config });
  const name = { "preferred_username": "alice@example.com", email: "alice@example.com" };
  const bearer = async (claims: Record<string, unknown>) => ({
    authorization: `Bearer ${await jwks.sign({ ...name, ...claims })}`,
  });
  const alice = await bearer({ sub: "alice-1" });
  const mallory = await bearer({ sub: "mallory-2" });
  // A sub equal to the victim's name is no way in either.
  const namesake = await bearer({ sub: "alice@example.com" });

  const opened = await post(`${svc.url}/mcp`, INIT, alice);
  assert.equal(opened.status, 200);
  const session = opened.headers.get("mcp-session-id")!;
  assert.ok(session);
  const inSession = (headers: Record<string, string>) => ({
    ...headers,
    "mcp-session-id": session,
    "mcp-protocol-version": "2025-11-25",
  });
  const initialized = await post(
    `${svc.url}/mcp`,
    { jsonrpc: "2.0", method: "notifications/initialized" },
    inSession(alice),
  );
  assert.equal(initialized.status, 202);

  await t.step("tools/list on another subject's session is 403", async () => {
    for (const impostor of [mallory, namesake]) {
      const list = await post(`${svc.url}/mcp`, LIST, inSession(impostor));
      assert.equal(list.status, 403);
    }
    assert.equal((await post(`${svc.url}/mcp`, LIST, inSession(alice))).status, 200);
  });

  await t.step("the GET stream cannot be taken; the owner still gets it", async () => {
    const stolen = await fetch(`${svc.url}/mcp`, {
      headers: { ...inSession(mallory), accept: "text/event-stream" },
    });
    await stolen.body?.cancel();
    assert.equal(stolen.status, 403);
    const own = await fetch(`${svc.url}/mcp`, {
      headers: { ...inSession(alice), accept: "text/event-stream" },
    });
    assert.equal(own.status, 200);
    await own.body?.cancel();
  });

  await t.step("DELETE by another subject is 403 and the session lives on", async () => {
    const deleted = await fetch(`${svc.url}/mcp`, {
      method: "DELETE",
      headers: inSession(mallory),
    });
    await deleted.body?.cancel();
    assert.equal(deleted.status, 403);
    assert.equal((await post(`${svc.url}/mcp`, LIST, inSession(alice))).status, 200);
  });

  await t.step("a legacy SSE session takes posts only from its subject", async () => {
    const stream = await fetch(`${svc.url}/sse`, {
      headers: { ...alice, accept: "text/event-stream" },
    });
    assert.equal(stream.status, 200);
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!/data: (\S+)\n/.test(text)) text += (await reader.read()).value ?? "";
    const messages = `${svc.url}${/data: (\S+)\n/.exec(text)![1]}`;
    try {
      const ping = { jsonrpc: "2.0", id: 9, method: "ping" };
      assert.equal((await post(messages, ping, mallory)).status, 403);
      assert.equal((await post(messages, ping, alice)).status, 202);
    } finally {
      await reader.cancel();
    }
  });

  await t.step("a token without sub cannot open or join a session", async () => {
    const subless = await bearer({});
    assert.equal((await post(`${svc.url}/mcp`, INIT, subless)).status, 403);
    assert.equal((await post(`${svc.url}/mcp`, LIST, inSession(subless))).status, 403);
    const sse = await fetch(`${svc.url}/sse`, {
      headers: { ...subless, accept: "text/event-stream" },
    });
    await sse.body?.cancel();
    assert.equal(sse.status, 403);
  });

  await t.step("audit lines carry the subject, not only the shared name", async () => {
    const call = await post(`${svc.url}/call`, {
      tool: "get_fixture_greeting",
      arguments: { Name: "audit" },
    }, mallory);
    assert.equal(call.status, 200);
    assert.match(
      svc.stderr(),
      /Tool call get_fixture_greeting \S+ by alice@example\.com finished: ok.* Subject=mallory-2/,
    );
  });
});
