/** The authentication step: a principal, or the refusal in the front's terms. */
import assert from "node:assert/strict";
import { Authenticator } from "../lib/auth.ts";
import { asCaller, authenticateRequest, sessionOwnerOf } from "../lib/http_authenticate.ts";
import { HttpError } from "../lib/http_errors.ts";
import {
  ANONYMOUS_CALLER,
  BASE,
  keyCaller,
  logsOf,
  refusal,
  requestTo,
  settingsOf,
} from "./support/http_front.ts";
import { logger } from "../lib/log.ts";

const KEYS = {
  Authentication: {
    Enabled: true,
    DefaultScheme: "keys",
    DefaultPolicy: { RequireAuthentication: true, RequiredRoles: ["reader"] },
    Schemes: {
      keys: {
        Type: "ApiKey",
        Keys: {
          alice: { Value: "alice-key-0123456789", Roles: ["reader"] },
          nobody: { Value: "nobody-key-0123456789", Roles: [] },
        },
      },
    },
  },
};

async function authOf(config: Record<string, unknown>): Promise<Authenticator> {
  const settings = await settingsOf(config);
  return new Authenticator({ auth: settings.auth, shell: settings.shell });
}

const where = { path: "/tools", metadataUrl: `${BASE}/.well-known/oauth-protected-resource` };

Deno.test("authenticateRequest() returns the key's principal, and the anonymous one when authentication is off", async () => {
  const auth = await authOf(KEYS);
  const alice = await authenticateRequest(
    auth,
    requestTo("/tools", { headers: { "x-api-key": "alice-key-0123456789" } }),
    where,
  );
  assert.equal(alice.name, "alice");
  assert.deepEqual(alice.roles, ["reader"]);
  const off = await authenticateRequest(await authOf({}), requestTo("/tools"), where);
  assert.equal(off.scheme, null);
});

Deno.test("authenticateRequest() refuses 401 with the challenge and 403 without a required role", async () => {
  const auth = await authOf(KEYS);
  const missing = await refusal(authenticateRequest(auth, requestTo("/tools"), where));
  assert.equal(missing.status, 401);
  assert.equal(missing.headers["www-authenticate"], 'ApiKey header="X-API-Key"');
  assert.equal(missing.message, "Authentication is required: send credentials for this server");
  const wrong = await refusal(
    authenticateRequest(auth, requestTo("/tools", { headers: { "x-api-key": "nope" } }), where),
  );
  assert.equal(wrong.status, 401);
  assert.match(wrong.message, /API key in X-API-Key is not valid/);
  const nobody = await refusal(
    authenticateRequest(
      auth,
      requestTo("/tools", { headers: { "x-api-key": "nobody-key-0123456789" } }),
      where,
    ),
  );
  assert.equal(nobody.status, 403);
  assert.match(nobody.message, /none of the required roles \(reader\)/);
});

Deno.test("sessionOwnerOf() names the owner of a session and refuses a token without a subject", () => {
  assert.equal(sessionOwnerOf(ANONYMOUS_CALLER), "anonymous");
  assert.equal(sessionOwnerOf(keyCaller("alice")), JSON.stringify(["keys", null, "alice"]));
  assert.throws(
    () => sessionOwnerOf({ ...keyCaller("x"), scheme: "jwt", subject: null }),
    (error: unknown) =>
      error instanceof HttpError && error.status === 403 && /no 'sub' claim/.test(error.message),
  );
});

Deno.test("a refusal is logged with the request; a caller's lines carry its name and subject", async () => {
  const auth = await authOf(KEYS);
  const lines = await logsOf(async () => {
    await authenticateRequest(auth, requestTo("/tools"), where).catch(() => {});
    const result = await asCaller(keyCaller("alice"), () => {
      logger("test").info("inside the route");
      return Promise.resolve(42);
    });
    assert.equal(result, 42);
  });
  const refused = lines.find((line) => line.text.startsWith("Refused GET /tools"));
  assert.equal(refused?.level, "info");
  assert.match(refused!.text, /Authentication is required/);
  const inside = lines.find((line) => line.text === "inside the route");
  assert.equal(inside?.properties.Principal, "alice");
  assert.equal(inside?.properties.Subject, "alice");
});
