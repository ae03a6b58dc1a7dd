/**
 * The command line: doctor (text and JSON, on good and broken configurations, every exit code),
 * create-config and update-config through the CLI, --help of every command, and JSON log lines.
 */
import assert from "node:assert/strict";
import { outputWithin } from "./support/deadline.ts";
import {
  FIXTURE_MODULE,
  fixtureConfig,
  post,
  runSvc,
  startHttpSvc,
  startSvc,
  TEST_PWSH,
} from "./support/harness.ts";

const svc = runSvc;

async function withConfig<T>(
  config: unknown,
  fn: (path: string, dir: string) => Promise<T>,
): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "svc-cli-" });
  try {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, typeof config === "string" ? config : JSON.stringify(config));
    return await fn(path, dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("svc doctor reports a healthy configuration in text and JSON, without secrets", async () => {
  const config = {
    // A bare relative StartupScriptPath is the file beside the configuration (issue 31), and its
    // function, which has no help, is not sent to Update-Help.
    ...fixtureConfig({
      Commands: ["Get-Date", "Get-Process", "Get-TeamThing"],
      Environment: { StartupScriptPath: "startup.ps1" },
    }),
    McpServer: { RunspacePool: { EagerWarmCount: 2 } },
    Authentication: {
      Enabled: true,
      Schemes: {
        keys: { Type: "ApiKey", Keys: { ci: { Value: "doctor-secret-5e1f", Roles: ["reader"] } } },
      },
    },
  };
  await withConfig(config, async (path, dir) => {
    await Deno.writeTextFile(
      `${dir}/startup.ps1`,
      "function Get-TeamThing { param([string]$Name) $Name }",
    );
    const json = await svc(["doctor", "--format", "json", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(json.code, 0, json.stdout + json.stderr);
    const report = JSON.parse(json.stdout);
    const team = report.tools.find((t: { name: string }) => t.name === "get_team_thing");
    assert.equal(team?.descriptionSource, "generated", JSON.stringify(report.tools));
    const hints: string[] = report.hints;
    assert.ok(
      hints.some((h) => /of no module, .*\(Get-TeamThing\);.*comment-based help/.test(h)),
      hints.join("\n"),
    );
    assert.ok(!hints.some((h) => /Update-Help/.test(h) && h.includes("Get-TeamThing")));
    // Get-Process's InputObject sets are listed here, not warned about at every start.
    assert.ok(report.leftOut.some((l: string) => l.startsWith("Parameter set 'InputObject' of")));
    assert.ok(!report.warnings.some((w: string) => w.includes("InputObject")), report.warnings);
    assert.equal(report.configuration.path, path);
    assert.equal(report.powershell.path, TEST_PWSH);
    assert.match(report.powershell.version, /^7\./);
    assert.deepEqual(report.powershell.missingMembers, []);
    assert.deepEqual(
      report.modules.map((m: { name: string; found: boolean }) => [m.name, m.found]),
      [[FIXTURE_MODULE, true]],
    );
    const greeting = report.tools.find((t: { name: string }) => t.name === "get_fixture_greeting");
    assert.deepEqual(greeting, {
      name: "get_fixture_greeting",
      command: "Get-FixtureGreeting",
      parameterSet: "__AllParameterSets",
      descriptionSource: "synopsis",
      prompts: "answered by the user only",
    });
    assert.equal(report.pool.workers.length, 2);
    assert.ok(
      report.pool.workers.every((w: { ok: boolean; startMs: number }) => w.ok && w.startMs > 0),
    );
    assert.equal(report.pool.maxPoolSize, 16);
    const sources = Object.fromEntries(
      report.settings.map((s: { key: string; source: string }) => [s.key, s.source]),
    );
    assert.equal(sources["ShellConfiguration:Commands"], "file");
    assert.equal(sources["ShellConfiguration:ToolCallTimeout"], "default");
    assert.equal(sources["--pwsh"], "flag");
    assert.deepEqual(report.auth.schemes[0].keys, [{ id: "ci", scopes: [], roles: ["reader"] }]);
    assert.deepEqual(report.errors, []);
    // The tool list as clients get it is checked against the portable subset, and measured.
    assert.ok(
      report.hints.some((hint: string) =>
        new RegExp(
          `^tools/list carries ${report.tools.length} tool\\(s\\) in \\d+ bytes, every schema in the portable subset`,
        ).test(hint)
      ),
      report.hints.join("\n"),
    );
    const text = await svc(["doctor", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(text.code, 0);
    assert.match(
      text.stdout,
      /get_fixture_greeting {2}<- Get-FixtureGreeting \[__AllParameterSets\] \(description from synopsis; prompts answered by the user only\)/,
    );
    assert.match(
      text.stdout,
      /get_team_thing {2}<- Get-TeamThing \[__AllParameterSets\] \(description generated from metadata; prompts answered by the user only\)/,
    );
    // Who answers each tool's prompts, and which tools ask to confirm.
    assert.match(
      text.stdout,
      /clear_fixture_note {2}<- Clear-FixtureNote \[__AllParameterSets\] \(description from synopsis; prompts answered by the user only; confirms each action \(ConfirmImpact High\)\)/,
    );
    assert.match(text.stdout, /worker 1: started in \d+ ms/);
    assert.match(text.stdout, /engine members a reset reads: all found/);
    assert.match(text.stdout, /Healthy\./);
    for (const output of [json.stdout, json.stderr, text.stdout, text.stderr]) {
      assert.ok(!output.includes("doctor-secret-5e1f"), "doctor printed an API key");
    }
  });
});

const OLD_PWSH = new URL("./support/old-pwsh", import.meta.url).pathname;

Deno.test({
  name: "svc doctor and the start log warn of a PowerShell without the security fixes svc knows of",
  // tests/support/old-pwsh is a bash script.
  ignore: Deno.build.os === "windows",
  async fn() {
    const env = { REPORTED_PWSH_VERSION: "7.6.5" };
    const warning =
      /PowerShell 7\.6\.5 lacks the security fixes of PowerShell 7\.6\.6 \(advisories of August and September 2026/;
    await withConfig(fixtureConfig(), async (path) => {
      const doctor = await svc(
        ["doctor", "--format", "json", "--config", path, "--pwsh", OLD_PWSH],
        {
          env,
        },
      );
      assert.equal(doctor.code, 0, doctor.stderr);
      const report = JSON.parse(doctor.stdout);
      assert.equal(report.powershell.version, "7.6.5");
      assert.ok(report.warnings.some((w: string) => warning.test(w)), report.warnings.join("\n"));
    });
    const config = { ...fixtureConfig(), McpServer: { RunspacePool: { EagerWarmCount: 2 } } };
    await using served = await startHttpSvc({ config, pwsh: OLD_PWSH, env });
    const said = served.stderr().split("\n").filter((line) => warning.test(line));
    assert.equal(said.length, 1, "said once per run, not per worker process");
  },
});

Deno.test("svc doctor leaves the catalog where serve looks first: the next start discovers nothing", async () => {
  const config = fixtureConfig({ Commands: ["Get-Date"] });
  await withConfig(config, async (path, dir) => {
    const env = { SVC_CACHE_DIR: `${dir}/cache` };
    const doctor = await svc(["doctor", "--config", path, "--pwsh", TEST_PWSH], { env });
    assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
    await using server = await startHttpSvc({ config, env });
    assert.match(server.stderr(), /Serving \d+ tools from the catalog cache/);
    assert.doesNotMatch(server.stderr(), /Catalog ready/);
  });
});

Deno.test("svc doctor on a broken configuration: missing module and failing startup script exit 1", async () => {
  const config = fixtureConfig({
    Modules: [FIXTURE_MODULE, "No.Such.Module"],
    Environment: { StartupScript: "throw 'cannot reach the vault'" },
  });
  await withConfig(config, async (path) => {
    const run = await svc(["doctor", "--format", "json", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(run.code, 1, run.stdout + run.stderr);
    const report = JSON.parse(run.stdout);
    assert.ok(
      report.errors.some((e: string) => /Startup script failed: .*cannot reach the vault/.test(e)),
    );
    assert.ok(report.pool.workers.every((w: { ok: boolean }) => !w.ok));
    const text = await svc(["doctor", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(text.code, 1);
    assert.match(text.stdout, /worker 1: FAILED in \d+ ms \(Startup script failed/);
  });
  await withConfig(fixtureConfig({ Modules: [FIXTURE_MODULE, "No.Such.Module"] }), async (path) => {
    const run = await svc(["doctor", "--format", "json", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(run.code, 5, "a configured module that offers nothing: incomplete");
    const report = JSON.parse(run.stdout);
    assert.equal(report.unresolved.length, 1, report.unresolved);
    assert.deepEqual(
      report.modules.map((m: { name: string; found: boolean }) => [m.name, m.found]),
      [[FIXTURE_MODULE, true], ["No.Such.Module", false]],
    );
    assert.ok(report.warnings.some((w: string) => w.includes("'No.Such.Module'")));
    const text = await svc(["doctor", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(text.code, 5);
    assert.match(text.stdout, /MISSING No\.Such\.Module/);
    assert.match(
      text.stdout,
      /\nIncomplete: svc can serve, but 1 configured command\(s\) or module\(s\) offer no tool \(see Warnings; exit code 5\)\.\n$/,
    );
    const strict = await svc(["doctor", "--strict", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(strict.code, 1, "--strict makes warnings a failure");
  });
});

Deno.test("nothing configured is dropped silently: serve warns and doctor's verdict is not Healthy", async () => {
  // A misspelled section: the did-you-mean warning, then nothing is offered.
  const misspelled = { ShellConfig: { Commands: ["Get-Date"] } };
  await withConfig(misspelled, async (path) => {
    const doctor = await svc(["doctor", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(doctor.code, 1, doctor.stdout + doctor.stderr);
    assert.match(doctor.stdout, /svc offers no tools: no configured command or module resolved/);
    assert.match(doctor.stdout, /\nProblems found \(exit code 1\)\.\n$/);
  });
  {
    await using server = await startSvc({ config: misspelled });
    assert.deepEqual((await server.listTools()).tools, []);
    assert.match(server.stderr(), /WARNING +catalog: svc offers no tools/);
  }
  // A command named in Commands and hidden by an exclude pattern is said at every start.
  await using server = await startSvc({
    config: {
      ShellConfiguration: { Commands: ["Get-Date", "Remove-Item"], ExcludePatterns: ["Remove-*"] },
    },
  });
  assert.deepEqual((await server.listTools()).tools.map((t) => t.title), [
    "Get-Date",
    "Get-Date",
    "Get-Date",
    "Get-Date",
  ]);
  assert.match(
    server.stderr(),
    /WARNING +catalog: Command 'Remove-Item' \(ShellConfiguration:Commands\) is hidden by the exclude pattern 'Remove-\*' and is not offered/,
  );
});

Deno.test("svc doctor exits 2 on a configuration error and 3 without PowerShell", async () => {
  await withConfig(`{"ShellConfiguration": {"ToolCallTimeout": "forever"}}`, async (path) => {
    const text = await svc(["doctor", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(text.code, 2);
    assert.match(text.stderr, /'ShellConfiguration:ToolCallTimeout'/);
    const json = await svc(["doctor", "--format", "json", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(json.code, 2);
    assert.match(JSON.parse(json.stdout).errors[0], /'ShellConfiguration:ToolCallTimeout'/);
  });
  // Four mistakes are four sentences of one run, for serve and doctor alike (issue 31).
  const mistakes = {
    ShellConfiguration: {
      Commands: ["Get-Date"],
      ToolCallTimeout: 60,
      SerializationDepth: -1,
      Environment: { StartupScriptPath: "startup.ps1" },
    },
    McpServer: { EnableLegacySse: "maybe" },
  };
  await withConfig(mistakes, async (path, dir) => {
    const expected = [
      `'ShellConfiguration:ToolCallTimeout' in '${path}': expected a time span like "00:05:00" (hh:mm:ss), got 60; 60 seconds is "00:01:00"`,
      `'ShellConfiguration:SerializationDepth' in '${path}': expected an integer >= 1, got -1`,
      `'McpServer:EnableLegacySse' in '${path}': expected true or false, got "maybe"`,
      `'ShellConfiguration:Environment:StartupScriptPath' in '${path}': no file at '${dir}/startup.ps1' (a relative path is resolved against the configuration file's folder), got "startup.ps1"`,
    ];
    const serve = await svc(["serve", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(serve.code, 2, serve.stderr);
    assert.match(serve.stderr, /^svc: 4 configuration problems:\n/);
    for (const problem of expected) assert.ok(serve.stderr.includes(problem), serve.stderr);
    const json = await svc(["doctor", "--format", "json", "--config", path, "--pwsh", TEST_PWSH]);
    assert.equal(json.code, 2);
    const errors: string[] = JSON.parse(json.stdout).errors;
    assert.equal(errors.length, 4, errors.join("\n"));
    for (const problem of expected) assert.ok(errors.some((e) => e.endsWith(problem)), problem);
  });
  // A mistyped flag or command gets the closest name; an unknown one points to --help.
  const flag = await svc(["serve", "--trasnport", "http"]);
  assert.equal(flag.code, 2);
  assert.equal(
    flag.stderr,
    "svc: Unknown option '--trasnport' for 'svc serve': did you mean '--transport'?\n",
  );
  const far = await svc(["doctor", "--zzzzzz"]);
  assert.match(far.stderr, /Unknown option '--zzzzzz' for 'svc doctor': run 'svc doctor --help'/);
  const command = await svc(["serv"]);
  assert.equal(command.code, 2);
  assert.equal(command.stderr, "svc: Unknown command 'serv': did you mean 'serve'?\n");
  // An executable that is not PowerShell is named as such (asked only after its start failed).
  if (Deno.build.os !== "windows") {
    const bash = await withConfig(
      {},
      (path) => svc(["doctor", "--format", "json", "--config", path, "--pwsh", "/bin/sh"]),
    );
    assert.equal(bash.code, 3, bash.stdout + bash.stderr);
    assert.match(
      JSON.parse(bash.stdout).errors.join("\n"),
      /'\/bin\/sh' is not PowerShell: asked for its version it answered .*; point --pwsh, SVC_PWSH or ShellConfiguration:PwshPath at pwsh 7\.4 or later/,
    );
    // The probe runs the executable with the environment a worker gets, not svc's own: the
    // credentials svc withholds from workers must not reach it through `--version` either.
    const probed = await withConfig({}, async (path, dir) => {
      const fake = `${dir}/fake-pwsh`;
      await Deno.writeTextFile(
        fake,
        `#!/bin/sh\n[ "$1" = --version ] && env > "${dir}/probe-env" && echo "FakeShell 1.0"\nexit 1\n`,
      );
      await Deno.chmod(fake, 0o755);
      const run = await svc(["doctor", "--format", "json", "--config", path, "--pwsh", fake], {
        env: { DENO_AUTH_TOKENS: "probe-secret-4711@example.com" },
      });
      return { run, env: await Deno.readTextFile(`${dir}/probe-env`) };
    });
    assert.match(JSON.parse(probed.run.stdout).errors.join("\n"), /answered "FakeShell 1\.0"/);
    assert.match(probed.env, /^PATH=/m);
    assert.doesNotMatch(probed.env, /probe-secret-4711/);
  }
  const empty = await Deno.makeTempDir();
  try {
    const run = await svc(["doctor", "--format", "json"], {
      cwd: empty,
      env: { PATH: empty, SVC_PWSH: "" },
    });
    assert.equal(run.code, 3);
    assert.match(
      JSON.parse(run.stdout).errors[0],
      /PowerShell 7\.4 or later was not found.*--pwsh, SVC_PWSH, ShellConfiguration:PwshPath/,
    );
  } finally {
    await Deno.remove(empty, { recursive: true });
  }
});

Deno.test("svc create-config and update-config edit the file in the invoking directory", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-cli-" });
  try {
    const created = await svc(["create-config"], { env: { SVC_INVOCATION_DIR: dir } });
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /Created default configuration: appsettings\.json/);
    const text = await Deno.readTextFile(`${dir}/appsettings.json`);
    assert.match(text, /"\$schema": "\.\/appsettings\.schema\.json"/);
    assert.match(text, /\/\/ /, "the file is commented");
    // $schema resolves where the file was written: the schema is beside it, and is svc's own.
    const schema = JSON.parse(await Deno.readTextFile(`${dir}/appsettings.schema.json`));
    const shipped = JSON.parse(
      await Deno.readTextFile(new URL("../appsettings.schema.json", import.meta.url)),
    );
    assert.deepEqual(schema, shipped);
    // Missing folders are made, as `mkdir -p` would (issue 31).
    const nested = await svc(["create-config", "--config", "deploy/svc/appsettings.json"], {
      env: { SVC_INVOCATION_DIR: dir },
    });
    assert.equal(nested.code, 0, nested.stderr);
    assert.ok((await Deno.stat(`${dir}/deploy/svc/appsettings.schema.json`)).isFile);
    const again = await svc(["create-config"], { env: { SVC_INVOCATION_DIR: dir } });
    assert.equal(again.code, 2);
    assert.match(again.stderr, /--force/);
    const update = await svc(
      [
        "update-config",
        "--add-command",
        "Get-Service",
        "--add-module",
        "Az.Accounts",
        "--remove-exclude-pattern",
        "Format-*",
      ],
      { env: { SVC_INVOCATION_DIR: dir } },
    );
    assert.equal(update.code, 0, update.stderr);
    assert.match(update.stdout, /\+ ShellConfiguration:Commands: Get-Service/);
    assert.match(update.stdout, /- ShellConfiguration:ExcludePatterns: Format-\*/);
    assert.doesNotMatch(update.stdout, /Warning/, "nothing added is hidden");
    const repeat = await svc(["update-config", "--add-command", "get-service"], {
      env: { SVC_INVOCATION_DIR: dir },
    });
    assert.match(repeat.stdout, /No changes/);
    // What is added and will not be offered is said: the pattern that hides a command, with the
    // command that would un-hide it, and a module path where there is nothing.
    const hidden = await svc(
      ["update-config", "--add-command", "Remove-Item", "--add-module", "./NoSuch/NoSuch.psm1"],
      { env: { SVC_INVOCATION_DIR: dir } },
    );
    assert.equal(hidden.code, 0, hidden.stderr);
    assert.match(
      hidden.stdout,
      /^Warning: Command 'Remove-Item' is hidden by the exclude pattern 'Remove-\*' \(ShellConfiguration:ExcludePatterns\) and will not be offered: 'svc update-config --remove-exclude-pattern "Remove-\*"' would offer it/m,
    );
    assert.match(
      hidden.stdout,
      new RegExp(
        `^Warning: Module '\\./NoSuch/NoSuch\\.psm1' is not there: no file or folder at '${dir}/NoSuch/NoSuch\\.psm1' \\(a relative path is resolved against the configuration file's folder\\)`,
        "m",
      ),
    );
    const after = await Deno.readTextFile(`${dir}/appsettings.json`);
    assert.match(after, /\/\/ /, "comments survive the edit");
    const doctor = await svc(["doctor", "--format", "json", "--pwsh", TEST_PWSH], {
      env: { SVC_INVOCATION_DIR: dir },
    });
    assert.equal(JSON.parse(doctor.stdout).configuration.path, `${dir}/appsettings.json`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--help of svc and of every command lists its options with defaults and environment variables", async () => {
  const top = await svc(["--help"]);
  assert.equal(top.code, 0);
  for (const command of ["serve", "create-config", "update-config", "doctor", "--version"]) {
    assert.match(top.stdout, new RegExp(command));
  }
  const expectations: Record<string, string[]> = {
    serve: [
      "--transport",
      "SVC_TRANSPORT",
      "--host",
      "SVC_HOST",
      "127.0.0.1",
      "--port",
      "8080",
      "--mcp-path",
      "SVC_MCP_PATH",
      "--config",
      "SVC_CONFIG",
      "--pwsh",
      "SVC_PWSH",
      "--log-level",
      "SVC_LOG_LEVEL",
      "--log-format",
    ],
    "create-config": ["--config", "--force"],
    "update-config": [
      "--add-command",
      "--remove-command",
      "--add-include-pattern",
      "--add-exclude-pattern",
      "--add-module",
      "--remove-module",
      "--config",
    ],
    doctor: ["--format", "--strict", "--config", "--pwsh", "Exit codes"],
  };
  for (const [command, parts] of Object.entries(expectations)) {
    const help = await svc([command, "--help"]);
    assert.equal(help.code, 0, `${command} --help`);
    for (const part of parts) {
      assert.ok(help.stdout.includes(part), `${command} --help lacks ${part}`);
    }
  }
  const unknown = await svc(["frobnicate"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /Unknown command 'frobnicate'/);
});

Deno.test("--log-format json writes one JSON object per log line to stderr, and deprecated keys warn once", async () => {
  await withConfig(
    {
      ...fixtureConfig(),
      McpServer: { SessionRunspaceCapacity: 4, RunspacePool: { StopTimeout: "00:00:02" } },
    },
    async (path) => {
      const run = await svc([
        "serve",
        "--config",
        path,
        "--pwsh",
        TEST_PWSH,
        "--log-format",
        "json",
      ]);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, "");
      const lines = run.stderr.trim().split("\n").filter(Boolean);
      assert.ok(lines.length > 0);
      const records = lines.map((line) => JSON.parse(line));
      const deprecations = records.filter((r) =>
        String(r.message).includes("SessionRunspaceCapacity")
      );
      assert.equal(deprecations.length, 1);
      assert.equal(deprecations[0].level, "WARN");
    },
  );
});

Deno.test("bin/svc runs from any directory without a task banner, and names the config it fell back to", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-bin-" });
  try {
    const bin = new URL("../bin/svc", import.meta.url).pathname;
    const run = async (args: string[]) => {
      const output = await outputWithin(bin, {
        args,
        cwd: dir,
        env: { SVC_CACHE_DIR: `${dir}/cache` },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }, `bin/svc ${args.join(" ")}`);
      const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
      return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
    };
    const version = await run(["--version"]);
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
    assert.equal(version.stderr, "", "nothing but svc's own output");

    // stdin is empty, so the stdio server starts, logs, and ends at end-of-input.
    const serve = await run(["serve", "--pwsh", TEST_PWSH]);
    assert.equal(serve.code, 0, serve.stderr);
    assert.doesNotMatch(serve.stderr, /^Task /m);
    assert.match(
      serve.stderr,
      /INFO +config: No --config or SVC_CONFIG given and no appsettings\.json in /,
    );
    assert.ok(
      serve.stderr.includes(`appsettings.json in ${await Deno.realPath(dir)};`),
      serve.stderr,
    );

    // A relative --config means the directory svc was run from, not the repository.
    await Deno.writeTextFile(
      `${dir}/mine.json`,
      JSON.stringify(fixtureConfig({ Commands: ["Get-Date"] })),
    );
    const doctor = await run([
      "doctor",
      "--format",
      "json",
      "--config",
      "mine.json",
      "--pwsh",
      TEST_PWSH,
    ]);
    assert.equal(
      JSON.parse(doctor.stdout).configuration.path,
      `${await Deno.realPath(dir)}/mine.json`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a port in use is a startup error (exit 3) before any worker starts, naming host and port", async () => {
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (taken.addr as Deno.NetAddr).port;
  await withConfig(fixtureConfig(), async (path) => {
    const run = await svc([
      "serve",
      "--transport",
      "http",
      "--port",
      String(port),
      "--config",
      path,
      "--pwsh",
      TEST_PWSH,
    ], { env: { SVC_LOG_LEVEL: "debug" } });
    assert.equal(run.code, 3, run.stderr);
    assert.ok(
      run.stderr.includes(
        `svc: Cannot listen on 127.0.0.1:${port}: the port is already in use; choose another with --port`,
      ),
      run.stderr,
    );
    assert.doesNotMatch(run.stderr, /Starting StatelessRunspacePool|RunspaceWorker .* initialized/);
  });
});

Deno.test("with --log-format json every stderr line of an HTTP server is JSON, library lines included", async () => {
  await using server = await startHttpSvc({ args: ["--log-format", "json"] });
  const call = await post(`${server.url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "json" },
  });
  assert.equal(call.status, 200);
  assert.equal(await server.stop(), 0);
  const records = server.stderr().trim().split("\n").map((line) => {
    try {
      return JSON.parse(line) as { message: string; logger: string; level: string };
    } catch {
      throw new Error(`a stderr line is not JSON: ${line}`);
    }
  });
  const sdk = records.find((r) => r.logger === "svc.console");
  assert.ok(sdk, "the SDK's console line came through the logger");
  assert.equal(sdk.level, "DEBUG");
  const listening = records.find((r) => r.message.startsWith("svc listening on "))!;
  assert.match(
    listening.message,
    /^svc listening on http:\/\/127\.0\.0\.1:\d+ \(MCP at \/ and \/mcp, mode Stateless\)\.$/,
  );
  assert.ok(records.every((r) => !/"/.test(r.message.replace(/'[^']*'/g, ""))), "no quoted values");
  const workers = records.filter((r) => / initialized and enqueued\./.test(r.message))
    .map((r) => /^Worker (\S+) /.exec(r.message)![1]);
  assert.ok(workers.length >= 2);
  assert.equal(new Set(workers).size, workers.length, `worker ids are unique: ${workers}`);
  assert.ok(
    workers.every((id) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$/.test(id!)),
    String(workers),
  );
});

Deno.test("svc doctor shows values with secrets masked, true sources, deprecated keys and callers who can call nothing", async () => {
  const config = {
    ...fixtureConfig({ Commands: ["Get-Date"] }),
    McpServer: { SessionRunspaceCapacity: 4 },
    Authentication: {
      Enabled: true,
      DefaultPolicy: { RequiredRoles: ["reader"] },
      Schemes: {
        keys: {
          Type: "ApiKey",
          EntryNameIsKey: true,
          Keys: {
            ci: { Value: "doctor-secret-5e1f", Roles: ["reader"] },
            "plaintext-poshmcp-key-9a7b": { Roles: ["nobody"] },
          },
        },
      },
    },
  };
  await withConfig(config, async (path) => {
    const text = await svc(["doctor", "--config", path, "--pwsh", TEST_PWSH]);
    const json = await svc(["doctor", "--format", "json", "--config", path, "--pwsh", TEST_PWSH]);
    for (const out of [text.stdout + text.stderr, json.stdout + json.stderr]) {
      assert.doesNotMatch(out, /doctor-secret-5e1f|plaintext-poshmcp-key-9a7b/);
    }
    const rows = new Map(
      (JSON.parse(json.stdout).settings as {
        key: string;
        value: unknown;
        source: string;
        deprecated: string | null;
      }[])
        .map((row) => [row.key, row]),
    );
    assert.equal(
      rows.get("--log-level")?.source,
      "default",
      "no flag was given, so none is reported",
    );
    assert.equal(rows.get("--log-level")?.value, undefined);
    assert.equal(rows.get("McpServer:IdleSessionTimeoutSeconds")?.value, 600);
    assert.equal(rows.get("McpServer:RunspacePool:StopTimeout")?.value, "00:00:05");
    assert.equal(rows.get("Authentication:Schemes:keys:Keys:ci:Value")?.value, "[secret]");
    assert.equal(
      rows.get("McpServer:SessionRunspaceCapacity")?.deprecated,
      "McpServer:RunspacePool:MaxPoolSize",
    );
    assert.equal(
      rows.get("McpServer:SessionRunspaceIdleTtlSeconds"),
      undefined,
      "unset v1 keys are not listed",
    );
    // Text lists only what differs from the defaults, after the rest of the report.
    assert.doesNotMatch(text.stdout, /--log-level =|McpServer:IdleSessionTimeoutSeconds =/);
    assert.match(
      text.stdout,
      /\nSettings not at their defaults \(\d+ of \d+; --format json lists all\)\n/,
    );
    assert.ok(text.stdout.indexOf("Settings not at") > text.stdout.indexOf("Authentication\n"));
    assert.match(
      text.stdout,
      /McpServer:SessionRunspaceCapacity = 4 {2}\[file\] {2}DEPRECATED: use McpServer:RunspacePool:MaxPoolSize/,
    );
    assert.match(
      text.stdout,
      /scheme keys: ApiKey in header X-API-Key; keys: ci \(roles reader; scopes none\), api-key-[0-9a-f]{8} \(roles nobody; scopes none\)/,
    );
    assert.match(
      text.stdout,
      /API key 'api-key-[0-9a-f]{8}' of scheme 'keys' can call no tool: none of its roles \(nobody\)/,
    );
    const flagged = await svc([
      "doctor",
      "--format",
      "json",
      "--log-level",
      "Error",
      "--config",
      path,
      "--pwsh",
      TEST_PWSH,
    ]);
    const level =
      (JSON.parse(flagged.stdout).settings as { key: string; source: string; value: unknown }[])
        .find((row) => row.key === "--log-level");
    assert.deepEqual([level?.source, level?.value], ["flag", "Error"]);
  });
});
