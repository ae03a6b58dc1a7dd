import assert from "node:assert/strict";
import { loadSettings, parseConfigText, parseTimeSpan } from "../lib/config.ts";
import { ConfigError } from "../lib/errors.ts";
import { fixtureConfig, runSvc, TEST_PWSH } from "./support/harness.ts";

async function withConfig(text: string, fn: (path: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-config-test-" });
  try {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, text);
    await fn(path);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("parseTimeSpan() reads hh:mm:ss, d.hh:mm:ss and fractions, and refuses nonsense", () => {
  assert.equal(parseTimeSpan("00:05:00"), 300_000);
  assert.equal(parseTimeSpan("1.00:00:01"), 86_401_000);
  assert.equal(parseTimeSpan("00:00:00.250"), 250);
  assert.equal(parseTimeSpan("5 minutes"), null);
  assert.equal(parseTimeSpan("00:61:00"), null);
});

Deno.test("loadSettings() falls back to the embedded default when no file exists", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const settings = await loadSettings({}, { env: {}, cwd: dir });
    assert.equal(settings.configPath, null);
    assert.equal(settings.transport, "stdio");
    assert.ok(settings.shell.commands.includes("Get-Date"));
    assert.equal(settings.shell.toolCallTimeoutMs, 300_000);
    assert.equal(settings.shell.maxResultBytes, 24_576);
    assert.equal(settings.pool.stopTimeoutMs, 5_000);
    assert.equal(settings.shell.startupScript, null);
  } finally {
    await Deno.remove(dir);
  }
});

Deno.test("loadSettings() names the flag of a log level it refuses, and ReloadOnChange follows the transport", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await assert.rejects(loadSettings({ logLevel: "verbose" }, { env: {}, cwd: dir }), {
      name: "ConfigError",
      message:
        /^Invalid log level 'verbose': .*\(flag --log-level, env SVC_LOG_LEVEL, .*\); PowerShell's Verbose is Debug here/,
    });
    const stdio = await loadSettings({}, { env: {}, cwd: dir });
    assert.equal(stdio.shell.reloadOnChange, true, "on by default over stdio");
    const http = await loadSettings({ transport: "http" }, { env: {}, cwd: dir });
    assert.equal(http.shell.reloadOnChange, false, "off by default over HTTP");
    const asked = await loadSettings({ transport: "http" }, {
      env: { ShellConfiguration__ReloadOnChange: "true" },
      cwd: dir,
    });
    assert.equal(asked.shell.reloadOnChange, true);
  } finally {
    await Deno.remove(dir);
  }
});

Deno.test("loadSettings() reads PoshMcp's PowerShellConfiguration section and CommandNames, with comments", async () => {
  await withConfig(
    `{
      // PoshMcp file
      "PowerShellConfiguration": { "CommandNames": ["Get-Process"], "ExcludePatterns": ["Remove-*"], },
    }`,
    async (path) => {
      const settings = await loadSettings({ config: path }, { env: {} });
      assert.deepEqual(settings.shell.commands, ["Get-Process"]);
      assert.deepEqual(settings.shell.excludePatterns, ["Remove-*"]);
      assert.equal(settings.configPath, path);
    },
  );
});

Deno.test("loadSettings() layers flags over environment over file, matching keys case-insensitively", async () => {
  await withConfig(
    `{"shellconfiguration": {"toolcalltimeout": "00:00:10", "Commands": ["Get-Date"], "PwshPath": "/file/pwsh"}}`,
    async (path) => {
      const env = {
        "ShellConfiguration__ToolCallTimeout": "00:00:20",
        "ShellConfiguration__Commands__0": "Get-Location",
        "ShellConfiguration__Commands__1": "Get-Variable",
        "SVC_PWSH": "/env/pwsh",
        "SVC_TRANSPORT": "http",
      };
      const fromEnv = await loadSettings({ config: path }, { env });
      assert.equal(fromEnv.shell.toolCallTimeoutMs, 20_000);
      assert.deepEqual(fromEnv.shell.commands, ["Get-Location", "Get-Variable"]);
      assert.equal(fromEnv.shell.pwshPath, "/env/pwsh");
      assert.equal(fromEnv.transport, "http");
      const fromFlags = await loadSettings(
        { config: path, pwsh: "/flag/pwsh", transport: "stdio" },
        { env },
      );
      assert.equal(fromFlags.shell.pwshPath, "/flag/pwsh");
      assert.equal(fromFlags.transport, "stdio");
    },
  );
});

Deno.test("loadSettings() names the key of a wrong value in a ConfigError", async () => {
  await withConfig(`{"ShellConfiguration": {"ToolCallTimeout": "soon"}}`, async (path) => {
    await assert.rejects(() => loadSettings({ config: path }, { env: {} }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.code, "INVALID_VALUE");
      assert.match(error.message, /'ShellConfiguration:ToolCallTimeout'/);
      assert.match(error.message, /"soon"/);
      return true;
    });
  });
  await withConfig(
    `{"ShellConfiguration": {"Commands": ["Get-Date"], "MaxResultBytes": -1}}`,
    async (path) => {
      await assert.rejects(
        () => loadSettings({ config: path }, { env: {} }),
        /'ShellConfiguration:MaxResultBytes'/,
      );
    },
  );
});

Deno.test("loadSettings() reads per-command time limits from CommandOverrides", async () => {
  await withConfig(
    `{"ShellConfiguration": {"CommandOverrides": {"Start-Sleep": {"ToolCallTimeout": "00:00:02", "RequiredRoles": ["ops"]}}}}`,
    async (path) => {
      const settings = await loadSettings({ config: path }, { env: {} });
      assert.deepEqual(settings.shell.commandOverrides["Start-Sleep"], {
        toolCallTimeoutMs: 2_000,
        requiredRoles: ["ops"],
      });
    },
  );
});

Deno.test("loadSettings() merges PoshMcp's FunctionOverrides into CommandOverrides, which wins field by field", async () => {
  await withConfig(
    `{"PowerShellConfiguration": {
      "FunctionOverrides": {
        "Start-Sleep": {"ToolCallTimeout": "00:00:02", "RequiredRoles": ["ops"]},
        "Get-Date": {"ToolCallTimeout": "00:00:09", "DefaultProperties": ["Ticks"]}
      },
      "CommandOverrides": {"Get-Date": {"ToolCallTimeout": "00:00:03"}}
    }}`,
    async (path) => {
      const settings = await loadSettings({ config: path }, { env: {} });
      assert.deepEqual(settings.shell.commandOverrides, {
        "Start-Sleep": { toolCallTimeoutMs: 2_000, requiredRoles: ["ops"] },
        // Field by field: CommandOverrides' time limit wins, FunctionOverrides' properties stay.
        "Get-Date": { toolCallTimeoutMs: 3_000, defaultProperties: ["Ticks"] },
      });
      assert.ok(settings.warnings.some((w) => w.includes("FunctionOverrides' is deprecated")));
    },
  );
  await withConfig(
    `{"ShellConfiguration": {"FunctionOverrides": {"Stop-Job": {"ToolCallTimeout": "00:00:00"}}}}`,
    async (path) => {
      await assert.rejects(
        () => loadSettings({ config: path }, { env: {} }),
        /^ConfigError: Invalid configuration value for 'ShellConfiguration:FunctionOverrides:Stop-Job:ToolCallTimeout' in '.*appsettings\.json': expected a positive time span like "00:05:00" \(hh:mm:ss\), got "00:00:00"$/,
      );
    },
  );
});

Deno.test("parseConfigText() says what is wrong in words, with line and column", async () => {
  const cases: [string, string][] = [
    ['{\n  "a": 1,\n  "b": }', "expected a value at line 3, column 8"],
    ['{\n  "a": {\n    "b": 1\n', "expected '}' at line 4, column 1"],
    ['{\n  "a": 1\n  "b": 2\n}', "expected ',' between entries at line 3, column 3"],
    ['{ "a": [1, 2 }', "expected ',' between entries at line 1, column 14"],
    ['{ "a": [1, 2', "expected ']' at line 1, column 13"],
    [
      "{ a: 1 }",
      'unexpected "a" (property names and strings need double quotes) at line 1, column 3',
    ],
    ['{ "a": "open }', "a string is not closed with '\"' at line 1, column 8"],
    [
      '{ "a": 1 }\n{}',
      "expected the end of the file after the top-level object at line 2, column 1",
    ],
  ];
  for (const [text, words] of cases) {
    await assert.rejects(
      () => parseConfigText(text, "/cfg/x.json"),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.message, `Cannot parse configuration file '/cfg/x.json': ${words}`);
        return true;
      },
      text,
    );
  }
  await assert.rejects(
    () => parseConfigText("[1]", "x.json"),
    /must hold a JSON object, not an array/,
  );
  await assert.rejects(
    () => parseConfigText("  \n", "x.json"),
    /'x\.json' is empty: it must hold a JSON object/,
  );
  await assert.rejects(() => parseConfigText("\uFEFF", "x.json"), /is empty/);
});

Deno.test("a scalar where a list is expected names the key and the file; variables name themselves", async () => {
  await withConfig(`{"ShellConfiguration": {"Commands": "Get-Date"}}`, async (path) => {
    await assert.rejects(
      () => loadSettings({ config: path }, { env: {} }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(
          error.message,
          `Invalid configuration value for 'ShellConfiguration:Commands' in '${path}': expected an array of strings, like [\"Get-Date\"], got "Get-Date"`,
        );
        return true;
      },
    );
  });
  await withConfig(`{}`, async (path) => {
    // An environment variable cannot hold an array: its single string is a one-item list.
    const one = await loadSettings({ config: path }, {
      env: { ShellConfiguration__Commands: "Get-Date" },
    });
    assert.deepEqual(one.shell.commands, ["Get-Date"]);
    await assert.rejects(
      () =>
        loadSettings({ config: path }, { env: { ShellConfiguration__ToolCallTimeout: "soon" } }),
      /^ConfigError: Invalid value of environment variable ShellConfiguration__ToolCallTimeout: expected a time span like "00:05:00" \(hh:mm:ss\), got "soon"$/,
    );
    await assert.rejects(
      () => loadSettings({ config: path }, { env: { McpServer__RunspacePool__MaxPoolSize: "0" } }),
      /'McpServer:RunspacePool:MaxPoolSize' in environment variable McpServer__RunspacePool__MaxPoolSize: expected an integer >= 1, got "0"/,
    );
  });
  await withConfig(`{"McpServer": {"RunspacePool": {"MaxPoolSize": 0}}}`, async (path) => {
    await assert.rejects(
      () => loadSettings({ config: path }, { env: {} }),
      new RegExp(
        `'McpServer:RunspacePool:MaxPoolSize' in '${path}': expected an integer >= 1, got 0`,
      ),
    );
  });
});

Deno.test("loadSettings() refuses an unknown transport and an unreadable --config file", async () => {
  await assert.rejects(
    () => loadSettings({ transport: "carrier-pigeon" }, { env: {}, cwd: "/" }),
    /'carrier-pigeon'/,
  );
  await assert.rejects(
    () => loadSettings({ config: "/nonexistent/svc.json" }, { env: {} }),
    (error: unknown) => error instanceof ConfigError && /--config/.test(error.message),
  );
});

Deno.test("loadSettings() reads the pool and HTTP settings with their defaults and refuses impossible sizes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const settings = await loadSettings({}, { env: {}, cwd: dir });
    assert.deepEqual(settings.pool, {
      maxPoolSize: 16,
      minPoolSize: 2,
      eagerWarmCount: 2,
      idleTtlMs: 300_000,
      sweepIntervalMs: 30_000,
      acquisitionTimeoutMs: 15_000,
      stopTimeoutMs: 5_000,
      shutdownDrainTimeoutMs: 30_000,
      replenishCheckIntervalMs: 5_000,
      runspacesPerProcess: 16,
      maxWorkerMemoryMB: 1024,
      hostMode: "Pool",
    });
    assert.equal(settings.http.host, "127.0.0.1");
    assert.equal(settings.http.port, 8080);
    assert.equal(settings.http.mode, "Stateless");
    assert.equal(settings.http.idleSessionTimeoutMs, 600_000);
    assert.equal(settings.http.enableLegacySse, false);
    assert.equal(settings.http.mcpPath, null);
    const env = { SVC_MCP_PATH: "custom/", "McpServer__HttpTransportMode": "stateful" };
    const fromEnv = await loadSettings({}, { env, cwd: dir });
    assert.equal(fromEnv.http.mcpPath, "/custom");
    assert.equal(fromEnv.http.mode, "Stateful");
  } finally {
    await Deno.remove(dir);
  }
  await withConfig(
    `{"McpServer": {"RunspacePool": {"MinPoolSize": 5, "MaxPoolSize": 2}}}`,
    async (path) => {
      await assert.rejects(
        () => loadSettings({ config: path }, { env: {} }),
        /'McpServer:RunspacePool:MinPoolSize' in '[^']+': 5 is larger than 'McpServer:RunspacePool:MaxPoolSize' \(2\)/,
      );
    },
  );
  await withConfig(`{"McpServer": {"HttpTransportMode": "Sessiony"}}`, async (path) => {
    await assert.rejects(
      () => loadSettings({ config: path }, { env: {} }),
      /'McpServer:HttpTransportMode' in '[^']+': .*"Stateful".*got "Sessiony"/,
    );
  });
  await withConfig(`{"ShellConfiguration": {"ToolGranularity": "command"}}`, async (path) => {
    const settings = await loadSettings({ config: path }, { env: {} });
    assert.equal(
      settings.shell.toolGranularity,
      "Command",
      "any letter case, spelled as documented",
    );
  });
  await withConfig(`{"ShellConfiguration": {"ToolGranularity": "Module"}}`, async (path) => {
    await assert.rejects(
      () => loadSettings({ config: path }, { env: {} }),
      /'ShellConfiguration:ToolGranularity' in '[^']+': .*"Command".*got "Module"/,
    );
  });
  await assert.rejects(
    () => loadSettings({ port: "99999" }, { env: {}, cwd: "/" }),
    /Invalid port '99999'/,
  );
});

Deno.test("version 1 pool keys apply after their v2 keys, convert seconds, and warn exactly once each", async () => {
  await withConfig(
    JSON.stringify({
      McpServer: {
        SessionRunspaceCapacity: 8,
        SessionRunspaceWarmStandbyCount: 3,
        SessionRunspaceIdleTtlSeconds: 90,
        SessionRunspaceSweepIntervalSeconds: 10,
        SessionRunspaceAcquisitionTimeoutSeconds: 4,
        RunspacePool: { MaxPoolSize: 12 },
      },
    }),
    async (path) => {
      const settings = await loadSettings({ config: path }, { env: {} });
      assert.equal(settings.pool.maxPoolSize, 12, "the v2 key wins");
      assert.equal(settings.pool.minPoolSize, 3, "WarmStandbyCount feeds MinPoolSize");
      assert.equal(settings.pool.eagerWarmCount, 3, "and EagerWarmCount");
      assert.equal(settings.pool.idleTtlMs, 90_000);
      assert.equal(settings.pool.sweepIntervalMs, 10_000);
      assert.equal(settings.pool.acquisitionTimeoutMs, 4_000);
      const deprecations = settings.warnings.filter((w) => w.includes("is deprecated"));
      assert.equal(deprecations.length, 5, deprecations.join("\n"));
      assert.ok(
        deprecations.some((w) =>
          w.includes("'McpServer:SessionRunspaceCapacity'") && w.includes("MaxPoolSize")
        ),
      );
    },
  );
});

Deno.test("unknown keys are warnings with a suggestion; SVC_SESSION_TIMEOUT_MINUTES is reported as unused", async () => {
  await withConfig(
    `{"ShellConfiguration": {"Comands": ["Get-Date"], "Zzzqqq": 1}}`,
    async (path) => {
      const settings = await loadSettings({ config: path }, {
        env: { SVC_SESSION_TIMEOUT_MINUTES: "30" },
      });
      assert.ok(
        settings.warnings.some((w) =>
          /'ShellConfiguration:Comands'.*did you mean 'ShellConfiguration:Commands'/.test(w)
        ),
      );
      assert.ok(
        settings.warnings.some((w) =>
          w.includes("'ShellConfiguration:Zzzqqq'") && !w.includes("did you mean")
        ),
      );
      assert.ok(settings.warnings.some((w) => w.includes("SVC_SESSION_TIMEOUT_MINUTES")));
    },
  );
});

Deno.test("loadSettings() records where each setting came from", async () => {
  await withConfig(`{"ShellConfiguration": {"Commands": ["Get-Date"]}}`, async (path) => {
    const settings = await loadSettings({ config: path, port: "9000" }, {
      env: { "ShellConfiguration__ToolCallTimeout": "00:00:30" },
    });
    assert.equal(settings.sources["ShellConfiguration:Commands"], "file");
    assert.equal(settings.sources["ShellConfiguration:ToolCallTimeout"], "environment");
    assert.equal(settings.sources["ShellConfiguration:MaxResultBytes"], "default");
    assert.equal(settings.sources["--port"], "flag");
  });
});

Deno.test("appsettings.schema.json is generated from the zod schema and up to date", async () => {
  const { configJsonSchema } = await import("../lib/config_schema.ts");
  const committed = JSON.parse(
    await Deno.readTextFile(new URL("../appsettings.schema.json", import.meta.url)),
  );
  assert.deepEqual(
    committed,
    JSON.parse(JSON.stringify(configJsonSchema())),
    "run 'deno task schema'",
  );
  assert.ok(committed.properties.ShellConfiguration.properties.ToolCallTimeout);
});

Deno.test("a configuration file with a UTF-8 byte-order mark loads, and command names are de-duplicated ignoring case", async () => {
  await withConfig(
    `\uFEFF{"ShellConfiguration": {"Commands": ["Get-Date", "get-date", "Get-Location"]}}`,
    async (path) => {
      const settings = await loadSettings({ config: path }, { env: {} });
      assert.deepEqual(settings.shell.commands, ["Get-Date", "Get-Location"]);
    },
  );
});

Deno.test("SubprocessHostMode maps onto the process model, in McpServer or PoshMcp's PowerShellConfiguration", async () => {
  const cases: [string, { hostMode: string; runspacesPerProcess: number }][] = [
    [`{}`, { hostMode: "Pool", runspacesPerProcess: 16 }],
    [`{"McpServer": {"RunspacePool": {"RunspacesPerProcess": 1}}}`, {
      hostMode: "ProcessPool",
      runspacesPerProcess: 1,
    }],
    [`{"McpServer": {"SubprocessHostMode": "processpool"}}`, {
      hostMode: "ProcessPool",
      runspacesPerProcess: 1,
    }],
    [`{"PowerShellConfiguration": {"SubprocessHostMode": "ProcessPool"}}`, {
      hostMode: "ProcessPool",
      runspacesPerProcess: 1,
    }],
    [`{"McpServer": {"SubprocessHostMode": "Pool", "RunspacePool": {"RunspacesPerProcess": 4}}}`, {
      hostMode: "Pool",
      runspacesPerProcess: 4,
    }],
    [`{"McpServer": {"SubprocessHostMode": "Single", "RunspacePool": {"MaxPoolSize": 6}}}`, {
      hostMode: "Single",
      runspacesPerProcess: 6,
    }],
  ];
  for (const [text, expected] of cases) {
    await withConfig(text, async (path) => {
      const { pool } = await loadSettings({ config: path }, { env: {} });
      assert.deepEqual(
        { hostMode: pool.hostMode, runspacesPerProcess: pool.runspacesPerProcess },
        expected,
        text,
      );
    });
  }
});

Deno.test("SubprocessHostMode and RunspacesPerProcess that contradict each other stop svc with exit 2, naming both", async () => {
  const contradictions: [string, RegExp][] = [
    [
      `{"McpServer": {"SubprocessHostMode": "ProcessPool", "RunspacePool": {"RunspacesPerProcess": 8}}}`,
      /'McpServer:RunspacePool:RunspacesPerProcess'.*: 8 contradicts 'McpServer:SubprocessHostMode' \(ProcessPool\)/,
    ],
    [
      `{"PowerShellConfiguration": {"SubprocessHostMode": "Pool"}, "McpServer": {"RunspacePool": {"RunspacesPerProcess": 1}}}`,
      /'McpServer:RunspacePool:RunspacesPerProcess'.*: 1 contradicts 'PowerShellConfiguration:SubprocessHostMode' \(Pool\)/,
    ],
    [
      `{"McpServer": {"SubprocessHostMode": "Single", "RunspacePool": {"MaxPoolSize": 4, "RunspacesPerProcess": 2}}}`,
      /2 contradicts 'McpServer:SubprocessHostMode' \(Single\): Single runs every worker in one process \(MaxPoolSize, 4\)/,
    ],
    [
      `{"McpServer": {"SubprocessHostMode": "Pool"}, "PowerShellConfiguration": {"SubprocessHostMode": "Single"}}`,
      /'McpServer:SubprocessHostMode'.*'Pool' contradicts 'PowerShellConfiguration:SubprocessHostMode' \('Single'\)/,
    ],
  ];
  for (const [text, message] of contradictions) {
    await withConfig(text, async (path) => {
      const run = await runSvc(["doctor", "--config", path, "--pwsh", TEST_PWSH]);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
    });
  }
  await withConfig(`{"McpServer": {"SubprocessHostMode": "Sometimes"}}`, async (path) => {
    const run = await runSvc(["doctor", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /'McpServer:SubprocessHostMode'.*"ProcessPool".*"Sometimes"/);
  });
});

Deno.test("svc doctor shows the process model SubprocessHostMode results in", async () => {
  await withConfig(
    JSON.stringify({ ...fixtureConfig(), McpServer: { SubprocessHostMode: "ProcessPool" } }),
    async (path) => {
      const run = await runSvc(["doctor", "--config", path, "--pwsh", TEST_PWSH]);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /RunspacesPerProcess 1/);
      assert.match(
        run.stdout,
        /SubprocessHostMode ProcessPool: every worker has a process of its own/,
      );
    },
  );
});

Deno.test("loadSettings() reports every problem of a file at once, one sentence each, and exits as one ConfigError", async () => {
  await withConfig(
    `{"ShellConfiguration": {"ToolCallTimeout": 60, "MaxResultBytes": "lots",
      "ToolGranularity": "Bogus", "CommandOverrides": {"Get-Date": {"ToolCallTimeout": "soon"}}},
      "McpServer": {"EnableLegacySse": "maybe", "SessionIdPrefix": "a b"}}`,
    async (path) => {
      const error = await loadSettings({ config: path }, { env: {} }).then(
        () => assert.fail("expected a ConfigError"),
        (e) => e,
      );
      assert.ok(error instanceof ConfigError);
      assert.equal(error.problems.length, 6, error.message);
      assert.match(error.message, /^6 configuration problems:\n {2}- Invalid/);
      const at = (key: string) => `Invalid configuration value for '${key}' in '${path}': `;
      assert.deepEqual(error.problems.toSorted(), [
        `${at("McpServer:EnableLegacySse")}expected true or false, got "maybe"`,
        `${at("McpServer:SessionIdPrefix")}expected 1 to 40 letters, digits or '-', got "a b"`,
        `${
          at("ShellConfiguration:CommandOverrides:Get-Date:ToolCallTimeout")
        }expected a time span like "00:05:00" (hh:mm:ss), got "soon"`,
        `${at("ShellConfiguration:MaxResultBytes")}expected an integer >= 1024, got "lots"`,
        `${
          at("ShellConfiguration:ToolCallTimeout")
        }expected a time span like "00:05:00" (hh:mm:ss), got 60; 60 seconds is "00:01:00"`,
        `${
          at("ShellConfiguration:ToolGranularity")
        }expected "ParameterSet" or "Command", got "Bogus"`,
      ]);
    },
  );
  // An environment variable's number of seconds gets the same hint; one problem is one sentence.
  const single = await loadSettings({}, {
    env: { ShellConfiguration__ToolCallTimeout: "90" },
    cwd: "/nonexistent",
  }).then(() => assert.fail("expected a ConfigError"), (e) => e);
  assert.equal(
    single.message,
    `Invalid value of environment variable ShellConfiguration__ToolCallTimeout: expected a time span like "00:05:00" (hh:mm:ss), got "90"; 90 seconds is "00:01:30"`,
  );
});

Deno.test("loadSettings() resolves relative paths against the file that set them, else the current directory", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-config-paths-" });
  try {
    await Deno.mkdir(`${dir}/conf`);
    await Deno.writeTextFile(`${dir}/conf/startup.ps1`, "function Get-X { 1 }");
    await Deno.writeTextFile(`${dir}/here.ps1`, "function Get-Y { 2 }");
    await Deno.writeTextFile(
      `${dir}/conf/appsettings.json`,
      JSON.stringify({
        ShellConfiguration: {
          Modules: ["Az.Accounts", "./Mine/Mine.psd1"],
          CacheDirectory: "cache",
          PwshPath: "pwsh",
          Environment: { StartupScriptPath: "startup.ps1" },
        },
      }),
    );
    const settings = await loadSettings({ config: `${dir}/conf/appsettings.json` }, {
      env: {},
      cwd: dir,
    });
    assert.equal(settings.shell.startupScriptPath, `${dir}/conf/startup.ps1`);
    assert.deepEqual(settings.shell.modules, ["Az.Accounts", `${dir}/conf/Mine/Mine.psd1`]);
    assert.equal(settings.shell.cacheDirectory, `${dir}/conf/cache`);
    assert.equal(settings.shell.pwshPath, "pwsh", "a bare name is looked up on PATH");
    // A value from an environment variable means the current directory.
    const fromEnv = await loadSettings({ config: `${dir}/conf/appsettings.json` }, {
      env: { ShellConfiguration__Environment__StartupScriptPath: "here.ps1" },
      cwd: dir,
    });
    assert.equal(fromEnv.shell.startupScriptPath, `${dir}/here.ps1`);
    await assert.rejects(
      () =>
        loadSettings({}, {
          env: { ShellConfiguration__Environment__StartupScriptPath: "missing.ps1" },
          cwd: dir,
        }),
      {
        name: "ConfigError",
        message:
          `Invalid configuration value for 'ShellConfiguration:Environment:StartupScriptPath' in environment variable ShellConfiguration__Environment__StartupScriptPath: no file at '${dir}/missing.ps1' (a relative path is resolved against the current directory), got "missing.ps1"`,
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadSettings() reads the TLS pair: a file's paths from its folder, a flag's and variable's from the current directory", async () => {
  await withConfig(
    JSON.stringify({
      McpServer: { TlsCertificatePath: "tls/cert.pem", TlsKeyPath: "/abs/key.pem" },
    }),
    async (path) => {
      const folder = path.slice(0, path.lastIndexOf("/"));
      const fromFile = await loadSettings({ config: path }, { env: {}, cwd: "/elsewhere" });
      assert.deepEqual(fromFile.http.tls, {
        certificatePath: `${folder}/tls/cert.pem`,
        keyPath: "/abs/key.pem",
      });
      const fromFlags = await loadSettings(
        { config: path, tlsCertificate: "c.pem" },
        { env: { SVC_TLS_KEY: "k.pem" }, cwd: "/run" },
      );
      assert.deepEqual(fromFlags.http.tls, {
        certificatePath: "/run/c.pem",
        keyPath: "/run/k.pem",
      });
    },
  );
  const none = await loadSettings({}, { env: {}, cwd: "/nowhere" });
  assert.equal(none.http.tls, null);
  await assert.rejects(
    () => loadSettings({ tlsKey: "/k.pem" }, { env: {}, cwd: "/nowhere" }),
    (error: Error) => {
      assert.equal(error.name, "ConfigError");
      assert.match(
        error.message,
        /McpServer:TlsKeyPath is set but McpServer:TlsCertificatePath is not \(flag --tls-certificate, env SVC_TLS_CERTIFICATE\)/,
      );
      return true;
    },
  );
});
