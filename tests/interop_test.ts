/**
 * Clients other than the TypeScript SDK (issue 13): the MCP Inspector's `--strict` tool-schema
 * portability check and its reads of resources in both eras, and the official C# client (where
 * `dotnet` is installed), against svc in both tool granularities and with resources, on real pwsh;
 * and MCP prompts with both (the Inspector CLI lists and gets them, the C# client gets and
 * completes them).
 * Deno fetches the Inspector from the npm registry on first use; the C# client is built from
 * `tests/interop/CsharpClient` with packages from nuget.org.
 */
import assert from "node:assert/strict";
import { fixtureConfig, TEST_PWSH } from "./support/harness.ts";
import { PROMPT_CONFIG } from "./support/prompts.ts";

const root = new URL("../", import.meta.url).pathname;
const INSPECTOR = "npm:@modelcontextprotocol/inspector@2.12.0";

/**
 * Runs the Inspector's CLI with `args` against svc started by `command`, from `dir` and without
 * config or lock, so the tests never touch deno.lock.
 */
function inspector(dir: string, command: string[], ...args: string[]) {
  return run(Deno.execPath(), [
    "run",
    "--allow-all",
    "--quiet",
    "--no-config",
    "--no-lock",
    INSPECTOR,
    "--cli",
    ...args,
    "--",
    ...command,
  ], dir);
}
const GRANULARITIES = ["ParameterSet", "Command"] as const;

/** A resource backed by a fixture command, for the clients that read resources. */
const RESOURCES = {
  greeting: { Uri: "greet://people/{Name}", Command: "Get-FixtureGreeting" },
};

/** A temp dir holding a config of the given granularity, and the svc command line serving it. */
async function svcCommand(
  granularity: string,
  extra: Record<string, unknown> = {},
): Promise<{ dir: string; command: string[] }> {
  const dir = await Deno.makeTempDir({ prefix: "svc-interop-" });
  const config = fixtureConfig({
    ToolGranularity: granularity,
    CacheDirectory: `${dir}/cache`,
    ...extra,
  });
  await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config));
  const command = [`${root}bin/svc`, "serve", "--config", `${dir}/appsettings.json`];
  return { dir, command: [...command, "--pwsh", TEST_PWSH] };
}

/** A temp dir holding the prompts' config (`support/prompts.ts`), and the svc command line. */
async function promptCommand(): Promise<{ dir: string; command: string[] }> {
  const dir = await Deno.makeTempDir({ prefix: "svc-interop-prompts-" });
  const shell = PROMPT_CONFIG.ShellConfiguration as Record<string, unknown>;
  const config = {
    ...PROMPT_CONFIG,
    ShellConfiguration: { ...shell, CacheDirectory: `${dir}/cache` },
  };
  await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config));
  const command = [`${root}bin/svc`, "serve", "--config", `${dir}/appsettings.json`];
  return { dir, command: [...command, "--pwsh", TEST_PWSH] };
}

async function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const output = await new Deno.Command(command, {
    args,
    cwd,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/**
 * The Inspector gives the server it starts 15 s to connect: `bin/svc` must not be installing Deno
 * then (it does on a first run), so it runs once beforehand, untimed.
 */
const svcInstalled = run(`${root}bin/svc`, ["--version"], root).then((out) => {
  assert.equal(out.code, 0, out.stderr);
});

for (const granularity of GRANULARITIES) {
  Deno.test(`the MCP Inspector's --strict schema check finds nothing (ToolGranularity ${granularity})`, async () => {
    await svcInstalled;
    const { dir, command } = await svcCommand(granularity);
    try {
      const checked = await inspector(dir, command, "--strict", "--method", "tools/list");
      assert.equal(checked.code, 0, checked.stderr);
      // --strict prints each finding ("Error: tool …", "Warning: tool …") and a count line.
      assert.doesNotMatch(checked.stderr, /(Error|Warning): tool|across \d+ tool/);
      const { tools } = JSON.parse(checked.stdout) as { tools: { name: string }[] };
      assert.ok(tools.some((tool) => tool.name.startsWith("get_fixture_item")));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("the MCP Inspector CLI lists svc's prompts and gets one, its arguments as values", async () => {
  await svcInstalled;
  const { dir, command } = await promptCommand();
  try {
    const listed = await inspector(dir, command, "--method", "prompts/list");
    assert.equal(listed.code, 0, listed.stderr);
    const { prompts } = JSON.parse(listed.stdout) as {
      prompts: { name: string; arguments: { name: string; required: boolean }[] }[];
    };
    assert.deepEqual(prompts.map((p) => p.name), [
      "get_broken",
      "get_note_review",
      "new_greeting_card",
    ]);
    assert.deepEqual(prompts[2]!.arguments[0], {
      name: "Name",
      description: "Who the card is for.",
      required: true,
    });
    const got = await inspector(
      dir,
      command,
      "--method",
      "prompts/get",
      "--prompt-name",
      "get_note_review",
      "--prompt-args",
      "Text=$(exit 9)",
    );
    assert.equal(got.code, 0, got.stderr);
    assert.deepEqual(JSON.parse(got.stdout).messages[1].content.resource.text, "$(exit 9)");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// The C# client below reads templates, help and kept output; the Inspector lists and reads in each era.
Deno.test("the MCP Inspector lists and reads svc's resources in both eras", async () => {
  await svcInstalled;
  const { dir, command } = await svcCommand("ParameterSet", { Resources: RESOURCES });
  const inspect = async (era: string[], method: string[]) => {
    const read = await inspector(dir, command, ...era, ...method);
    assert.equal(read.code, 0, read.stderr);
    return JSON.parse(read.stdout);
  };
  try {
    for (const era of [[], ["--protocol-era", "modern"]]) {
      const { resources } = await inspect(era, ["--method", "resources/list"]);
      assert.ok(
        resources.some((r: { uri: string }) => r.uri === "svc://help/get_fixture_greeting"),
      );
      const read = await inspect(era, [
        "--method",
        "resources/read",
        "--uri",
        "greet://people/Inspector",
      ]);
      assert.deepEqual(read.contents, [
        { uri: "greet://people/Inspector", mimeType: "text/plain", text: "Hello, Inspector!" },
      ]);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const DOTNET = (() => {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if (Deno.statSync(`${dir}/dotnet`).isFile) return `${dir}/dotnet`;
    } catch { /* not here */ }
  }
  return null;
})();

Deno.test({
  name: DOTNET
    ? "the official C# client lists and calls svc's tools in both granularities, answers a 2025-11-25 confirmation, and gets and completes prompts"
    : "the official C# client lists and calls svc's tools [skipped: no dotnet on PATH]",
  ignore: !DOTNET,
  fn: async () => {
    const build = await Deno.makeTempDir({ prefix: "svc-csharp-" });
    // dotnet leaves directories of its own in its temp directory: this one goes with the build.
    const dotnetEnv = { TMPDIR: `${build}/tmp` };
    await Deno.mkdir(dotnetEnv.TMPDIR);
    const commands: Record<string, { dir: string; command: string[] }> = {};
    try {
      const project = `${root}tests/interop/CsharpClient`;
      const built = await run(
        DOTNET!,
        [
          "build",
          project,
          "-c",
          "Release",
          "--artifacts-path",
          build,
          "-nologo",
          "-v",
          "q",
        ],
        build,
        dotnetEnv,
      );
      assert.equal(built.code, 0, built.stdout + built.stderr);
      const client = `${build}/bin/CsharpClient/release/CsharpClient.dll`;
      const calls = [
        { tool: "get_fixture_item", arguments: { Name: ["a"] } },
        { tool: "get_fixture_item", arguments: { Id: [2], Kind: "Folder" } },
        { tool: "get_fixture_item", arguments: { Kind: "File" } },
        { tool: "get_fixture_item_by_name", arguments: { Name: ["b"] } },
      ];
      await Deno.writeTextFile(`${build}/calls.json`, JSON.stringify(calls));
      const seen: Record<string, { tools: { name: string }[]; results: unknown[] }> = {};
      for (const granularity of GRANULARITIES) {
        const { dir, command } = commands[granularity] = await svcCommand(granularity);
        const ran = await run(DOTNET!, [client, `${build}/calls.json`, ...command], dir, dotnetEnv);
        assert.equal(ran.code, 0, ran.stderr);
        seen[granularity] = JSON.parse(ran.stdout);
      }
      type Result = { isError?: boolean; content: { text: string }[]; protocolError?: string };
      const text = (result: unknown) =>
        (result as Result).protocolError ??
          (result as Result).content.map((c) => c.text).join("\n");
      const byCommand = seen["Command"]!;
      const names = byCommand.tools.map((tool) => tool.name);
      assert.ok(names.includes("get_fixture_item") && !names.includes("get_fixture_item_by_id"));
      const [byName, byId, incomplete, unknown] = byCommand.results as Result[];
      assert.match(text(byName), /"Name":"a","Id":1,"Kind":"File"/);
      assert.match(text(byId), /"Name":"item2","Id":2,"Kind":"Folder"/);
      assert.equal(incomplete!.isError, true);
      assert.match(text(incomplete), /parameter set 'ByName' requires Name/);
      assert.match(
        text(unknown),
        /Unknown tool 'get_fixture_item_by_name'; did you mean 'get_fixture_item'/,
      );
      const bySet = seen["ParameterSet"]!;
      assert.ok(bySet.tools.some((tool) => tool.name === "get_fixture_item_by_id"));
      assert.match(text(bySet.results[0]), /Unknown tool 'get_fixture_item'/);
      assert.match(text(bySet.results[3]), /"Name":"b","Id":1,"Kind":"File"/);
      assert.equal(byCommand.tools.length < bySet.tools.length, true);

      // 2025-11-25 with form elicitation: a confirmation and a Read-Host reach the client's user,
      // who answers "Yes" to both (the text prompt takes the one value under another name), then
      // declines a Read-Host whose command would delete a file after it: the file stays. The
      // caller's Confirm false is refused, and nothing is asked.
      const victim = `${build}/victim.txt`;
      await Deno.writeTextFile(victim, "keep");
      const yes = { action: "accept", content: { answer: "Yes" } };
      await Deno.writeTextFile(
        `${build}/prompts.json`,
        JSON.stringify({
          calls: [
            { tool: "test_fixture_binding", arguments: { Text: "x", Confirm: true } },
            { tool: "read_fixture_prompt", arguments: {} },
            { tool: "remove_fixture_after_read", arguments: { Path: victim } },
            { tool: "clear_fixture_note", arguments: { Path: victim, Confirm: false } },
          ],
          answers: [yes, yes, { action: "decline" }],
        }),
      );
      // The ParameterSet server's catalog is cached: this start skips discovery (6 s -> 2 s).
      const { dir, command } = commands["ParameterSet"]!;
      const ran = await run(DOTNET!, [client, `${build}/prompts.json`, ...command], dir, dotnetEnv);
      assert.equal(ran.code, 0, ran.stderr);
      const { results, elicitations } = JSON.parse(ran.stdout) as {
        results: Result[];
        elicitations: { message: string }[];
      };
      assert.deepEqual(elicitations.map((e) => e.message), [
        'Test-FixtureBinding: Confirm: Are you sure you want to perform this action?\nPerforming the operation "Test-FixtureBinding" on target "fixture".',
        "Read-FixturePrompt: Favourite colour",
        "Remove-FixtureAfterRead: Your name",
      ]);
      assert.match(text(results[0]), /"Parameter":"Text","Type":"System.String","Value":"x"/);
      assert.match(text(results[1]), /\["Yes"\]/);
      assert.match(
        text(results[2]),
        /^The user declined: Remove-FixtureAfterRead: Your name; the command was stopped/,
      );
      assert.match(
        text(results[3]),
        /^Argument 'Confirm' of tool 'clear_fixture_note' may only be true/,
      );
      assert.equal(await Deno.readTextFile(victim), "keep");

      // Prompts: listed with their arguments, got with role messages, completed from PowerShell.
      const prompted = commands["prompts"] = await promptCommand();
      await Deno.writeTextFile(
        `${build}/get-prompts.json`,
        JSON.stringify({
          calls: [],
          prompts: [
            { name: "new_greeting_card", arguments: { Name: "Bob", Day: "Sunday" } },
            { name: "new_greeting_card", arguments: { Name: "Mallory" } },
          ],
          completions: [
            { prompt: "new_greeting_card", argument: "Name", value: "" },
            { prompt: "get_note_review", argument: "Topic", value: "bu" },
          ],
        }),
      );
      const asked = await run(
        DOTNET!,
        [client, `${build}/get-prompts.json`, ...prompted.command],
        prompted.dir,
        dotnetEnv,
      );
      assert.equal(asked.code, 0, asked.stderr);
      const shown = JSON.parse(asked.stdout) as {
        prompts: { name: string; arguments: { name: string; required?: boolean }[] }[];
        promptResults: { messages?: unknown[]; protocolError?: string }[];
        completionResults: { completion: { values: string[]; total: number; hasMore: boolean } }[];
      };
      assert.deepEqual(shown.prompts.map((p) => p.name), [
        "get_broken",
        "get_note_review",
        "new_greeting_card",
      ]);
      assert.deepEqual(shown.promptResults[0]!.messages, [
        {
          role: "user",
          content: {
            type: "text",
            text: "Write a warm Thanks card of 2 lines for Bob, to arrive on Sunday.",
          },
        },
        { role: "assistant", content: { type: "text", text: "Dear Bob," } },
      ]);
      assert.match(shown.promptResults[1]!.protocolError!, /Invalid argument 'Name' for prompt/);
      assert.deepEqual(shown.completionResults.map((r) => r.completion), [
        { values: ["Alice", "Bob", "Carol Ann"], total: 3, hasMore: false },
        { values: ["budget"], total: 1, hasMore: false },
      ]);

      // Resources: the help and a command-backed template are listed and read, and output cut at
      // MaxResultBytes is read back through the result's resource_link.
      const withResources = commands["Resources"] = await svcCommand("ParameterSet", {
        Resources: RESOURCES,
      });
      await Deno.writeTextFile(
        `${build}/resources.json`,
        JSON.stringify([
          { read: "svc://help/get_fixture_greeting" },
          { read: "greet://people/C%23%20client" },
          { tool: "get_fixture_record", arguments: { Count: 100_000 } },
          { read: "<link>" },
          { read: "greet://people/a/b" },
        ]),
      );
      const read = await run(
        DOTNET!,
        [client, `${build}/resources.json`, ...withResources.command],
        withResources.dir,
        dotnetEnv,
      );
      assert.equal(read.code, 0, read.stderr);
      const listed = JSON.parse(read.stdout) as {
        resources: string[];
        resourceTemplates: string[];
        results: {
          contents?: { text: string }[];
          structuredContent?: { output: { Id: number }[] };
          protocolError?: string;
        }[];
      };
      assert.ok(listed.resources.includes("svc://help/get_fixture_greeting"));
      assert.deepEqual(listed.resourceTemplates, ["svc://help/{tool}", "greet://people/{Name}"]);
      const [help, greeting, cut, page, missing] = listed.results;
      assert.match(help!.contents![0]!.text, /^# get_fixture_greeting\n/);
      assert.equal(greeting!.contents![0]!.text, "Hello, C# client!");
      const kept = cut!.structuredContent!.output;
      const first = (JSON.parse(page!.contents![0]!.text) as { Id: number }[])[0]!;
      assert.equal(first.Id, kept.at(-1)!.Id + 1, "the page starts after the kept items");
      assert.match(missing!.protocolError!, /Resource 'greet:\/\/people\/a\/b' was not found/);
    } finally {
      for (const { dir } of Object.values(commands)) await Deno.remove(dir, { recursive: true });
      await Deno.remove(build, { recursive: true });
    }
  },
});
