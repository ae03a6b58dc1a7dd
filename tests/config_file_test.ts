import assert from "node:assert/strict";
import { type Node, type ParseError, parseTree } from "jsonc-parser";
import { loadSettings, type Settings } from "../lib/config.ts";
import { type ConfigChanges, formatChangeReport, updateConfig } from "../lib/config_edit.ts";
import { createConfig, defaultConfigText } from "../lib/config_template.ts";
import { ConfigError } from "../lib/errors.ts";
import DEFAULTS from "../appsettings.json" with { type: "json" };

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-config-file-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Writes `text` to a fresh appsettings.json, applies `changes`, and hands over the result. */
async function edit(
  text: string,
  changes: ConfigChanges,
  fn: (result: { text: string; path: string; dir: string }) => Promise<void> | void,
): Promise<void> {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, text);
    await updateConfig(path, changes);
    await fn({ text: await Deno.readTextFile(path), path, dir });
  });
}

async function settingsOf(path: string): Promise<Settings> {
  return await loadSettings({ config: path }, { env: {} });
}

/** Settings without what tells a file from the embedded default: its path and each key's source. */
/** Settings without what names the file read (its path, the sources, and the --config value). */
function values(settings: Settings): Omit<Settings, "configPath" | "sources"> {
  const { configPath: _path, sources: _sources, values: given, ...rest } = settings;
  const { "--config": _config, ...others } = given;
  return { ...rest, values: others };
}

function leafPaths(node: Node, prefix = ""): string[] {
  if (node.type === "object") {
    return (node.children ?? []).flatMap((property) => {
      const [key, value] = property.children!;
      const path = prefix === "" ? String(key!.value) : `${prefix}:${key!.value}`;
      const nested = leafPaths(value!, path);
      return nested.length > 0 ? nested : [path];
    });
  }
  return [];
}

Deno.test("defaultConfigText() parses as JSONC without errors, with $schema as the first key", () => {
  const errors: ParseError[] = [];
  const root = parseTree(defaultConfigText(), errors, { allowTrailingComma: false });
  assert.deepEqual(errors, []);
  assert.equal(root?.type, "object");
  const first = root!.children![0]!;
  assert.equal(first.children![0]!.value, "$schema");
  assert.equal(first.children![1]!.value, "./appsettings.schema.json");
});

Deno.test("defaultConfigText() holds every setting svc has", () => {
  const root = parseTree(defaultConfigText())!;
  assert.deepEqual(leafPaths(root).sort(), [
    "$schema",
    "Authentication:Audit:LogArguments",
    "Authentication:Cors:AllowedOrigins",
    "Authentication:DefaultPolicy:RequireAuthentication",
    "Authentication:DefaultPolicy:RequiredRoles",
    "Authentication:DefaultPolicy:RequiredScopes",
    "Authentication:DefaultScheme",
    "Authentication:Enabled",
    "Authentication:Schemes",
    "Logging:LogLevel:Default",
    "McpServer:AllowAnonymous",
    "McpServer:AllowedHosts",
    "McpServer:BodyReadTimeout",
    "McpServer:EnableLegacySse",
    "McpServer:HeaderReadTimeout",
    "McpServer:HttpTransportMode",
    "McpServer:IdleSessionTimeoutSeconds",
    "McpServer:KeepAliveTimeout",
    "McpServer:MaxBufferedBodyBytes",
    "McpServer:MaxConcurrentRequests",
    "McpServer:MaxRequestBodyBytes",
    "McpServer:MaxStreamQueueBytes",
    "McpServer:MaxStreams",
    "McpServer:MaxStreamsPerCaller",
    "McpServer:RunspacePool:AcquisitionTimeout",
    "McpServer:RunspacePool:EagerWarmCount",
    "McpServer:RunspacePool:IdleTtl",
    "McpServer:RunspacePool:MaxPoolSize",
    "McpServer:RunspacePool:MaxWorkerMemoryMB",
    "McpServer:RunspacePool:MinPoolSize",
    "McpServer:RunspacePool:ReplenishCheckInterval",
    "McpServer:RunspacePool:RunspacesPerProcess",
    "McpServer:RunspacePool:ShutdownDrainTimeout",
    "McpServer:RunspacePool:StopTimeout",
    "McpServer:RunspacePool:SweepInterval",
    "McpServer:SendTimeout",
    "McpServer:SessionIdPrefix",
    "McpServer:TlsCertificatePath",
    "McpServer:TlsKeyPath",
    "McpServer:TrustForwardedProto",
    "ShellConfiguration:CacheDirectory",
    "ShellConfiguration:CommandOverrides:Get-Process:AllowedProperties",
    "ShellConfiguration:Commands",
    "ShellConfiguration:ConfirmPreference",
    "ShellConfiguration:Environment:PassVariables",
    "ShellConfiguration:Environment:RemoveVariables",
    "ShellConfiguration:Environment:StartupScript",
    "ShellConfiguration:Environment:StartupScriptPath",
    "ShellConfiguration:ExcludePatterns",
    "ShellConfiguration:HostCacheDirectory",
    "ShellConfiguration:IncludePatterns",
    "ShellConfiguration:KeepNativeProcesses",
    "ShellConfiguration:MaxArgumentItems",
    "ShellConfiguration:MaxRequestedProperties",
    "ShellConfiguration:MaxRequestedPropertyWildcards",
    "ShellConfiguration:MaxResultBytes",
    "ShellConfiguration:Modules",
    "ShellConfiguration:PromptCommands",
    "ShellConfiguration:PromptsAnsweredBy",
    "ShellConfiguration:PwshPath",
    "ShellConfiguration:Resources",
    "ShellConfiguration:ResultResources:MaxBytes",
    "ShellConfiguration:ResultResources:TotalBytes",
    "ShellConfiguration:ResultResources:Ttl",
    "ShellConfiguration:SerializationDepth",
    "ShellConfiguration:ToolCallTimeout",
    "ShellConfiguration:ToolGranularity",
    "ShellConfiguration:UseDefaultDisplayProperties",
    "ShellConfiguration:UserInputTimeout",
    "ShellConfiguration:WorkerStartTimeout",
  ]);
});

Deno.test("defaultConfigText() puts a one-line // comment above every key", () => {
  const text = defaultConfigText();
  const lines = text.split("\n");
  const uncommented: string[] = [];
  const visit = (node: Node) => {
    for (const property of node.type === "object" ? node.children ?? [] : []) {
      const line = text.slice(0, property.offset).split("\n").length - 1;
      if (!lines[line - 1]?.trim().startsWith("//")) uncommented.push(lines[line]!.trim());
      visit(property.children![1]!);
    }
  };
  visit(parseTree(text)!);
  assert.deepEqual(uncommented, []);
});

Deno.test("createConfig() writes a file whose settings equal the embedded default's for every default value", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    const result = await createConfig(path);
    assert.deepEqual(result, { path, overwritten: false });
    assert.equal(await Deno.readTextFile(path), defaultConfigText());
    const created = await settingsOf(path);
    const empty = await Deno.makeTempDir({ dir });
    const embedded = await loadSettings({}, { env: {}, cwd: empty });
    assert.equal(embedded.configPath, null);
    assert.equal(created.configPath, path);
    assert.deepEqual(values(created), values(embedded));
    assert.deepEqual(created.warnings, []);
  });
});

Deno.test("createConfig() writes every setting svc reads, leaving out only deprecated and optional keys", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await createConfig(path);
    const notInFile = Object.entries((await settingsOf(path)).sources)
      .filter(([key, source]) => source === "default" && !key.startsWith("--"))
      .map(([key]) => key)
      .sort();
    assert.deepEqual(
      notInFile,
      [
        // Optional, written as "" (which reads as not set).
        "Authentication:DefaultScheme",
        "McpServer:SessionIdPrefix",
        "McpServer:TlsCertificatePath",
        "McpServer:TlsKeyPath",
        "ShellConfiguration:CacheDirectory",
        "ShellConfiguration:HostCacheDirectory",
        "ShellConfiguration:Environment:StartupScript",
        "ShellConfiguration:Environment:StartupScriptPath",
        "ShellConfiguration:PwshPath",
        // Optional, shown as a commented example.
        "Authentication:ProtectedResource:AuthorizationServers",
        "Authentication:ProtectedResource:Resource",
        "Authentication:ProtectedResource:ResourceName",
        "Authentication:ProtectedResource:ScopesSupported",
        "McpServer:SubprocessHostMode",
        // Follows the transport unless set; shown as a commented example.
        "ShellConfiguration:ReloadOnChange",
        // Derived from the open-files limit unless set; shown as a commented example.
        "McpServer:MaxConnections",
        // Deprecated v1 keys (SPEC §9.4) and PoshMcp's names.
        "McpServer:SessionRunspaceAcquisitionTimeoutSeconds",
        "McpServer:SessionRunspaceCapacity",
        "McpServer:SessionRunspaceIdleTtlSeconds",
        "McpServer:SessionRunspaceSweepIntervalSeconds",
        "McpServer:SessionRunspaceWarmStandbyCount",
        "ShellConfiguration:CommandNames",
        "ShellConfiguration:FunctionNames",
        "ShellConfiguration:FunctionOverrides",
        "ShellConfiguration:Performance:UseDefaultDisplayProperties",
        "PowerShellConfiguration:SubprocessHostMode",
      ].sort(),
    );
  });
});

Deno.test("createConfig() writes the defaults docs/configuration.md documents", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await createConfig(path);
    const settings = await settingsOf(path);
    assert.deepEqual(
      {
        toolCallTimeoutMs: settings.shell.toolCallTimeoutMs,
        userInputTimeoutMs: settings.shell.userInputTimeoutMs,
        maxResultBytes: settings.shell.maxResultBytes,
        serializationDepth: settings.shell.serializationDepth,
        workerStartTimeoutMs: settings.shell.workerStartTimeoutMs,
        pwshPath: settings.shell.pwshPath,
        cacheDirectory: settings.shell.cacheDirectory,
        startupScript: settings.shell.startupScript,
        startupScriptPath: settings.shell.startupScriptPath,
        modules: settings.shell.modules,
        includePatterns: settings.shell.includePatterns,
        commandOverrides: settings.shell.commandOverrides,
        mode: settings.http.mode,
        idleSessionTimeoutMs: settings.http.idleSessionTimeoutMs,
        enableLegacySse: settings.http.enableLegacySse,
        allowedHosts: settings.http.allowedHosts,
        allowedOrigins: settings.http.allowedOrigins,
        stopTimeoutMs: settings.pool.stopTimeoutMs,
        logLevel: settings.logLevel,
      },
      {
        toolCallTimeoutMs: 300_000,
        userInputTimeoutMs: 120_000,
        maxResultBytes: 24_576,
        serializationDepth: 4,
        workerStartTimeoutMs: 120_000,
        pwshPath: null,
        cacheDirectory: null,
        startupScript: null,
        startupScriptPath: null,
        modules: [],
        includePatterns: [],
        // The default offers Get-Process without CommandLine (docs/security.md).
        commandOverrides: {
          "Get-Process": {
            allowedProperties: DEFAULTS.ShellConfiguration.CommandOverrides["Get-Process"]
              .AllowedProperties,
          },
        },
        mode: "Stateless",
        idleSessionTimeoutMs: 600_000,
        enableLegacySse: false,
        allowedHosts: [],
        allowedOrigins: [],
        stopTimeoutMs: 5_000,
        logLevel: "info",
      },
    );
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
    for (const pattern of ["Remove-*", "Disable-*", "*-Credential", "Format-*"]) {
      assert.ok(settings.shell.excludePatterns.includes(pattern), pattern);
    }
  });
});

Deno.test("createConfig() refuses to overwrite an existing file without force, naming the path and --force", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, "{ // mine\n}\n");
    await assert.rejects(createConfig(path), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.code, "INVALID_FILE");
      assert.ok(error.message.includes(`'${path}'`), error.message);
      assert.match(error.message, /--force/);
      return true;
    });
    assert.equal(await Deno.readTextFile(path), "{ // mine\n}\n");
  });
});

Deno.test("createConfig() with force overwrites an existing file and says so", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, "{}\n");
    assert.deepEqual(await createConfig(path, { force: true }), { path, overwritten: true });
    assert.equal(await Deno.readTextFile(path), defaultConfigText());
    // No temporary file is left behind; the schema its $schema names is written beside it.
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), [
      "appsettings.json",
      "appsettings.schema.json",
    ]);
  });
});

Deno.test("createConfig() makes a missing folder, and reports one it cannot make as UNREADABLE_FILE naming the path", async () => {
  await withDir(async (dir) => {
    await createConfig(`${dir}/missing/deeper/appsettings.json`);
    assert.ok((await Deno.stat(`${dir}/missing/deeper/appsettings.schema.json`)).isFile);
    await Deno.writeTextFile(`${dir}/plain`, "a file, not a folder");
    const path = `${dir}/plain/appsettings.json`;
    await assert.rejects(createConfig(path), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.code, "UNREADABLE_FILE");
      assert.ok(error.message.includes(path));
      return true;
    });
  });
});

const COMMENTED = `// my settings
{
  /* the shell */
  "ShellConfiguration": {
    // explicit ones
    "Commands": [
      "Get-Date", // always
      "Get-Process"
    ],
    "ExcludePatterns": ["Remove-*", "Stop-*"], // inline stays inline
    "ToolCallTimeout": "00:01:00"
  },
  "Logging": { "LogLevel": { "Default": "Debug" } }
}
`;

Deno.test("updateConfig() adds and removes values while keeping comments and formatting", async () => {
  await edit(
    COMMENTED,
    {
      addCommands: ["Get-Service"],
      removeCommands: ["Get-Process"],
      addExcludePatterns: ["Format-*"],
      removeExcludePatterns: ["stop-*"],
      addModules: ["Az.Accounts"],
    },
    async ({ text, path }) => {
      assert.equal(
        text,
        `// my settings
{
  /* the shell */
  "ShellConfiguration": {
    // explicit ones
    "Commands": [
      "Get-Date", // always
      "Get-Service"
    ],
    "ExcludePatterns": ["Remove-*", "Format-*"], // inline stays inline
    "ToolCallTimeout": "00:01:00",
    "Modules": [
      "Az.Accounts"
    ]
  },
  "Logging": { "LogLevel": { "Default": "Debug" } }
}
`,
      );
      const settings = await settingsOf(path);
      assert.deepEqual(settings.shell.commands, ["Get-Date", "Get-Service"]);
      assert.deepEqual(settings.shell.excludePatterns, ["Remove-*", "Format-*"]);
      assert.deepEqual(settings.shell.modules, ["Az.Accounts"]);
      assert.equal(settings.shell.toolCallTimeoutMs, 60_000);
    },
  );
});

Deno.test("updateConfig() keeps tab indentation when it edits a tab-indented file", async () => {
  const text = '{\n\t"ShellConfiguration": {\n\t\t"Commands": [\n\t\t\t"Get-Date"\n\t\t]\n\t}\n}\n';
  await edit(text, { addCommands: ["Get-Uptime"], addIncludePatterns: ["Get-*"] }, (result) => {
    assert.equal(
      result.text,
      '{\n\t"ShellConfiguration": {\n\t\t"Commands": [\n\t\t\t"Get-Date",\n\t\t\t"Get-Uptime"\n\t\t],\n' +
        '\t\t"IncludePatterns": [\n\t\t\t"Get-*"\n\t\t]\n\t}\n}\n',
    );
  });
});

Deno.test("updateConfig() keeps CRLF line endings and four-space indentation", async () => {
  const text = [
    "{",
    "    // CRLF file",
    '    "ShellConfiguration": {',
    '        "Modules": [',
    '            "A",',
    '            "B"',
    "        ]",
    "    }",
    "}",
    "",
  ].join("\r\n");
  await edit(text, { removeModules: ["b"], addModules: ["C"], addCommands: ["Get-Date"] }, (r) => {
    assert.equal(
      r.text,
      [
        "{",
        "    // CRLF file",
        '    "ShellConfiguration": {',
        '        "Modules": [',
        '            "A",',
        '            "C"',
        "        ],",
        '        "Commands": [',
        '            "Get-Date"',
        "        ]",
        "    }",
        "}",
        "",
      ].join("\r\n"),
    );
  });
});

Deno.test("updateConfig() keeps a byte-order mark and trailing commas", async () => {
  const text =
    '\uFEFF{\n  "ShellConfiguration": {\n    "Commands": [\n      "A",\n    ],\n  },\n}\n';
  await edit(text, { addCommands: ["B"] }, (r) => {
    assert.equal(
      r.text,
      '\uFEFF{\n  "ShellConfiguration": {\n    "Commands": [\n      "A",\n      "B",\n    ],\n  },\n}\n',
    );
  });
});

Deno.test("updateConfig() is idempotent: a second identical update leaves the file byte for byte", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, COMMENTED);
    const changes: ConfigChanges = {
      addCommands: ["Get-Service", "get-date"],
      removeCommands: ["Get-Process"],
      addIncludePatterns: ["Get-*"],
      removeExcludePatterns: ["Stop-*"],
    };
    const first = await updateConfig(path, changes);
    assert.equal(first.changed, true);
    const bytes = await Deno.readFile(path);
    const { mtime } = await Deno.stat(path);
    const second = await updateConfig(path, changes);
    assert.deepEqual(await Deno.readFile(path), bytes);
    assert.deepEqual((await Deno.stat(path)).mtime, mtime);
    assert.equal(second.changed, false);
    assert.deepEqual(second.added, []);
    assert.deepEqual(second.removed, []);
    assert.deepEqual(second.unchanged, [
      { key: "ShellConfiguration:Commands", value: "Get-Process", reason: "not present" },
      { key: "ShellConfiguration:Commands", value: "Get-Service", reason: "already present" },
      { key: "ShellConfiguration:Commands", value: "Get-Date", reason: "already present" },
      { key: "ShellConfiguration:IncludePatterns", value: "Get-*", reason: "already present" },
      { key: "ShellConfiguration:ExcludePatterns", value: "Stop-*", reason: "not present" },
    ]);
    assert.match(formatChangeReport(second), /^No changes to '.*appsettings\.json'$/m);
  });
});

Deno.test("updateConfig() compares values case-insensitively, like PowerShell", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, COMMENTED);
    const report = await updateConfig(path, {
      addCommands: ["GET-DATE", " get-date "],
      removeCommands: ["get-PROCESS"],
    });
    assert.deepEqual(report.added, []);
    assert.deepEqual(report.removed, [{
      key: "ShellConfiguration:Commands",
      value: "Get-Process",
    }]);
    assert.deepEqual(report.unchanged, [
      { key: "ShellConfiguration:Commands", value: "Get-Date", reason: "already present" },
    ]);
    assert.deepEqual((await settingsOf(path)).shell.commands, ["Get-Date"]);
  });
});

Deno.test("updateConfig() removes items with their own comments and fixes the commas around them", async () => {
  const text = `{
  "ShellConfiguration": {
    "ExcludePatterns": [
      "Remove-*", // destructive
      // stopping things
      "Stop-*",
      "Format-*" // noisy
    ],
    "Commands": ["Get-Date"]
  }
}
`;
  await edit(text, { removeExcludePatterns: ["Format-*", "Remove-*"] }, (r) => {
    assert.equal(
      r.text,
      `{
  "ShellConfiguration": {
    "ExcludePatterns": [
      // stopping things
      "Stop-*"
    ],
    "Commands": ["Get-Date"]
  }
}
`,
    );
  });
  await edit(text, { removeExcludePatterns: ["Format-*", "Remove-*", "Stop-*"] }, (r) => {
    assert.ok(r.text.includes('"ExcludePatterns": [\n      // stopping things\n    ],'));
  });
  await edit(text, { removeCommands: ["Get-Date"] }, (r) => {
    assert.ok(r.text.includes('"Commands": []\n'));
  });
});

Deno.test("updateConfig() empties a multi-line array to []", async () => {
  const text =
    '{\n  "ShellConfiguration": {\n    "Modules": [\n      "A",\n      "B"\n    ]\n  }\n}\n';
  await edit(text, { removeModules: ["A", "B"] }, (r) => {
    assert.equal(r.text, '{\n  "ShellConfiguration": {\n    "Modules": []\n  }\n}\n');
  });
});

Deno.test("updateConfig() edits PoshMcp's PowerShellConfiguration section and its CommandNames array", async () => {
  const text = `{
  // PoshMcp file
  "PowerShellConfiguration": {
    "CommandNames": ["Get-Process", "Get-Service"],
    "Modules": [],
    "EnableDynamicReloadTools": false
  }
}
`;
  await edit(
    text,
    {
      addCommands: ["Get-Date"],
      removeCommands: ["Get-Service"],
      addModules: ["Az"],
      addExcludePatterns: ["Remove-*"],
    },
    async ({ text: updated, path }) => {
      assert.equal(
        updated,
        `{
  // PoshMcp file
  "PowerShellConfiguration": {
    "CommandNames": ["Get-Process", "Get-Date"],
    "Modules": [
      "Az"
    ],
    "EnableDynamicReloadTools": false,
    "ExcludePatterns": [
      "Remove-*"
    ]
  }
}
`,
      );
      const settings = await settingsOf(path);
      assert.deepEqual(settings.shell.commands, ["Get-Process", "Get-Date"]);
      assert.deepEqual(settings.shell.modules, ["Az"]);
      assert.deepEqual(settings.shell.excludePatterns, ["Remove-*"]);
    },
  );
});

Deno.test("updateConfig() adds to an existing Commands array in PoshMcp's section and removes from every array svc reads", async () => {
  const text =
    '{ "PowerShellConfiguration": { "Commands": ["Get-Date"], "CommandNames": ["Get-Date", "Get-Item"] } }';
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, text);
    const report = await updateConfig(path, { removeCommands: ["get-date"] });
    assert.deepEqual(report.removed, [
      { key: "PowerShellConfiguration:Commands", value: "Get-Date" },
      { key: "PowerShellConfiguration:CommandNames", value: "Get-Date" },
    ]);
    await updateConfig(path, { addCommands: ["Get-Uptime"] });
    assert.equal(
      await Deno.readTextFile(path),
      '{ "PowerShellConfiguration": { "Commands": [], "CommandNames": ["Get-Item", "Get-Uptime"] } }',
    );
    assert.deepEqual((await settingsOf(path)).shell.commands, ["Get-Item", "Get-Uptime"]);
  });
});

Deno.test("updateConfig() creates the ShellConfiguration section and its arrays when missing", async () => {
  const text = `{
  // only logging so far
  "Logging": {
    "LogLevel": { "Default": "Warning" } // quiet
  }
}
`;
  await edit(
    text,
    { addCommands: ["Get-Date"], addIncludePatterns: ["Get-*"], removeModules: ["Nope"] },
    async ({ text: updated, path }) => {
      assert.equal(
        updated,
        `{
  // only logging so far
  "Logging": {
    "LogLevel": { "Default": "Warning" } // quiet
  },
  "ShellConfiguration": {
    "Commands": [
      "Get-Date"
    ],
    "IncludePatterns": [
      "Get-*"
    ]
  }
}
`,
      );
      const settings = await settingsOf(path);
      assert.deepEqual(settings.shell.commands, ["Get-Date"]);
      assert.deepEqual(settings.shell.includePatterns, ["Get-*"]);
      assert.equal(settings.logLevel, "warning");
    },
  );
  await edit("{}", { addModules: ["Az"] }, (r) => {
    assert.equal(
      r.text,
      '{\n  "ShellConfiguration": {\n    "Modules": [\n      "Az"\n    ]\n  }\n}',
    );
  });
});

Deno.test("updateConfig() turns a single-string list into an array", async () => {
  const text = '{\n  "ShellConfiguration": {\n    "Commands": "Get-Date"\n  }\n}\n';
  await edit(text, { addCommands: ["Get-Uptime"] }, async ({ path }) => {
    assert.deepEqual((await settingsOf(path)).shell.commands, ["Get-Date", "Get-Uptime"]);
  });
});

Deno.test("updateConfig() edits a file written by createConfig() and keeps its comments", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await createConfig(path);
    await updateConfig(path, { addModules: ["Az.Accounts"], removeExcludePatterns: ["Format-*"] });
    const text = await Deno.readTextFile(path);
    const comments = (t: string) => t.split("\n").filter((l) => l.trim().startsWith("//"));
    assert.deepEqual(comments(text), comments(defaultConfigText()));
    const settings = await settingsOf(path);
    assert.deepEqual(settings.shell.modules, ["Az.Accounts"]);
    assert.ok(!settings.shell.excludePatterns.includes("Format-*"));
    assert.ok(settings.shell.excludePatterns.includes("Remove-*"));
  });
});

Deno.test("updateConfig() refuses a file that does not parse, naming the path and the line", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    const text = '{\n  "ShellConfiguration": {\n    "Commands": ["Get-Date" "Get-Item"]\n  }\n}\n';
    await Deno.writeTextFile(path, text);
    await assert.rejects(updateConfig(path, { addCommands: ["Get-Uptime"] }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.code, "INVALID_FILE");
      assert.ok(error.message.includes(`'${path}'`), error.message);
      assert.match(error.message, /line 3\b/);
      return true;
    });
    assert.equal(await Deno.readTextFile(path), text);
  });
});

Deno.test("updateConfig() refuses a list that holds something other than strings, naming the key", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, '{ "shellconfiguration": { "modules": 3 } }');
    await assert.rejects(updateConfig(path, { addModules: ["Az"] }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.code, "INVALID_VALUE");
      assert.ok(error.message.includes("'shellconfiguration:modules'"), error.message);
      return true;
    });
  });
});

Deno.test("updateConfig() refuses empty values and a value both added and removed", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, "{}");
    await assert.rejects(updateConfig(path, { addCommands: ["  "] }), {
      name: "ConfigError",
      code: "INVALID_VALUE",
    });
    await assert.rejects(updateConfig(path, { addModules: ["Az"], removeModules: ["az"] }), {
      name: "ConfigError",
      code: "INVALID_VALUE",
    });
    assert.equal(await Deno.readTextFile(path), "{}");
  });
});

Deno.test("updateConfig() reports a missing file as UNREADABLE_FILE and points at create-config", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await assert.rejects(updateConfig(path, { addCommands: ["Get-Date"] }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.code, "UNREADABLE_FILE");
      assert.ok(error.message.includes(path));
      assert.match(error.message, /svc create-config/);
      return true;
    });
  });
});

Deno.test("updateConfig() writes atomically: no temporary file is left and the file mode is kept", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, COMMENTED);
    if (Deno.build.os !== "windows") await Deno.chmod(path, 0o640);
    await updateConfig(path, { addModules: ["Az"] });
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["appsettings.json"]);
    if (Deno.build.os !== "windows") assert.equal((await Deno.stat(path)).mode! & 0o777, 0o640);
  });
});

Deno.test("updateConfig() edits the target of a symlink and keeps the link", async () => {
  if (Deno.build.os === "windows") return;
  await withDir(async (dir) => {
    const real = `${dir}/real.json`;
    const link = `${dir}/appsettings.json`;
    await Deno.writeTextFile(real, "{}");
    await Deno.symlink(real, link);
    await updateConfig(link, { addModules: ["Az"] });
    assert.ok((await Deno.lstat(link)).isSymlink);
    assert.deepEqual((await settingsOf(real)).shell.modules, ["Az"]);
  });
});

Deno.test("formatChangeReport() prints one line per value and a summary", () => {
  assert.equal(
    formatChangeReport({
      path: "appsettings.json",
      changed: true,
      added: [{ key: "ShellConfiguration:Commands", value: "Get-Process" }],
      removed: [{ key: "ShellConfiguration:ExcludePatterns", value: "Stop-*" }],
      unchanged: [
        { key: "ShellConfiguration:Modules", value: "Foo", reason: "already present" },
        { key: "ShellConfiguration:Modules", value: "Bar", reason: "not present" },
      ],
      warnings: ["Command 'Remove-Item' is hidden"],
    }),
    [
      "+ ShellConfiguration:Commands: Get-Process",
      "- ShellConfiguration:ExcludePatterns: Stop-*",
      "= ShellConfiguration:Modules: Foo (already present)",
      "= ShellConfiguration:Modules: Bar (not present)",
      "Updated 'appsettings.json': 1 added, 1 removed",
      "Warning: Command 'Remove-Item' is hidden",
    ].join("\n"),
  );
  assert.equal(
    formatChangeReport({
      path: "appsettings.json",
      changed: false,
      added: [],
      removed: [],
      unchanged: [],
      warnings: [],
    }),
    "No changes to 'appsettings.json'",
  );
});
