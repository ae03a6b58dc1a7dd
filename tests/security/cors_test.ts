/**
 * CORS: `/health`, `/health/ready` and preflights answer with CORS headers only for the server's own
 * origin or `Authentication:Cors:AllowedOrigins`; an arbitrary `Origin` is never echoed, and a
 * preflight from one is refused.
 */
import assert from "node:assert/strict";
import { fixtureConfig, startHttpSvc } from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };
const ALLOWED = "https://app.example";
const EVIL = "https://evil.example";

Deno.test("CORS headers only for same-origin or AllowedOrigins, on /health and preflights too", async (t) => {
  const config = {
    ...fixtureConfig(),
    McpServer: { RunspacePool: LIGHT_POOL },
    Authentication: { Cors: { AllowedOrigins: [ALLOWED] } },
  };
  await using svc = await startHttpSvc({ config });

  await t.step("/health and /health/ready never echo a foreign Origin", async () => {
    for (const path of ["/health", "/health/ready"]) {
      const foreign = await fetch(`${svc.url}${path}`, { headers: { origin: EVIL } });
      await foreign.body?.cancel();
      assert.equal(foreign.headers.get("access-control-allow-origin"), null, path);
      for (const origin of [ALLOWED, svc.url]) {
        const ok = await fetch(`${svc.url}${path}`, { headers: { origin } });
        await ok.body?.cancel();
        assert.equal(ok.headers.get("access-control-allow-origin"), origin, `${path} ${origin}`);
      }
    }
  });

  await t.step("a preflight from a foreign origin is refused without CORS headers", async () => {
    for (const path of ["/mcp", "/call", "/tools"]) {
      const response = await fetch(`${svc.url}${path}`, {
        method: "OPTIONS",
        headers: {
          origin: EVIL,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type",
        },
      });
      await response.body?.cancel();
      assert.equal(response.status, 403, path);
      assert.equal(response.headers.get("access-control-allow-origin"), null);
      assert.equal(response.headers.get("access-control-allow-methods"), null);
    }
  });

  await t.step("a preflight from an allowed origin is answered", async () => {
    const response = await fetch(`${svc.url}/mcp`, {
      method: "OPTIONS",
      headers: {
        origin: ALLOWED,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, mcp-protocol-version",
      },
    });
    await response.body?.cancel();
    assert.equal(response.status, 204);
    assert.equal(response.headers.get("access-control-allow-origin"), ALLOWED);
    assert.match(response.headers.get("access-control-allow-methods") ?? "", /POST/);
    assert.match(response.headers.get("vary") ?? "", /Origin/);
  });

  await t.step("an Origin that is not http(s) (null, file:) gets nothing", async () => {
    for (const origin of ["null", "file://", "chrome-extension://abc"]) {
      const response = await fetch(`${svc.url}/health`, { headers: { origin } });
      await response.body?.cancel();
      assert.equal(response.headers.get("access-control-allow-origin"), null, origin);
    }
  });
});
