/**
 * The identity provider is asked at most once per interval whatever callers send: failed discovery
 * and JWKS fetches are cached with back-off (negative caching), as successful ones are, and tokens
 * naming unknown kids cannot make svc refetch the key set on every request. A local fake provider
 * counts what it is asked.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { eventually, fixtureConfig, startHttpSvc } from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };

/** A fake provider whose discovery and JWKS answer 500 until `healthy` is set. */
async function startProvider() {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  const state = { discovery: 0, jwks: 0, discoveryOk: false, jwksOk: false };
  let url = "";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/.well-known/openid-configuration") {
      state.discovery++;
      if (!state.discoveryOk) return new Response("down", { status: 500 });
      return Response.json({ issuer: url, "jwks_uri": `${url}/jwks` });
    }
    if (path === "/jwks") {
      state.jwks++;
      if (!state.jwksOk) return new Response("down", { status: 500 });
      return Response.json({ keys: [jwk] });
    }
    return new Response("not found", { status: 404 });
  });
  url = `http://127.0.0.1:${server.addr.port}`;
  const sign = (kid = "k1") =>
    new SignJWT({ sub: "user-1" })
      .setProtectedHeader({ alg: "RS256", kid })
      .setIssuer(url)
      .setAudience("api://svc")
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);
  return { url, state, sign, [Symbol.asyncDispose]: () => server.shutdown() };
}

function jwtConfig(scheme: Record<string, unknown>): Record<string, unknown> {
  return {
    ...fixtureConfig(),
    McpServer: { RunspacePool: LIGHT_POOL },
    Authentication: {
      Enabled: true,
      Schemes: { idp: { Type: "JwtBearer", Audience: "api://svc", ...scheme } },
    },
  };
}

async function statuses(url: string, tokens: string[]): Promise<number[]> {
  return await Promise.all(tokens.map(async (token) => {
    const response = await fetch(`${url}/tools`, { headers: { authorization: `Bearer ${token}` } });
    await response.body?.cancel();
    return response.status;
  }));
}

Deno.test("discovery answering 500: 20 junk tokens make at most one discovery fetch, then it recovers", async () => {
  await using idp = await startProvider();
  await using svc = await startHttpSvc({ config: jwtConfig({ Authority: idp.url }) });
  const junk = Array.from({ length: 20 }, (_, i) => `junk.token${i}.x`);
  // Concurrent and then one after another: neither shape gets past the cached failure.
  assert.deepEqual(await statuses(svc.url, junk.slice(0, 10)), Array(10).fill(401));
  for (const token of junk.slice(10)) assert.deepEqual(await statuses(svc.url, [token]), [401]);
  assert.ok(idp.state.discovery <= 1, `discovery fetched ${idp.state.discovery} times`);
  // Once the provider is back, a valid token works after the back-off (5 s), not before.
  idp.state.discoveryOk = true;
  idp.state.jwksOk = true;
  const token = await idp.sign();
  assert.ok(await eventually(async () => (await statuses(svc.url, [token]))[0] === 200));
  assert.ok(idp.state.discovery <= 3, `discovery fetched ${idp.state.discovery} times`);
});

Deno.test("JWKS answering 500: 20 forged tokens make at most one JWKS fetch", async () => {
  await using idp = await startProvider();
  await using svc = await startHttpSvc({
    config: jwtConfig({ JwksUri: `${idp.url}/jwks`, ValidIssuers: [idp.url] }),
  });
  const forged = await Promise.all(Array.from({ length: 20 }, () => idp.sign()));
  assert.deepEqual(await statuses(svc.url, forged.slice(0, 10)), Array(10).fill(401));
  for (const token of forged.slice(10)) assert.deepEqual(await statuses(svc.url, [token]), [401]);
  assert.ok(idp.state.jwks <= 1, `JWKS fetched ${idp.state.jwks} times`);
});

Deno.test("JWKS up: 20 tokens naming unknown kids refetch the key set at most once", async () => {
  await using idp = await startProvider();
  idp.state.jwksOk = true;
  await using svc = await startHttpSvc({
    config: jwtConfig({ JwksUri: `${idp.url}/jwks`, ValidIssuers: [idp.url] }),
  });
  assert.deepEqual(await statuses(svc.url, [await idp.sign()]), [200]);
  const unknown = await Promise.all(Array.from({ length: 20 }, (_, i) => idp.sign(`kid-${i}`)));
  for (const token of unknown) assert.deepEqual(await statuses(svc.url, [token]), [401]);
  assert.ok(idp.state.jwks <= 2, `JWKS fetched ${idp.state.jwks} times`);
});
