/**
 * The README works when followed literally: its quick start's serve command serves the built-in
 * configuration from a directory outside the repository, its test command is the one `.ci/run`
 * runs, and every step of "Expose your own commands" (PATH, a directory in a fresh home, the
 * module, create-config, update-config, doctor, and the desktop client's entry started as a client
 * starts it) runs as written and ends with an MCP client calling the new tool.
 */
import assert from "node:assert/strict";
import {
  Client,
  type ElicitRequestFormParams,
  type ElicitResult,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { defaultCacheDirectory } from "../lib/cache_directory.ts";
import { outputWithin, within } from "./support/deadline.ts";
import { TEST_PWSH } from "./support/harness.ts";

const root = new URL("../", import.meta.url).pathname.replace(/\/$/, "");
const readme = await Deno.readTextFile(`${root}/README.md`);

/** The text of the fenced `language` block that follows `<!-- marker -->`. */
function block(marker: string, language: string): string {
  const match = new RegExp(`<!-- ${marker} -->\\s*\`\`\`${language}\\n([\\s\\S]*?)\`\`\``)
    .exec(readme);
  assert.ok(match, `README has no ${language} block after '<!-- ${marker} -->'`);
  return match[1]!;
}

/** A block's commands, each without its trailing comment. */
function commands(text: string): string[] {
  return text.split("\n").map((line) => line.replace(/\s+#.*$/, "").trim()).filter(Boolean);
}

// Servers started here compile no worker host of their own (as the harness's do not).
const HOST_CACHE: Record<string, string> = defaultCacheDirectory()
  ? { SVC_HOST_CACHE_DIR: defaultCacheDirectory()! }
  : {};

/** What the user of {@linkcode withStdioServer}'s client answers when a command asks; set per call. */
let user: (params: ElicitRequestFormParams) => ElicitResult = () => ({ action: "decline" });

/**
 * Connects an MCP client that can ask its user (`user`) to `command args` started in `cwd` with
 * exactly `env`; runs `use`.
 */
async function withStdioServer(
  entry: { command: string; args: string[]; cwd: string; env: Record<string, string> },
  use: (client: Client) => Promise<void>,
): Promise<void> {
  // `env -i` clears what the SDK transport would otherwise pass on (USER, SHELL, TERM …).
  const transport = new StdioClientTransport({
    command: "/usr/bin/env",
    args: [
      "-i",
      ...Object.entries(entry.env).map(([key, value]) => `${key}=${value}`),
      entry.command,
      ...entry.args,
    ],
    cwd: entry.cwd,
    stderr: "pipe",
  });
  let log = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => log += new TextDecoder().decode(chunk));
  const client = new Client({ name: "svc-readme-test", version: "1.0.0" }, {
    capabilities: { elicitation: { form: {} } },
  });
  client.setRequestHandler(
    "elicitation/create",
    (request) => Promise.resolve(user(request.params as ElicitRequestFormParams)),
  );
  try {
    await within(client.connect(transport), `'${entry.command}' to answer initialize`);
    await use(client);
  } catch (error) {
    throw new Error(`${(error as Error).message}; server stderr: ${log.trim() || "(empty)"}`);
  } finally {
    await client.close();
  }
}

const IS_UNIX = Deno.build.os !== "windows";

Deno.test({
  name: "README quick start: its test command is .ci/run's, and its serve command serves the " +
    "built-in configuration outside the repository",
  // bin/svc is a bash script; Windows runs bin\svc.cmd, which tests/recipes_test.ts does not cover.
  ignore: !IS_UNIX,
  fn: async () => {
    const [serve, test] = commands(block("quick-start", "sh"));
    assert.equal(test, "bin/deno task test");
    const ci = await Deno.readTextFile(`${root}/.ci/run`);
    assert.ok(
      ci.split("\n").some((line) => line.trim().startsWith(test!)),
      `.ci/run does not run the README's test command '${test}'`,
    );
    assert.equal(serve, "bin/svc serve");
    const [program, ...args] = serve!.split(" ");
    const scratch = await Deno.makeTempDir({ prefix: "svc-readme-quick-" });
    try {
      await withStdioServer({
        command: `${root}/${program}`,
        args,
        cwd: scratch,
        env: {
          PATH: "/usr/bin:/bin",
          HOME: Deno.env.get("HOME") ?? scratch,
          SVC_PWSH: TEST_PWSH,
          SVC_CACHE_DIR: `${scratch}/cache`,
          ...HOST_CACHE,
        },
      }, async (client) => {
        const names = (await client.listTools()).tools.map((tool) => tool.name);
        // The six commands the README names, each as at least one tool.
        for (const command of ["date", "location", "process", "time_zone", "uptime", "culture"]) {
          assert.ok(names.some((name) => name.startsWith(`get_${command}`)), `get_${command}`);
        }
      });
    } finally {
      await Deno.remove(scratch, { recursive: true });
    }
  },
});

Deno.test({
  name: "README 'Expose your own commands': each step runs as written, and a client calls the tool",
  ignore: !IS_UNIX,
  fn: async () => {
    const home = await Deno.makeTempDir({ prefix: "svc-readme-home-" });
    try {
      // The steps as one bash session, as a reader types them: from the clone, then in ~/mytools.
      const module = block("guide: MyTools.psm1", "powershell");
      const script = [
        "set -euo pipefail",
        ...commands(block("guide: path", "sh")),
        ...commands(block("guide: directory", "sh")),
        `cat > MyTools.psm1 <<'END_OF_MODULE'\n${module}END_OF_MODULE`,
        ...commands(block("guide: configure", "sh")),
        ...commands(block("guide: check", "sh")),
      ].join("\n");
      const run = await outputWithin(
        "bash",
        {
          args: ["-c", script],
          cwd: root,
          env: { HOME: home, SVC_PWSH: TEST_PWSH, ...HOST_CACHE },
          stdout: "piped",
          stderr: "piped",
        },
        "the README's walk",
        120_000,
      );
      const stdout = new TextDecoder().decode(run.stdout);
      const stderr = new TextDecoder().decode(run.stderr);
      assert.equal(run.code, 0, `${stdout}\n${stderr}`);
      // doctor names the new tool beside the command it runs.
      assert.match(stdout, /get_greeting\b.*Get-Greeting/, stdout);

      const entry = JSON.parse(
        block("guide: client", "json").replaceAll("/opt/svc", root)
          .replaceAll("/home/you", home),
      ).mcpServers.mytools as { command: string; args: string[]; env?: Record<string, string> };
      // Copied as it is, the entry works: svc finds its own PowerShell, no SVC_PWSH needed.
      assert.equal(entry.env, undefined, "the client entry sets no environment");
      // Step 7's resource, put where the step says.
      const configPath = `${home}/mytools/appsettings.json`;
      const configText = await Deno.readTextFile(configPath);
      assert.ok(configText.includes('"Resources": {}'), "the created file has an empty Resources");
      await Deno.writeTextFile(
        configPath,
        configText.replace('"Resources": {}', block("guide: resource", "json").trim()),
      );
      await withStdioServer({
        command: entry.command,
        args: entry.args,
        cwd: "/",
        env: { PATH: "/usr/bin:/bin", HOME: home, ...HOST_CACHE },
      }, async (client) => {
        const tool = (await client.listTools()).tools.find((t) => t.name === "get_greeting");
        assert.ok(tool, "get_greeting is offered");
        assert.match(tool.description ?? "", /Greets someone by name/);
        const schema = tool.inputSchema as {
          required?: string[];
          properties: Record<string, { enum?: string[] }>;
        };
        assert.deepEqual(schema.required, ["Name"]);
        assert.deepEqual(schema.properties.Style?.enum?.slice().sort(), ["Loud", "Plain"]);
        const result = await client.callTool({
          name: "get_greeting",
          arguments: { Name: "World", Style: "Loud" },
        });
        assert.notEqual(result.isError, true, JSON.stringify(result));
        assert.match(JSON.stringify(result.content), /HELLO, WORLD!/);

        // Step 6: the confirmation reaches the user with the README's text, and Yes empties the note.
        const note = `${home}/note.txt`;
        await Deno.writeTextFile(note, "a note");
        const asked: ElicitRequestFormParams[] = [];
        user = (params) => {
          asked.push(params);
          return { action: "accept", content: { answer: "Yes" } };
        };
        const removed = await client.callTool({ name: "clear_note", arguments: { Path: note } });
        assert.notEqual(removed.isError, true, JSON.stringify(removed));
        const output = (removed.structuredContent as { output?: unknown } | undefined)?.output;
        assert.deepEqual(output, [`Emptied ${note}`]);
        assert.equal((await Deno.readTextFile(note)).trim(), "");
        const question = JSON.parse(block("guide: question", "json").replaceAll("/home/you", home));
        const form = question.inputRequests.Confirm.params;
        assert.equal(asked.length, 1);
        assert.equal(asked[0]!.message, form.message);
        const answer = asked[0]!.requestedSchema.properties["answer"] as {
          oneOf: { const: string }[];
          default: string;
        };
        const offered = answer.oneOf.map((choice) => choice.const);
        for (const choice of form.requestedSchema.properties.answer.oneOf) {
          assert.ok(offered.includes(choice.const), `${choice.const} is not among ${offered}`);
        }
        assert.equal(answer.default, form.requestedSchema.properties.answer.default);
        const retry = JSON.parse(block("guide: retry", "json").replaceAll("/home/you", home));
        assert.deepEqual([retry.name, retry.arguments], ["clear_note", { Path: note }]);
        assert.deepEqual(retry.inputResponses.Confirm, {
          action: "accept",
          content: { answer: "Yes" },
        });
        // No skips it and says so; the assistant cannot turn the question off.
        await Deno.writeTextFile(note, "a note");
        user = () => ({ action: "accept", content: { answer: "No" } });
        const kept = await client.callTool({ name: "clear_note", arguments: { Path: note } });
        assert.match(JSON.stringify(kept.content), /The user answered No to: Clear-Note: Confirm:/);
        const bypass = await client.callTool({
          name: "clear_note",
          arguments: { Path: note, Confirm: false },
        });
        assert.equal(bypass.isError, true);
        assert.equal((await Deno.readTextFile(note)).trim(), "a note");

        // Step 7: the tool's help and the configured resource.
        const help = await client.readResource({ uri: "svc://help/get_greeting" });
        assert.match(JSON.stringify(help.contents), /Greets someone by name.*Who to greet/);
        const greeting = await client.readResource({ uri: "greet://people/Ada" });
        assert.deepEqual(
          greeting.contents.map((c) => "text" in c ? c.text : null),
          ["Hello, Ada"],
        );
      });
    } finally {
      await Deno.remove(home, { recursive: true });
    }
  },
});
