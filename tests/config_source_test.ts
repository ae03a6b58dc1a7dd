import assert from "node:assert/strict";
import { envTree, mergeTrees, parseConfigText, readConfigFile } from "../lib/config_source.ts";
import { ConfigError } from "../lib/errors.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-config-source-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function configError(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(() => null, (e) => e);
  assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${error}`);
  return error;
}

Deno.test("envTree() reads Section__Sub__Key variables of svc's sections only", () => {
  assert.deepEqual(
    envTree({
      ShellConfiguration__ToolCallTimeout: "00:00:10",
      McpServer__RunspacePool__MaxPoolSize: "4",
      logging__LogLevel__Default: "Debug",
      Authentication__Enabled: "true",
      PowerShellConfiguration__CommandNames__0: "Get-Date",
      Other__Key: "ignored",
      PATH: "/usr/bin",
      ShellConfiguration: "no separator, ignored",
    }),
    {
      ShellConfiguration: { ToolCallTimeout: "00:00:10" },
      McpServer: { RunspacePool: { MaxPoolSize: "4" } },
      logging: { LogLevel: { Default: "Debug" } },
      Authentication: { Enabled: "true" },
      PowerShellConfiguration: { CommandNames: ["Get-Date"] },
    },
  );
  assert.deepEqual(envTree({}), {});
});

Deno.test("envTree() makes arrays of numeric keys, in numeric order, at any depth", () => {
  assert.deepEqual(
    envTree({
      ShellConfiguration__Commands__10: "Get-Item",
      ShellConfiguration__Commands__2: "Get-Date",
      ShellConfiguration__Commands__0: "Get-Location",
      Authentication__Schemes__0__Name: "a",
      Authentication__Schemes__1__Name: "b",
    }),
    {
      ShellConfiguration: { Commands: ["Get-Location", "Get-Date", "Get-Item"] },
      Authentication: { Schemes: [{ Name: "a" }, { Name: "b" }] },
    },
  );
  // Mixed keys stay an object.
  assert.deepEqual(envTree({ McpServer__A__0: "x", McpServer__A__b: "y" }), {
    McpServer: { A: { "0": "x", b: "y" } },
  });
});

Deno.test("envTree() refuses a variable that sets a key inside another variable's value, in either order", () => {
  const message =
    "Environment variable McpServer__Port__X sets a key inside McpServer__Port, which another variable sets to a value; unset one of them";
  for (
    const env of [
      { McpServer__Port: "1", McpServer__Port__X: "2" },
      { McpServer__Port__X: "2", McpServer__Port: "1" },
    ]
  ) {
    assert.throws(() => envTree(env), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.code, "INVALID_VALUE");
      assert.equal(error.message, message);
      return true;
    });
  }
});

Deno.test("mergeTrees() lays the top tree over the base, matching keys case-insensitively", () => {
  const base = {
    ShellConfiguration: { Commands: ["Get-Date", "Get-Item"], ToolCallTimeout: "00:01:00" },
    McpServer: { Port: 1 },
  };
  const merged = mergeTrees(base, {
    shellconfiguration: { commands: ["Get-Location"], MaxResultBytes: "2048" },
    Logging: { LogLevel: { Default: "Debug" } },
  });
  assert.deepEqual(merged, {
    ShellConfiguration: {
      // Arrays replace, never merge item by item.
      Commands: ["Get-Location"],
      ToolCallTimeout: "00:01:00",
      MaxResultBytes: "2048",
    },
    McpServer: { Port: 1 },
    Logging: { LogLevel: { Default: "Debug" } },
  });
  assert.deepEqual(base.ShellConfiguration.Commands, ["Get-Date", "Get-Item"], "base unchanged");
  // A scalar over a section, and a section over a scalar, replace.
  assert.deepEqual(mergeTrees({ a: { b: 1 } }, { A: "x" }), { a: "x" });
  assert.deepEqual(mergeTrees({ a: "x" }, { a: { b: 1 } }), { a: { b: 1 } });
});

Deno.test("parseConfigText() reads JSON with comments, trailing commas and a byte-order mark", async () => {
  assert.deepEqual(
    await parseConfigText('\uFEFF// svc\n{ "McpServer": { "Port": 1, }, /* end */ }', "/c.json"),
    { McpServer: { Port: 1 } },
  );
});

Deno.test("parseConfigText() refuses an empty file and anything but an object, naming the file", async () => {
  const empty = await configError(parseConfigText(" \n\t", "/etc/svc/a.json"));
  assert.equal(empty.code, "INVALID_FILE");
  assert.equal(
    empty.message,
    "Configuration file '/etc/svc/a.json' is empty: it must hold a JSON object (run 'svc create-config --force' for a complete one)",
  );
  assert.equal(
    (await configError(parseConfigText("[1]", "/a.json"))).message,
    "Configuration file '/a.json' must hold a JSON object, not an array",
  );
  assert.equal(
    (await configError(parseConfigText('"text"', "/a.json"))).message,
    `Configuration file '/a.json' must hold a JSON object, not "text"`,
  );
  assert.equal(
    (await configError(parseConfigText("null", "/a.json"))).message,
    "Configuration file '/a.json' must hold a JSON object, not null",
  );
});

Deno.test("parseConfigText() counts lines and columns past comments, and quotes at most 20 characters", async () => {
  const error = await configError(
    parseConfigText(
      '// one\n/* two\n three */ {\n  "a": 1,\n  bad_key_that_goes_on_and_on: 2 }',
      "/c",
    ),
  );
  assert.equal(error.code, "INVALID_FILE");
  assert.equal(
    error.message,
    `Cannot parse configuration file '/c': unexpected "bad_key_that_goes_on" (property names and strings need double quotes) at line 5, column 3`,
  );
});

Deno.test("readConfigFile() reads --config, else SVC_CONFIG, relative to the working directory", async () => {
  await withDir(async (dir) => {
    await Deno.mkdir(`${dir}/sub`);
    await Deno.writeTextFile(`${dir}/sub/flag.json`, '{"From": "flag"}');
    await Deno.writeTextFile(`${dir}/env.json`, '{"From": "env"}');
    await Deno.writeTextFile(`${dir}/appsettings.json`, '{"From": "cwd"}');
    const env = { SVC_CONFIG: "env.json" };
    assert.deepEqual(await readConfigFile("sub/flag.json", env, dir), {
      tree: { From: "flag" },
      path: `${dir}/sub/flag.json`,
    });
    assert.deepEqual(await readConfigFile(undefined, env, dir), {
      tree: { From: "env" },
      path: `${dir}/env.json`,
    });
    assert.deepEqual(await readConfigFile(undefined, {}, dir), {
      tree: { From: "cwd" },
      path: `${dir}/appsettings.json`,
    });
    assert.deepEqual(await readConfigFile(`${dir}/env.json`, {}, "/"), {
      tree: { From: "env" },
      path: `${dir}/env.json`,
    });
  });
});

Deno.test("readConfigFile() falls back to the embedded default only when no file was asked for", async () => {
  await withDir(async (dir) => {
    const fallback = await readConfigFile(undefined, {}, dir);
    assert.equal(fallback.path, null);
    assert.ok(Array.isArray((fallback.tree.ShellConfiguration as { Commands: unknown }).Commands));
    // Each call gets its own copy: changing one cannot change the next.
    (fallback.tree as Record<string, unknown>).ShellConfiguration = null;
    assert.notEqual((await readConfigFile(undefined, {}, dir)).tree.ShellConfiguration, null);

    const missingFlag = await configError(readConfigFile("gone.json", {}, dir));
    assert.equal(missingFlag.code, "UNREADABLE_FILE");
    assert.match(
      missingFlag.message,
      new RegExp(`^Cannot read configuration file '${dir}/gone\\.json' given by --config: `),
    );
    const missingEnv = await configError(readConfigFile(undefined, { SVC_CONFIG: "x.json" }, dir));
    assert.match(
      missingEnv.message,
      /^Cannot read configuration file '.*\/x\.json' given by SVC_CONFIG: /,
    );
  });
});
