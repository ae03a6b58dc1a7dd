/**
 * End-to-end tests of `svc serve --transport stdio`: a real MCP client spawns svc, which spawns its
 * worker (real pwsh).
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import type { ElicitRequestFormParams, ElicitResult } from "@modelcontextprotocol/client";
import {
  childrenOf,
  eventually,
  fixtureConfig,
  isAlive,
  logged,
  outputOf,
  runSvc,
  startSvc,
  type SvcConnection,
  TEST_PWSH,
  workerDirectories,
} from "./support/harness.ts";

/** Real pwsh that reports itself as PowerShell 7.2.0 (see the script). */
const OLD_PWSH = new URL("./support/old-pwsh", import.meta.url).pathname;

/**
 * The pid and directory of the session's worker, once it has served a call (a worker that dies
 * while starting is a startup error, not a lost worker).
 */
async function servingWorker(svc: SvcConnection): Promise<[number, string]> {
  assert.deepEqual(outputOf(await svc.callTool("get_fixture_greeting", { Name: "one" })), [
    "Hello, one!",
  ]);
  const [worker] = [...workerDirectories(svc.serverPid()!)];
  assert.ok(worker, "svc has a worker");
  return worker;
}

function textOf(result: { content: { type: string; text?: string }[] }): string {
  return result.content.map((c) => c.text ?? "").join("\n");
}

Deno.test("stdio serves the fixture module and built-ins with their names, schemas and annotations", async (t) => {
  await using svc = await startSvc();
  const { tools } = await svc.listTools();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));

  await t.step("one tool per parameter set, bare names for single-set commands", () => {
    for (
      const name of [
        "start_sleep_seconds",
        "start_sleep_milliseconds",
        "write_output",
        "set_variable",
        "get_variable",
        "get_fixture_item_by_name",
        "get_fixture_item_by_id",
        "test_fixture_binding",
        "test_fixture_credential",
        "get_fixture_greeting",
      ]
    ) assert.ok(byName.has(name), `missing tool ${name}; got ${[...byName.keys()].join(", ")}`);
    assert.ok(!byName.has("get_fixture_item"), "a multi-set command has no unsuffixed tool");
  });

  await t.step(
    "schemas carry mandatory, ValidateSet, enum, ranges, lengths, patterns and counts",
    () => {
      const byId = byName.get("get_fixture_item_by_id")!;
      assert.deepEqual(byId.inputSchema.required, ["Id"]);
      const idProps = byId.inputSchema.properties as Record<string, Record<string, unknown>>;
      assert.deepEqual(idProps.Id!.type, "array");
      assert.deepEqual((idProps.Id!.items as Record<string, unknown>).type, "integer");
      assert.deepEqual(idProps.Kind!.enum, ["File", "Folder", "Link"]);
      const binding = byName.get("test_fixture_binding")!.inputSchema.properties as Record<
        string,
        Record<string, unknown>
      >;
      assert.equal(binding.Count!.minimum, 1);
      assert.equal(binding.Count!.maximum, 10);
      assert.equal(binding.Force!.type, "boolean");
      assert.ok((binding.Color!.enum as string[]).includes("Red"));
      assert.equal(binding.Names!.maxItems, 3);
      assert.equal(binding.Code!.maxLength, 5);
      assert.equal(binding.Code!.pattern, "^[A-Z]+$");
      assert.deepEqual(binding.Mode!.enum, ["Fast", "Slow"]);
      assert.equal(binding.Options!.type, "object");
      assert.ok("WhatIf" in binding, "ShouldProcess commands keep WhatIf");
      assert.ok(!("Verbose" in binding), "common parameters are dropped");
      const cred = byName.get("test_fixture_credential")!.inputSchema.properties as Record<
        string,
        Record<string, unknown>
      >;
      assert.deepEqual(cred.Credential!.required, ["UserName", "Password"]);
    },
  );

  await t.step("descriptions come from help and annotations from the verb", () => {
    const greeting = byName.get("get_fixture_greeting")!;
    assert.equal(greeting.description, "Returns a greeting for a name.");
    assert.equal(greeting.title, "Get-FixtureGreeting");
    const nameProp = (greeting.inputSchema.properties as Record<string, Record<string, unknown>>)
      .Name!;
    assert.equal(nameProp.description, "The name to greet.");
    assert.equal(greeting.annotations?.readOnlyHint, true);
    assert.equal(byName.get("set_variable")!.annotations?.readOnlyHint, false);
  });

  await t.step("each parameter kind binds with the right .NET type", async () => {
    const result = await svc.callTool("test_fixture_binding", {
      Text: "hello",
      Count: 3,
      Big: 9007199254740991,
      Ratio: 0.5,
      Flag: true,
      Force: true,
      Color: "red",
      Names: ["a", "b"],
      Numbers: [1, 2],
      Options: { key: "value" },
      Code: "ABC",
      Mode: "Slow",
    });
    assert.equal(result.isError, undefined, textOf(result));
    const rows = outputOf(result) as { Parameter: string; Type: string; Value: unknown }[];
    const row = (name: string) => rows.find((r) => r.Parameter === name);
    assert.equal(row("Text")?.Type, "System.String");
    assert.equal(row("Count")?.Type, "System.Int32");
    assert.equal(row("Big")?.Type, "System.Int64");
    assert.equal(row("Ratio")?.Type, "System.Double");
    assert.equal(row("Flag")?.Type, "System.Boolean");
    assert.equal(row("Force")?.Value, true);
    assert.equal(row("Color")?.Value, "Red");
    assert.equal(row("Color")?.Type, "System.ConsoleColor");
    assert.equal(row("Names")?.Type, "System.String[]");
    assert.equal(row("Numbers")?.Type, "System.Int32[]");
    assert.equal(row("Options")?.Type, "System.Collections.Hashtable");
    assert.equal(row("Mode")?.Value, "Slow");
  });

  await t.step("a credential argument becomes a PSCredential in the worker", async () => {
    const result = await svc.callTool("test_fixture_credential", {
      Credential: { UserName: "alice", Password: "s3cret!" },
    });
    assert.equal(result.isError, undefined, textOf(result));
    assert.deepEqual(outputOf(result), [{ UserName: "alice", PasswordLength: 7 }]);
  });

  await t.step(
    "a wrong argument type or a missing mandatory argument is an isError result naming it",
    async () => {
      const wrong = await svc.callTool("get_fixture_item_by_id", { Id: ["x"] });
      assert.equal(wrong.isError, true);
      assert.match(textOf(wrong), /'Id'/);
      const missing = await svc.callTool("get_fixture_greeting", {});
      assert.equal(missing.isError, true);
      assert.match(textOf(missing), /Missing required argument 'Name'/);
    },
  );

  await t.step("an unknown tool is the SDK's JSON-RPC invalid-params error", async () => {
    await assert.rejects(() => svc.callTool("no_such_tool", {}), (error: unknown) => {
      const e = error as { code?: number; message?: string };
      assert.equal(e.code, -32602);
      assert.match(String(e.message), /no_such_tool/);
      return true;
    });
  });

  await t.step(
    "output comes back as JSON text plus structuredContent; UTF-8 round-trips exactly",
    async () => {
      const text = "Grüße 日本語 🚀";
      const result = await svc.callTool("write_output", { InputObject: [text] });
      assert.equal(result.isError, undefined, textOf(result));
      assert.deepEqual(outputOf(result), [text]);
      assert.deepEqual(result.structuredContent?.output, [text]);
      const items = await svc.callTool("get_fixture_item_by_name", {
        Name: ["a", "b"],
        Kind: "folder",
      });
      assert.deepEqual(outputOf(items), [
        { Name: "a", Id: 1, Kind: "Folder" },
        { Name: "b", Id: 2, Kind: "Folder" },
      ]);
    },
  );

  await t.step(
    "error records come back with message, category and target; output before them is kept",
    async () => {
      // A non-terminating error beside output is said, but the call did not fail.
      const result = await svc.callTool("invoke_fixture_error", { Message: "disk on fire" });
      assert.equal(result.isError, undefined);
      assert.match(
        (result.structuredContent?.notes as string[]).join("\n"),
        /wrote 1 error record\(s\) and went on/,
      );
      assert.match(textOf(result), /disk on fire/);
      assert.match(textOf(result), /category InvalidArgument/);
      assert.match(textOf(result), /target fixture-target/);
      const errors = result.structuredContent?.errors as {
        category: string;
        terminating: boolean;
      }[];
      assert.equal(errors[0]?.category, "InvalidArgument");
      assert.equal(errors[0]?.terminating, false);
      assert.deepEqual(result.structuredContent?.output, ["after-error"]);
      const thrown = await svc.callTool("invoke_fixture_error", {
        Message: "hard stop",
        Terminating: true,
      });
      assert.equal(thrown.isError, true);
      assert.match(textOf(thrown), /hard stop/);
      assert.equal(
        (thrown.structuredContent?.errors as { terminating: boolean }[]).at(-1)?.terminating,
        true,
      );
    },
  );

  await t.step("warnings and information records are returned with the output", async () => {
    const result = await svc.callTool("write_fixture_streams", {});
    assert.equal(result.isError, undefined, textOf(result));
    assert.deepEqual(outputOf(result), ["streams-done"]);
    assert.deepEqual(result.structuredContent?.warnings, ["fixture warning"]);
    assert.equal(
      (result.structuredContent?.information as { message: string }[])[0]?.message,
      "fixture info",
    );
  });

  await t.step("a prompt nobody can answer stops the command at once, quoting it", async () => {
    const started = Date.now();
    const result = await svc.callTool("read_fixture_prompt", {});
    assert.equal(result.isError, true);
    assert.match(
      textOf(result),
      /^The command asked its user: Read-FixturePrompt: Favourite colour; this client cannot ask its user, so the command was stopped/,
    );
    assert.ok(Date.now() - started < 5_000);
  });

  await t.step("console writes and a stdin read do no harm to the protocol", async () => {
    const console = await svc.callTool("write_fixture_console", {});
    assert.deepEqual(outputOf(console), ["console-done"]);
    const stdin = await svc.callTool("read_fixture_stdin", {});
    assert.deepEqual(outputOf(stdin), ["stdin-eof"]);
    assert.deepEqual(outputOf(await svc.callTool("get_fixture_greeting", { Name: "again" })), [
      "Hello, again!",
    ]);
  });

  await t.step("a result over MaxResultBytes is cut with an explicit notice", async () => {
    const result = await svc.callTool("get_fixture_large_result", { Kilobytes: 100 });
    const text = textOf(result);
    assert.match(
      text,
      /output truncated: (at least )?\d+ bytes exceed ShellConfiguration:MaxResultBytes \(24576\)/,
    );
    assert.equal((result.structuredContent?.truncated as { limit: number }).limit, 24_576);
  });

  await t.step("session state persists from one call to the next", async () => {
    const set = await svc.callTool("set_variable", { Name: "svcState", Value: "kept" });
    assert.equal(set.isError, undefined, textOf(set));
    const got = await svc.callTool("get_variable", { Name: ["svcState"], ValueOnly: true });
    assert.deepEqual(outputOf(got), ["kept"]);
  });

  await t.step("ping is answered while a long call runs", async () => {
    const sleeping = svc.callTool("start_sleep_milliseconds", { Milliseconds: 1500 });
    const started = Date.now();
    await svc.ping();
    assert.ok(Date.now() - started < 1000, "ping waited for the call");
    const done = await sleeping;
    assert.equal(done.isError, undefined, textOf(done));
  });

  await t.step("cancelling a call stops the command promptly and keeps the worker", async () => {
    const worker = childrenOf(svc.serverPid()!)[0]!;
    const controller = new AbortController();
    const started = Date.now();
    const call = svc.callTool("start_sleep_seconds", { Seconds: 30 }, {
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 300);
    await assert.rejects(call);
    // The next call waits for the stopped pipeline, so its timing shows the stop took effect.
    const after = await svc.callTool("get_variable", { Name: ["svcState"], ValueOnly: true });
    assert.ok(Date.now() - started < 5_000, `cancel took ${Date.now() - started} ms`);
    assert.deepEqual(
      outputOf(after),
      ["kept"],
      "the same worker (and its state) serves the next call",
    );
    assert.ok(isAlive(worker));
  });

  await t.step(
    "a worker that exits mid-call is reported with its exit code and replaced",
    async () => {
      const before = childrenOf(svc.serverPid()!);
      const result = await svc.callTool("invoke_fixture_exit", { Code: 3 });
      assert.equal(result.isError, true);
      assert.match(textOf(result), /exited with code 3/);
      const after = await svc.callTool("get_variable", { Name: ["svcState"], ValueOnly: true });
      assert.equal(after.isError, true, "state is lost with the old worker");
      assert.match(textOf(after), /svcState/);
      assert.ok(before.every((pid) => !isAlive(pid)));
      await logged(svc.stderr, /Starting a new PowerShell worker/);
    },
  );

  await t.step("killing the worker from outside is survived", async () => {
    const [worker] = childrenOf(svc.serverPid()!);
    assert.ok(worker, "svc has a worker child");
    Deno.kill(worker, "SIGKILL");
    // Wait until svc has noticed the exit, not only until the process is gone: a call sent in
    // between reaches the dead worker and fails like a call the worker died in.
    assert.ok(
      await eventually(() => svc.stderr().includes(`PowerShell worker ${worker} exited`)),
      "svc logs the worker's exit",
    );
    assert.ok(!isAlive(worker));
    const result = await svc.callTool("get_fixture_greeting", { Name: "phoenix" });
    assert.deepEqual(outputOf(result), ["Hello, phoenix!"]);
  });
});

Deno.test("stdio: a worker's directory is removed when the worker dies and when the session ends", async () => {
  await using svc = await startSvc();
  const server = svc.serverPid()!;
  const [killed, killedDir] = await servingWorker(svc);
  Deno.kill(killed, "SIGKILL");
  assert.ok(
    await eventually(() => !existsSync(killedDir)),
    "a killed worker's directory is removed",
  );
  const result = await svc.callTool("get_fixture_greeting", { Name: "again" });
  assert.deepEqual(outputOf(result), ["Hello, again!"]);
  const [[, dir]] = [...workerDirectories(server)] as [[number, string]];
  await svc.close();
  assert.ok(await eventually(() => !isAlive(server)), "svc exits when its client goes");
  assert.ok(!existsSync(dir), "the session's worker directory is removed before svc exits");
});

Deno.test("stdio: a worker whose svc is killed ends and removes its directory", async () => {
  await using svc = await startSvc();
  const [worker, dir] = await servingWorker(svc);
  // Nothing of svc runs after SIGKILL: only the worker can clean up after itself.
  Deno.kill(svc.serverPid()!, "SIGKILL");
  try {
    assert.ok(await eventually(() => !isAlive(worker)), "the worker ends at end-of-file");
    assert.ok(await eventually(() => !existsSync(dir)), "the worker removes its directory");
  } finally {
    if (isAlive(worker)) Deno.kill(worker, "SIGKILL");
  }
});

Deno.test("stdio time limits stop the command, and kill the process tree when Stop is not enough", async (t) => {
  await using svc = await startSvc({
    config: fixtureConfig({
      CommandOverrides: {
        "Start-Sleep": { ToolCallTimeout: "00:00:01" },
        "Invoke-FixtureStuck": { ToolCallTimeout: "00:00:01" },
      },
    }),
  });

  await t.step(
    "a per-command ToolCallTimeout stops a sleeping command and the worker survives",
    async () => {
      await svc.callTool("set_variable", { Name: "marker", Value: "alive" });
      const started = Date.now();
      const result = await svc.callTool("start_sleep_seconds", { Seconds: 60 });
      const elapsed = Date.now() - started;
      assert.equal(result.isError, true);
      assert.match(textOf(result), /timed out after 1 s/);
      assert.ok(elapsed < 4_000, `timeout took ${elapsed} ms`);
      assert.deepEqual(
        outputOf(await svc.callTool("get_variable", { Name: ["marker"], ValueOnly: true })),
        ["alive"],
      );
    },
  );

  await t.step(
    "a command that ignores Stop is killed with its children after StopTimeout",
    async () => {
      const pidFile = `${svc.dir}/child.pid`;
      const [worker] = childrenOf(svc.serverPid()!);
      const started = Date.now();
      const result = await svc.callTool("invoke_fixture_stuck", { Seconds: 120, PidFile: pidFile });
      const elapsed = Date.now() - started;
      assert.equal(result.isError, true);
      assert.match(textOf(result), /did not stop within 2 s/);
      assert.ok(elapsed < 6_000, `kill took ${elapsed} ms`);
      const child = Number((await Deno.readTextFile(pidFile)).trim());
      assert.ok(await eventually(() => !isAlive(child)), "the command's child process is gone");
      assert.ok(await eventually(() => !isAlive(worker!)), "the worker is gone");
      const next = await svc.callTool("get_fixture_greeting", { Name: "next" });
      assert.deepEqual(outputOf(next), ["Hello, next!"]);
    },
  );
});

Deno.test("stdio runs the startup script file, then the inline script, once before the first call", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/startup.ps1`,
      "Set-Variable -Name fromFile -Value 'file'\nSet-Variable -Name order -Value 'file'\n",
    );
    await using svc = await startSvc({
      config: fixtureConfig({
        Environment: {
          StartupScriptPath: `${dir}/startup.ps1`,
          StartupScript: "Set-Variable -Name order -Value 'inline'",
        },
      }),
    });
    const got = await svc.callTool("get_variable", {
      Name: ["fromFile", "order"],
      ValueOnly: true,
    });
    assert.deepEqual(outputOf(got), ["file", "inline"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stdio works with the 2026-07-28 era, the 2025-11-25 era and a v1 client at 2024-11-05", async (t) => {
  for (const era of ["2026-07-28", "2025-11-25", "v1-2024-11-05"] as const) {
    await t.step(era, async () => {
      const modern = era === "2026-07-28";
      // The 2026-07-28 client answers PowerShell's prompts too (input_required, issue 32).
      let user: (params: ElicitRequestFormParams) => ElicitResult = () => ({ action: "cancel" });
      await using svc = await startSvc({
        era,
        ...(modern
          ? { config: withRemoveItem(), elicitation: (params) => Promise.resolve(user(params)) }
          : {}),
      });
      assert.equal(svc.protocolVersion(), era.replace("v1-", ""));
      const { tools } = await svc.listTools();
      assert.ok(tools.some((tool) => tool.name === "get_fixture_greeting"));
      const result = await svc.callTool("get_fixture_greeting", { Name: era });
      assert.deepEqual(outputOf(result), [`Hello, ${era}!`]);
      assert.deepEqual(result.structuredContent?.output, [`Hello, ${era}!`]);
      if (!modern) return;
      // Remove-Item's confirmation: Yes removes, No keeps.
      for (const [choice, removed] of [["Yes", true], ["No", false]] as const) {
        user = () => ({ action: "accept", content: { answer: choice } });
        const file = await Deno.makeTempFile({ prefix: "svc-stdio-confirm-" });
        const outcome = await svc.callTool("remove_item_path", { Path: file, Confirm: true });
        assert.equal(!existsSync(file), removed, `${choice}: ${JSON.stringify(outcome)}`);
        await Deno.remove(file).catch(() => {});
      }
      // Read-Host gets the user's text; two prompts in one call take two rounds.
      user = (params) => ({
        action: "accept",
        content: "color" in params.requestedSchema.properties
          ? { color: "red" }
          : { [Object.keys(params.requestedSchema.properties)[0]!]: "Ada" },
      });
      assert.deepEqual(outputOf(await svc.callTool("read_fixture_prompt", {})), ["Ada"]);
      const twice = await svc.callTool("test_input_required_result_multi_round", {});
      assert.deepEqual(outputOf(twice), ["Hello, Ada! Your favorite color is red."]);
    });
  }
});

function withRemoveItem(): Record<string, unknown> {
  const config = fixtureConfig();
  (config["ShellConfiguration"] as { Commands: string[] }).Commands.push("Remove-Item");
  return config;
}

Deno.test("a failing startup script stops svc with exit code 3 and the script's message", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/appsettings.json`,
      JSON.stringify(
        fixtureConfig({ Environment: { StartupScript: "throw 'vault sign-in failed'" } }),
      ),
    );
    const { code, stderr, stdout } = await runSvc(
      ["serve", "--config", `${dir}/appsettings.json`, "--pwsh", TEST_PWSH],
      { env: { SVC_CACHE_DIR: `${dir}/cache` } },
    );
    assert.equal(code, 3, stderr);
    assert.match(stderr, /Startup script failed: .*vault sign-in failed/);
    assert.equal(stdout, "", "nothing but protocol may reach stdout");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("without PowerShell svc exits 3 naming where it looked and how to get PowerShell 7.4+", async () => {
  const empty = await Deno.makeTempDir();
  try {
    const { code, stderr } = await runSvc(["serve"], { env: { PATH: empty, SVC_PWSH: "" } });
    assert.equal(code, 3, stderr);
    const line = stderr.trim();
    assert.equal(line.split("\n").length, 1, `one sentence expected, got: ${line}`);
    for (
      const part of ["--pwsh", "SVC_PWSH", "ShellConfiguration:PwshPath", "PATH", "PowerShell 7.4"]
    ) {
      assert.ok(line.includes(part), `message lacks ${part}: ${line}`);
    }
    const missing = await runSvc(["serve", "--pwsh", `${empty}/pwsh`]);
    assert.equal(missing.code, 3);
    assert.match(missing.stderr, /is not an executable file/);
  } finally {
    await Deno.remove(empty, { recursive: true });
  }
});

Deno.test({
  name: "a PowerShell older than 7.4 is refused at startup with exit code 3",
  // tests/support/old-pwsh is a bash script.
  ignore: Deno.build.os === "windows",
}, async () => {
  const cache = await Deno.makeTempDir();
  try {
    const { code, stderr } = await runSvc(["serve", "--pwsh", OLD_PWSH], {
      env: { SVC_CACHE_DIR: cache },
    });
    assert.equal(code, 3, stderr);
    assert.match(stderr, /PowerShell 7\.2\.0 is too old: svc needs PowerShell 7\.4 or later/);
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("svc --version prints the version, --help documents options with defaults and env vars", async () => {
  const version = await runSvc(["--version"]);
  assert.equal(version.code, 0);
  assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+/);
  const help = await runSvc(["serve", "--help"]);
  assert.equal(help.code, 0);
  for (
    const part of [
      "--transport",
      "SVC_TRANSPORT",
      "--pwsh",
      "SVC_PWSH",
      "--config",
      "SVC_CONFIG",
      "--log-level",
      "SVC_LOG_LEVEL",
    ]
  ) {
    assert.ok(help.stdout.includes(part), `help lacks ${part}`);
  }
  const bad = await runSvc(["serve", "--frobnicate"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /frobnicate/);
});

Deno.test("a warm start answers tools/list from the catalog cache", async () => {
  const cache = await Deno.makeTempDir();
  try {
    {
      await using first = await startSvc({ env: { SVC_CACHE_DIR: cache } });
      await first.listTools();
      await logged(first.stderr, /Catalog ready/);
    }
    await using second = await startSvc({ env: { SVC_CACHE_DIR: cache } });
    const { tools } = await second.listTools();
    assert.ok(tools.some((tool) => tool.name === "get_fixture_greeting"));
    await logged(second.stderr, /from the catalog cache/);
    assert.doesNotMatch(second.stderr(), /Catalog ready/);
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});
