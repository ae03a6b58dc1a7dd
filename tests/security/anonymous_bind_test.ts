/**
 * Anonymous only on loopback: svc refuses (exit 2, one sentence naming the way out) to serve callers
 * without credentials on an address other than loopback, unless `--allow-anonymous`,
 * `SVC_ALLOW_ANONYMOUS` or `McpServer:AllowAnonymous` says so; with authentication required it
 * binds anywhere.
 */
import assert from "node:assert/strict";
import {
  fixtureConfig,
  post,
  runHttpSvc,
  runSvc,
  startHttpSvc,
  type SvcRun,
  TEST_PWSH,
} from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };

function config(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL }, ...extra };
}

function serveOnce(cfg: Record<string, unknown>, args: string[]): Promise<SvcRun> {
  return runHttpSvc(cfg, { args });
}

const OPTIONAL_AUTH = {
  Authentication: {
    Enabled: true,
    DefaultPolicy: { RequireAuthentication: false },
    Schemes: { keys: { Type: "ApiKey", Keys: { ops: { Value: "ops-secret-9a7e", Roles: [] } } } },
  },
};

Deno.test("no authentication on 0.0.0.0 (or ::) is a configuration error naming --allow-anonymous", async () => {
  for (const host of ["0.0.0.0", "::"]) {
    const run = await serveOnce(config(), ["--host", host]);
    assert.equal(run.code, 2, `exit code for ${host}; stderr: ${run.stderr}`);
    assert.match(
      run.stderr,
      /Refusing to listen on '(0\.0\.0\.0|::)' because authentication is off/,
    );
    assert.match(
      run.stderr,
      /--allow-anonymous \(SVC_ALLOW_ANONYMOUS=true, McpServer:AllowAnonymous\)/,
    );
    assert.doesNotMatch(run.stderr, /listening on/);
  }
});

Deno.test("authentication that is not required counts as anonymous too", async () => {
  const run = await serveOnce(config(OPTIONAL_AUTH), ["--host", "0.0.0.0"]);
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /RequireAuthentication is false/);
});

Deno.test("an explicit --allow-anonymous, SVC_ALLOW_ANONYMOUS or McpServer:AllowAnonymous serves on 0.0.0.0", async (t) => {
  const routes: [string, { args?: string[]; env?: Record<string, string>; cfg?: unknown }][] = [
    ["flag", { args: ["--allow-anonymous"] }],
    ["environment", { env: { SVC_ALLOW_ANONYMOUS: "true" } }],
    ["setting", { cfg: { AllowAnonymous: true } }],
  ];
  for (const [name, route] of routes) {
    await t.step(name, async () => {
      const cfg = config({ McpServer: { RunspacePool: LIGHT_POOL, ...(route.cfg ?? {}) } });
      await using svc = await startHttpSvc({
        config: cfg,
        args: ["--host", "0.0.0.0", ...(route.args ?? [])],
        env: route.env ?? {},
      });
      const url = svc.url.replace("0.0.0.0", "127.0.0.1");
      const call = await post(`${url}/call`, {
        tool: "get_fixture_greeting",
        arguments: { Name: "anon" },
      });
      assert.equal(call.status, 200);
      // Allowed, and said loudly, once.
      const warnings = svc.stderr().split("\n").filter((line) =>
        /WARNING.*Serving callers without credentials on 0\.0\.0\.0 because authentication is off/
          .test(line)
      );
      assert.equal(warnings.length, 1, svc.stderr());
      assert.match(warnings[0]!, /anyone who can reach the port can call every tool/);
    });
  }
});

Deno.test("with authentication required, 0.0.0.0 needs no flag; SVC_ALLOW_ANONYMOUS=banana is refused", async () => {
  const required = {
    Authentication: {
      ...OPTIONAL_AUTH.Authentication,
      DefaultPolicy: { RequireAuthentication: true },
    },
  };
  await using svc = await startHttpSvc({ config: config(required), args: ["--host", "0.0.0.0"] });
  const url = svc.url.replace("0.0.0.0", "127.0.0.1");
  const call = await post(`${url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "anon" },
  }, {
    "x-api-key": "ops-secret-9a7e",
  });
  assert.equal(call.status, 200);
  assert.doesNotMatch(svc.stderr(), /Serving callers without credentials/);
  const bad = await runSvc(["serve", "--transport", "http", "--pwsh", TEST_PWSH], {
    env: { SVC_ALLOW_ANONYMOUS: "banana", SVC_PORT: "0" },
  });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Invalid value 'banana' of SVC_ALLOW_ANONYMOUS/);
});
