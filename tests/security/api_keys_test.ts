/**
 * No key by accident: an API-key entry without a secret, with an empty one or with template text
 * stops svc with exit 2, naming the entry (never a name that may be a key) and where its secret
 * belongs. PoshMcp's form, the entry name being the key, works only with the scheme's
 * `EntryNameIsKey`, and then svc and doctor warn. OAuth settings refuse template text too.
 */
import assert from "node:assert/strict";
import { runHttpSvc, runSvc, startHttpSvc, TEST_PWSH } from "../support/harness.ts";

function keysConfig(
  keys: Record<string, unknown>,
  scheme: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    ShellConfiguration: { Commands: ["Get-Date"] },
    Authentication: {
      Enabled: true,
      Schemes: { keys: { Type: "ApiKey", Keys: keys, ...scheme } },
    },
  };
}

/** Runs `svc serve --transport http` on a configuration and returns how it ended. */
function serve(config: Record<string, unknown>, env: Record<string, string> = {}) {
  return runHttpSvc(config, { env });
}

Deno.test(
  "security: an unreplaced variable reference is not a key",
  async () => {
    // A template or manifest that was not expanded leaves the reference itself: Kubernetes keeps
    // `$(NAME)` for an undefined variable, and `${NAME}` is what envsubst, shells and compose files
    // replace. Each would otherwise be a key anyone who reads the manifest knows.
    const references = ["${ADMIN_KEY}", "$(ADMIN_KEY)", " %ADMIN_KEY% ", "{{ .Values.adminKey }}"];
    for (const reference of references) {
      const run = await serve(keysConfig({ admin: { Value: reference, Roles: ["admin"] } }));
      assert.equal(run.code, 2, `${reference}: ${run.stderr}`);
      assert.match(run.stderr, /'Authentication:Schemes:keys:Keys:admin:Value'.*placeholder/);
    }
    const fromEnv = await serve(keysConfig({ admin: { Roles: ["admin"] } }), {
      Authentication__Schemes__keys__Keys__admin__Value: "$(ADMIN_KEY)",
    });
    assert.equal(fromEnv.code, 2, fromEnv.stderr);
    assert.match(fromEnv.stderr, /Authentication__Schemes__keys__Keys__admin__Value.*placeholder/);
    const authority = await serve({
      Authentication: {
        Enabled: true,
        Schemes: {
          entra: {
            Type: "JwtBearer",
            Authority: "https://login.example/${TENANT_ID}/v2.0",
            Audience: "api://svc",
          },
        },
      },
    });
    assert.equal(authority.code, 2, authority.stderr);
    assert.match(authority.stderr, /'Authentication:Schemes:entra:Authority'.*placeholder/);
  },
);

Deno.test(
  "security: an API-key entry without a secret is a configuration error",
  async () => {
    // The Kubernetes pattern with the Secret's variable missing: the name could be a key, so it is
    // not printed; where the secret belongs is.
    const missing = await serve(keysConfig({ "ops-Zq7": { Roles: ["ops"] } }));
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /entry 1 under 'Authentication:Schemes:keys:Keys'/);
    assert.match(missing.stderr, /has no secret/);
    assert.match(missing.stderr, /Authentication__Schemes__keys__Keys__<entry>__Value/);
    assert.match(missing.stderr, /EntryNameIsKey/);
    assert.doesNotMatch(missing.stderr, /ops-Zq7/);

    // The Secret's variable set but empty: the entry has a Value, so its name is a name.
    const empty = await serve(keysConfig({ ops: { Roles: ["ops"] } }), {
      "Authentication__Schemes__keys__Keys__ops__Value": "",
    });
    assert.equal(empty.code, 2, empty.stderr);
    assert.match(empty.stderr, /'Authentication:Schemes:keys:Keys:ops' has no secret/);
    assert.match(empty.stderr, /Authentication__Schemes__keys__Keys__ops__Value/);

    const blank = await serve(keysConfig({ ops: { Value: "   ", Roles: ["ops"] } }));
    assert.equal(blank.code, 2, blank.stderr);
    assert.match(blank.stderr, /has no secret/);
  },
);

Deno.test(
  "security: template text is never taken for a key or an OAuth setting",
  async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        keysConfig({
          ops: {
            Value: "<from a secret store, e.g. Authentication__Schemes__keys__Keys__ops__Value>",
          },
        }),
        /'Authentication:Schemes:keys:Keys:ops:Value'.*placeholder/,
      ],
      [
        keysConfig({ ci: { Sha256: "<hex digest of the key>" } }),
        /'Authentication:Schemes:keys:Keys:ci:Sha256'.*placeholder/,
      ],
      [
        keysConfig({ "<your key here>": {} }, { EntryNameIsKey: true }),
        /is a placeholder, not a key/,
      ],
      [{
        Authentication: {
          Enabled: true,
          Schemes: {
            entra: {
              Type: "JwtBearer",
              Authority: "https://login.microsoftonline.com/<tenant>/v2.0",
              Audience: "api://svc",
            },
          },
        },
      }, /'Authentication:Schemes:entra:Authority'.*placeholder/],
      [{
        Authentication: {
          Enabled: true,
          Schemes: {
            entra: {
              Type: "JwtBearer",
              Authority: "https://login.example",
              Audience: "api://<application id>",
            },
          },
        },
      }, /'Authentication:Schemes:entra:Audience'.*placeholder/],
      [{
        Authentication: {
          Enabled: true,
          Schemes: {
            entra: {
              Type: "JwtBearer",
              JwksUri: "https://login.example/keys",
              ValidIssuers: ["https://login.example/<tenant>"],
              Audience: "api://svc",
            },
          },
        },
      }, /'Authentication:Schemes:entra:ValidIssuers:0'.*placeholder/],
    ];
    for (const [config, message] of cases) {
      const run = await serve(config);
      assert.equal(run.code, 2, `${JSON.stringify(config)}: ${run.stderr}`);
      assert.match(run.stderr, message);
    }
  },
);

Deno.test(
  "security: PoshMcp's form works only with EntryNameIsKey, and svc and doctor warn",
  async () => {
    const key = "poshmcp-style-key-3f9e0b";
    const config = keysConfig({ [key]: { Roles: ["ops"] } }, { EntryNameIsKey: true });
    await using svc = await startHttpSvc({ config, pwsh: TEST_PWSH });
    const ok = await fetch(`${svc.url}/tools`, { headers: { "x-api-key": key } });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    const wrong = await fetch(`${svc.url}/tools`, { headers: { "x-api-key": "ops" } });
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();
    assert.match(svc.stderr(), /WARN.*anyone who reads the configuration knows them/);
    assert.ok(!svc.stderr().includes(key), "the log names the key");

    const dir = await Deno.makeTempDir({ prefix: "svc-keys-" });
    try {
      await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config));
      const doctor = await runSvc([
        "doctor",
        "--config",
        `${dir}/appsettings.json`,
        "--pwsh",
        TEST_PWSH,
      ]);
      const out = doctor.stdout + doctor.stderr;
      assert.match(out, /anyone who reads the configuration knows them/);
      assert.ok(!out.includes(key), "doctor names the key");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
