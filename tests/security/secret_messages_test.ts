/**
 * Nothing secret in logs or messages: a refused argument is named with the rule it broke, never its
 * value; configuration warnings, errors and doctor never print an API-key entry's name when that
 * name may be the key, nor a key's value.
 */
import assert from "node:assert/strict";
import { logged, runSvc, startHttpSvc, startSvc, TEST_PWSH } from "../support/harness.ts";
import { SECURITY_FIXTURE, textOf } from "./support.ts";

Deno.test(
  "security: a refused argument's value is neither logged nor echoed",
  async () => {
    const secret = "TokenArg-5c1d9e7f0a";
    await using svc = await startSvc({
      pwsh: TEST_PWSH,
      config: { ShellConfiguration: { Modules: [SECURITY_FIXTURE], IncludePatterns: ["*"] } },
    });
    const result = await svc.callTool("get_plain_value", { Token: secret });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /'Token'.*longer than 8 character/);
    const wrongType = await svc.callTool("get_plain_value", { Token: 451_973_208 });
    assert.equal(wrongType.isError, true);
    // The log line may come a moment after the answer on stdout.
    await logged(
      () => svc.stderr(),
      /refused: Invalid argument 'Token'[\s\S]*refused: Invalid argument 'Token'/,
    );
    for (const text of [textOf(result), textOf(wrongType), svc.stderr()]) {
      assert.ok(!text.includes(secret), text);
      assert.ok(!text.includes("451973208"), text);
    }
    assert.match(svc.stderr(), /refused: Invalid argument 'Token'/);
  },
);

/** Runs `svc <command>` on a configuration file holding `config`. */
async function withConfigFile<T>(
  config: Record<string, unknown>,
  use: (path: string) => Promise<T>,
): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "svc-secret-" });
  try {
    await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config));
    return await use(`${dir}/appsettings.json`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function keysConfig(keys: Record<string, unknown>): Record<string, unknown> {
  return {
    ShellConfiguration: { Commands: ["Get-Date"] },
    Authentication: {
      Enabled: true,
      Schemes: { keys: { Type: "ApiKey", EntryNameIsKey: true, Keys: keys } },
    },
  };
}

Deno.test(
  "security: configuration messages never print a key that is an entry's name",
  async () => {
    const key = "poshmcp-key-0e4b7a91";
    // An unknown key under the entry: a warning at start and in doctor.
    const typo = keysConfig({ [key]: { Rolez: ["ops"] } });
    await using svc = await startHttpSvc({ pwsh: TEST_PWSH, config: typo });
    assert.match(
      svc.stderr(),
      /Unknown configuration key 'Authentication:Schemes:keys:Keys:\[entry 1\]:Rolez'/,
    );
    assert.ok(!svc.stderr().includes(key), "the start log names the key");
    await withConfigFile(typo, async (path) => {
      const doctor = await runSvc(["doctor", "--config", path, "--pwsh", TEST_PWSH]);
      assert.ok(!(doctor.stdout + doctor.stderr).includes(key), "doctor names the key");
      assert.match(doctor.stdout + doctor.stderr, /\[entry 1\]:Rolez/);
    });

    // A wrong value under the entry, from the file and from the environment: errors, exit 2.
    for (
      const [config, env] of [
        [keysConfig({ [key]: { Roles: [1] } }), {}],
        [keysConfig({ [key]: { Scopes: ["s"] } }), {
          [`Authentication__Schemes__keys__Keys__${key}__Roles__x`]: "r",
        }],
      ] as [Record<string, unknown>, Record<string, string>][]
    ) {
      await withConfigFile(config, async (path) => {
        const run = await runSvc(
          ["serve", "--transport", "http", "--port", "0", "--config", path, "--pwsh", TEST_PWSH],
          { env },
        );
        assert.equal(run.code, 2, run.stderr);
        assert.match(run.stderr, /\[entry 1\]/);
        assert.ok(!run.stderr.includes(key), run.stderr);
      });
    }

    // A key given as a number: the error names the field, not the value.
    await withConfigFile(keysConfig({ ops: { Value: 7_305_118_926 } }), async (path) => {
      const run = await runSvc(
        ["serve", "--transport", "http", "--port", "0", "--config", path, "--pwsh", TEST_PWSH],
      );
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /'Authentication:Schemes:keys:Keys:ops:Value'/);
      assert.ok(!run.stderr.includes("7305118926"), run.stderr);
    });
  },
);

Deno.test(
  "security: a malformed Keys, scheme or Schemes is refused without printing what it holds",
  async () => {
    const key = "listed-key-7be0c5d2";
    // Keys as a list (from the file, or numbered environment variables), a scheme as a list, and
    // Schemes as a list: each is refused with exit 2, and the message shows none of the keys.
    const cases: [Record<string, unknown>, Record<string, string>][] = [
      [{ Authentication: { Schemes: { keys: { Type: "ApiKey", Keys: [{ Value: key }] } } } }, {}],
      [{ Authentication: { Schemes: { keys: { Type: "ApiKey" } } } }, {
        Authentication__Schemes__keys__Keys__0__Value: key,
      }],
      [{ Authentication: { Schemes: { keys: [{ Keys: { [key]: {} } }] } } }, {}],
      [{ Authentication: { Schemes: [{ Type: "ApiKey", Keys: { ops: { Value: key } } }] } }, {}],
      // The key given as an entry's whole value, and a scheme given as a string: a string where an
      // object is wanted may be the key itself.
      [{ Authentication: { Schemes: { keys: { Type: "ApiKey", Keys: { ops: key } } } } }, {}],
      [{ ShellConfiguration: { Commands: ["Get-Date"] } }, { Authentication__Schemes__keys: key }],
    ];
    for (const [config, env] of cases) {
      await withConfigFile(config, async (path) => {
        for (const command of [["serve", "--transport", "http", "--port", "0"], ["doctor"]]) {
          const run = await runSvc([...command, "--config", path, "--pwsh", TEST_PWSH], { env });
          assert.equal(run.code, 2, run.stderr);
          assert.ok(!(run.stdout + run.stderr).includes(key), run.stdout + run.stderr);
        }
      });
    }
  },
);
