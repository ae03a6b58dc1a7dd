/** The request guard: Host before Origin, and CORS headers only for allowed origins. */
import assert from "node:assert/strict";
import { HttpError } from "../lib/http_errors.ts";
import { RequestGuard, requestUrl } from "../lib/http_guard.ts";
import { BASE, requestTo, settingsOf } from "./support/http_front.ts";

async function guardOf(config: Record<string, unknown> = {}): Promise<RequestGuard> {
  return new RequestGuard((await settingsOf(config)).http);
}

function refusal(fn: () => unknown): HttpError {
  try {
    fn();
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  assert.fail("nothing was refused");
}

Deno.test("admit() returns the Host of a request to a loopback name or the bound address", async () => {
  const guard = await guardOf();
  for (const host of ["127.0.0.1:8080", "LOCALHOST:8080", "[::1]:8080", "127.0.0.1"]) {
    assert.equal(guard.admit(requestTo("/mcp", { headers: { host } })), host.toLowerCase());
  }
});

Deno.test("admit() refuses a foreign Host with 403 naming McpServer:AllowedHosts, before looking at Origin", async () => {
  const guard = await guardOf();
  const error = refusal(() =>
    guard.admit(
      requestTo("/mcp", {
        headers: { host: "evil.example:8080", origin: "http://evil.example:8080" },
      }),
    )
  );
  assert.equal(error.status, 403);
  assert.equal(
    error.message,
    "Forbidden: Host 'evil.example:8080' is not served here (McpServer:AllowedHosts)",
  );
  const allowed = await guardOf({ McpServer: { AllowedHosts: ["*.example"] } });
  assert.equal(
    allowed.admit(requestTo("/mcp", { headers: { host: "svc.example" } })),
    "svc.example",
  );
});

Deno.test("admit() refuses a foreign Origin with 403 and passes svc's own and the allowed ones", async () => {
  const guard = await guardOf({
    Authentication: { Cors: { AllowedOrigins: ["https://app.example"] } },
  });
  const error = refusal(() =>
    guard.admit(requestTo("/mcp", { headers: { origin: "https://evil.example" } }))
  );
  assert.equal(error.status, 403);
  assert.equal(
    error.message,
    "Forbidden: Origin 'https://evil.example' is not allowed (Authentication:Cors:AllowedOrigins)",
  );
  guard.admit(requestTo("/mcp", { headers: { origin: BASE } }));
  guard.admit(requestTo("/mcp", { headers: { origin: "https://app.example" } }));
  guard.admit(requestTo("/mcp"));
});

Deno.test("addCors() answers only an allowed Origin, with preflight headers for OPTIONS", async () => {
  const guard = await guardOf({
    Authentication: { Cors: { AllowedOrigins: ["https://app.example"] } },
  });
  const foreign = new Headers();
  guard.addCors(requestTo("/mcp", { headers: { origin: "https://evil.example" } }), foreign);
  assert.equal(foreign.get("access-control-allow-origin"), null);
  assert.equal(foreign.get("vary"), "Origin");
  const preflight = new Headers();
  guard.addCors(
    requestTo("/mcp", { method: "OPTIONS", headers: { origin: "https://app.example" } }),
    preflight,
  );
  assert.equal(preflight.get("access-control-allow-origin"), "https://app.example");
  assert.match(preflight.get("access-control-allow-methods")!, /POST/);
  assert.match(preflight.get("access-control-expose-headers")!, /Mcp-Session-Id/);
});

Deno.test("requestUrl() reads the request's URL", () => {
  assert.equal(requestUrl(requestTo("/health/")).pathname, "/health/");
});
