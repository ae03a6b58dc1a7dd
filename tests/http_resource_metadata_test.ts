/** RFC 9728 metadata: where it is served and for which endpoint. */
import assert from "node:assert/strict";
import { Authenticator } from "../lib/auth.ts";
import { HttpError } from "../lib/http_errors.ts";
import {
  isResourceMetadataPath,
  metadataUrl,
  resourceMetadata,
} from "../lib/http_resource_metadata.ts";
import { BASE, settingsOf } from "./support/http_front.ts";

async function authOf(config: Record<string, unknown>): Promise<Authenticator> {
  const settings = await settingsOf(config);
  return new Authenticator({ auth: settings.auth, shell: settings.shell });
}

const BEARER = {
  Authentication: {
    Enabled: true,
    DefaultScheme: "entra",
    DefaultPolicy: { RequiredScopes: ["tools.call"] },
    Schemes: {
      entra: { Type: "JwtBearer", Authority: "https://login.example/t", Audience: "api://svc" },
    },
  },
};

Deno.test("metadataUrl() names the metadata of /mcp after its path and of / and other routes bare", () => {
  assert.equal(metadataUrl(BASE, "/mcp"), `${BASE}/.well-known/oauth-protected-resource/mcp`);
  assert.equal(metadataUrl(BASE, "/"), `${BASE}/.well-known/oauth-protected-resource`);
  assert.equal(metadataUrl(BASE, null), `${BASE}/.well-known/oauth-protected-resource`);
  assert.ok(isResourceMetadataPath("/.well-known/oauth-protected-resource"));
  assert.ok(isResourceMetadataPath("/.well-known/oauth-protected-resource/mcp"));
  assert.ok(!isResourceMetadataPath("/.well-known/oauth-protected-resourcex"));
});

Deno.test("resourceMetadata() describes the endpoint the path names, the default one when bare", async () => {
  const auth = await authOf(BEARER);
  const paths = new Set(["/", "/mcp"]);
  const bare = await resourceMetadata(auth, paths, BASE, "/.well-known/oauth-protected-resource")
    .json();
  assert.equal(bare.resource, `${BASE}/`);
  assert.deepEqual(bare.authorization_servers, ["https://login.example/t"]);
  assert.deepEqual(bare.scopes_supported, ["tools.call"]);
  const mcp = await resourceMetadata(auth, paths, BASE, "/.well-known/oauth-protected-resource/mcp")
    .json();
  assert.equal(mcp.resource, `${BASE}/mcp`);
  const dedicated = resourceMetadata(
    auth,
    new Set(["/custom"]),
    BASE,
    "/.well-known/oauth-protected-resource",
  );
  assert.equal((await dedicated.json()).resource, `${BASE}/custom`);
});

Deno.test("resourceMetadata() is 404 for a path that names no MCP endpoint or without a bearer scheme", async () => {
  const is404 = (error: unknown) => error instanceof HttpError && error.status === 404;
  const auth = await authOf(BEARER);
  assert.throws(
    () =>
      resourceMetadata(
        auth,
        new Set(["/mcp"]),
        BASE,
        "/.well-known/oauth-protected-resource/tools",
      ),
    (error: unknown) => is404(error) && /for '\/tools'/.test((error as Error).message),
  );
  const off = await authOf({});
  assert.throws(
    () => resourceMetadata(off, new Set(["/mcp"]), BASE, "/.well-known/oauth-protected-resource"),
    is404,
  );
});
