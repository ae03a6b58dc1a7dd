/**
 * MCP prompts and completions on real PowerShell with the SDK client: commands of `PromptCommands`
 * are listed with their arguments (required flags, descriptions from help), `prompts/get` runs them
 * and turns their output into messages (strings, role objects, an embedded resource), arguments
 * are values and never code, and `completion/complete` answers from PowerShell's completion
 * (ValidateSet, enums, `[ArgumentCompleter]` seeing the other arguments, `Register-ArgumentCompleter`),
 * over stdio and HTTP in both eras; over HTTP with authentication, a prompt needs its command's
 * roles, for its completions too. A prompt's command that asks its user asks as a tool call does:
 * by elicitation during the get (2025-11-25), or through `input_required` and a retry bound to the
 * prompt and its arguments (2026-07-28).
 */
import assert from "node:assert/strict";
import {
  Client,
  type ElicitRequestFormParams,
  type ElicitResult,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import {
  connectWithKey,
  eventually,
  fixtureConfig,
  post,
  runSvc,
  startHttpSvc,
  startSvc,
  TEST_PWSH,
} from "./support/harness.ts";
import { PROMPT_CONFIG } from "./support/prompts.ts";
import { walkConfiguration } from "./support/walk.ts";
import { parse } from "jsonc-parser";
import { MAX_COMPLETION_VALUES } from "../lib/mcp_completion.ts";

type Prompted = Pick<Client, "listPrompts" | "getPrompt" | "complete" | "getServerCapabilities">;

/** What every transport and era must show of the prompts. */
async function checkPrompts(client: Prompted): Promise<void> {
  assert.ok(client.getServerCapabilities()?.prompts, "prompts are declared");
  assert.ok(client.getServerCapabilities()?.completions, "completions are declared");
  const { prompts } = await client.listPrompts();
  assert.deepEqual(prompts.map((p) => p.name), [
    "get_broken",
    "get_note_review",
    "new_greeting_card",
  ]);
  const card = prompts.find((p) => p.name === "new_greeting_card")!;
  assert.equal(card.description, "Asks for a greeting card.");
  assert.deepEqual(
    card.arguments?.map((a) => [a.name, a.required]),
    [["Name", true], ["Day", false], ["Tone", false], ["Occasion", false], ["Lines", false]],
  );
  assert.equal(
    card.arguments?.find((a) => a.name === "Occasion")?.description,
    "What the card celebrates.",
  );

  const got = await client.getPrompt({
    name: "new_greeting_card",
    arguments: { Name: "Carol Ann", Day: "friday", Lines: "3" },
  });
  assert.deepEqual(got.messages, [
    {
      role: "user",
      content: {
        type: "text",
        text: "Write a warm Thanks card of 3 lines for Carol Ann, to arrive on Friday.",
      },
    },
    { role: "assistant", content: { type: "text", text: "Dear Carol Ann," } },
  ]);

  // An argument is a value: nothing in it runs.
  const note = await client.getPrompt({
    name: "get_note_review",
    arguments: { Text: "$(Get-Date) '; exit 9 #" },
  });
  assert.deepEqual(note.messages, [
    { role: "user", content: { type: "text", text: "Review this note." } },
    {
      role: "user",
      content: {
        type: "resource",
        resource: {
          uri: "note://current",
          mimeType: "text/plain",
          text: "$(Get-Date) '; exit 9 #",
        },
      },
    },
  ]);

  await assert.rejects(
    client.getPrompt({ name: "new_greeting_card", arguments: {} }),
    /Missing required argument 'Name' for prompt 'new_greeting_card'/,
  );
  await assert.rejects(
    client.getPrompt({ name: "new_greeting_card", arguments: { Name: "Mallory" } }),
    /Invalid argument 'Name' for prompt 'new_greeting_card'/,
  );
  await assert.rejects(
    client.getPrompt({ name: "new_greeting_cards" }),
    /Unknown prompt 'new_greeting_cards'; did you mean 'new_greeting_card'/,
  );
  await assert.rejects(
    client.getPrompt({ name: "get_broken", arguments: { Why: "on purpose" } }),
    /Prompt 'get_broken' failed: .*broken: on purpose/s,
  );

  const values = async (
    name: string,
    argument: string,
    value: string,
    others?: Record<string, string>,
  ) =>
    (await client.complete({
      ref: { type: "ref/prompt", name },
      argument: { name: argument, value },
      ...(others ? { context: { arguments: others } } : {}),
    })).completion;
  assert.deepEqual(await values("new_greeting_card", "Name", ""), {
    values: ["Alice", "Bob", "Carol Ann"],
    total: 3,
    hasMore: false,
  });
  assert.deepEqual((await values("new_greeting_card", "Name", "Ca")).values, ["Carol Ann"]);
  assert.deepEqual((await values("new_greeting_card", "Day", "T")).values, ["Thursday", "Tuesday"]);
  assert.deepEqual((await values("new_greeting_card", "Tone", "w", { Name: "Bob" })).values, [
    "warm-for-Bob",
    "witty-for-Bob",
    "wry-for-Bob",
  ]);
  assert.deepEqual((await values("get_note_review", "Topic", "b")).values, [
    "budget",
    "backlog",
    "birthday",
  ]);
  // A string parameter with no completer offers no file names, and code in a value stays text.
  assert.deepEqual((await values("new_greeting_card", "Occasion", "")).values, []);
  assert.deepEqual((await values("get_note_review", "Topic", "$(exit 9)")).values, []);
  await assert.rejects(values("new_greeting_card", "Colour", ""), /has no argument 'Colour'/);
  // MCP's cap of 100 values, saying how many there were.
  const many = await values("get_note_review", "Count", "");
  assert.deepEqual([many.values.length, many.values[99], many.total, many.hasMore], [
    MAX_COMPLETION_VALUES,
    "v100",
    150,
    true,
  ]);
  await assert.rejects(values("get_missing", "X", ""), /Unknown prompt 'get_missing'/);
}

Deno.test("prompts and completions over stdio, in both eras", async (t) => {
  for (const era of ["2025-11-25", "2026-07-28"] as const) {
    await t.step(era, async () => {
      await using svc = await startSvc({ config: PROMPT_CONFIG, era });
      await checkPrompts(svc.client!);
      if (era === "2025-11-25") {
        // A completer that hangs is stopped at the completion's time limit (5 s), and offers none.
        const started = performance.now();
        const slow = await svc.client!.complete({
          ref: { type: "ref/prompt", name: "get_note_review" },
          argument: { name: "Count", value: "slow" },
        });
        assert.deepEqual(slow.completion.values, []);
        assert.ok(performance.now() - started < 30_000, "stopped long before the completer ends");
        assert.match(
          svc.stderr(),
          /Completion of Get-NoteReview -Count by local gave nothing: timeout/,
        );
        // The worker serves on after the stop.
        assert.equal(
          (await svc.client!.getPrompt({ name: "get_note_review", arguments: { Text: "x" } }))
            .messages.length,
          2,
        );
      }
    });
  }
});

Deno.test("prompts and completions over HTTP in both eras, and roles decide who gets them", async () => {
  const config = {
    ...PROMPT_CONFIG,
    ShellConfiguration: {
      ...(PROMPT_CONFIG.ShellConfiguration as Record<string, unknown>),
      CommandOverrides: { "Get-Broken": { RequiredRoles: ["ops"] } },
    },
    Authentication: {
      Enabled: true,
      DefaultScheme: "keys",
      DefaultPolicy: { RequireAuthentication: true },
      Schemes: {
        keys: {
          Type: "ApiKey",
          Keys: { ops: { Value: "ops-key", Roles: ["ops"] }, reader: { Value: "reader-key" } },
        },
      },
    },
  };
  await using svc = await startHttpSvc({ config });
  const connect = (key: string, era: "2025-11-25" | "2026-07-28") =>
    connectWithKey(`${svc.url}/mcp`, key, era);
  for (const era of ["2025-11-25", "2026-07-28"] as const) {
    const ops = await connect("ops-key", era);
    try {
      await checkPrompts(ops);
    } finally {
      await ops.close();
    }
    const reader = await connect("reader-key", era);
    try {
      const names = (await reader.listPrompts()).prompts.map((p) => p.name);
      assert.deepEqual(names, ["get_note_review", "new_greeting_card"], era);
      await assert.rejects(reader.getPrompt({ name: "get_broken" }), /Unknown prompt 'get_broken'/);
      await assert.rejects(
        reader.complete({
          ref: { type: "ref/prompt", name: "get_broken" },
          argument: { name: "Why", value: "" },
        }),
        /Unknown prompt 'get_broken'/,
      );
    } finally {
      await reader.close();
    }
  }
});

Deno.test("stdio: an edit of a prompt's module sends prompts/list_changed, and the new argument is listed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-prompts-reload-" });
  try {
    const module = `${dir}/Cards.psm1`;
    const before =
      'function New-Card { param([Parameter(Mandatory)] [string] $Name) "A card for $Name." }\n';
    await Deno.writeTextFile(module, before);
    await using svc = await startSvc({
      config: { ShellConfiguration: { Modules: [module], PromptCommands: ["New-Card"] } },
      env: { SVC_CACHE_DIR: `${dir}/cache` },
    });
    const client = svc.client!;
    let changed = 0;
    client.setNotificationHandler("notifications/prompts/list_changed", () => {
      changed++;
    });
    const argumentsOf = async () =>
      (await client.listPrompts()).prompts[0]?.arguments?.map((a) => a.name);
    assert.deepEqual(await argumentsOf(), ["Name"]);
    await Deno.writeTextFile(
      module,
      before.replace("[string] $Name)", "[string] $Name, [string] $From)").replace(
        "for $Name.",
        "for $Name from $From.",
      ),
    );
    assert.ok(await eventually(() => changed >= 1, 60_000), "prompts/list_changed was sent");
    assert.deepEqual(await argumentsOf(), ["Name", "From"]);
    const got = await client.getPrompt({
      name: "new_card",
      arguments: { Name: "Ada", From: "Bo" },
    });
    assert.deepEqual(got.messages, [{
      role: "user",
      content: { type: "text", text: "A card for Ada from Bo." },
    }]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the README walk's Get-Greeting as a prompt: listed, completed and got as its text says", async () => {
  await using walk = await walkConfiguration();
  const config = parse(await Deno.readTextFile(walk.config)) as {
    ShellConfiguration: Record<string, unknown>;
  };
  config.ShellConfiguration.PromptCommands = ["Get-Greeting"];
  await using svc = await startSvc({ config, env: { SVC_CACHE_DIR: `${walk.dir}/cache` } });
  const client = svc.client!;
  const [greeting] = (await client.listPrompts()).prompts;
  assert.deepEqual(
    [greeting?.name, greeting?.arguments?.map((a) => [a.name, a.required])],
    ["get_greeting", [["Name", true], ["Style", false]]],
  );
  const styles = await client.complete({
    ref: { type: "ref/prompt", name: "get_greeting" },
    argument: { name: "Style", value: "" },
  });
  assert.deepEqual(styles.completion.values, ["Loud", "Plain"]);
  const got = await client.getPrompt({ name: "get_greeting", arguments: { Name: "Ada" } });
  assert.deepEqual(got.messages, [{ role: "user", content: { type: "text", text: "Hello, Ada" } }]);
});

Deno.test("svc doctor lists the prompts with their arguments, and a prompt command not found as incomplete", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-prompts-doctor-" });
  try {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, JSON.stringify(PROMPT_CONFIG));
    const doctor = (...format: string[]) =>
      runSvc(["doctor", ...format, "--config", path, "--pwsh", TEST_PWSH]);
    const json = await doctor("--format", "json");
    assert.equal(json.code, 5, json.stdout + json.stderr);
    const report = JSON.parse(json.stdout);
    assert.deepEqual(report.prompts, [
      { name: "get_broken", command: "Get-Broken", arguments: ["Why"] },
      {
        name: "get_note_review",
        command: "Get-NoteReview",
        arguments: ["Text*", "Topic", "Count"],
      },
      {
        name: "new_greeting_card",
        command: "New-GreetingCard",
        arguments: ["Name*", "Day", "Tone", "Occasion", "Lines"],
      },
    ]);
    assert.deepEqual(report.unresolved, [
      "Command 'Get-Missing' (ShellConfiguration:PromptCommands) was not found in the worker session",
    ]);
    const text = await doctor();
    assert.match(
      text.stdout,
      /\nPrompts \(3\)\n {2}get_broken {2}<- Get-Broken \(arguments: Why; \* required\)\n/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * A prompt command that asks its user who a briefing is for, then writes the topic to `Log` (so a
 * test sees whether it ran on past its question) and the prompt's one message.
 */
const ASKING_SCRIPT = String.raw`
function New-Briefing {
    <#
    .SYNOPSIS
    Asks for a briefing, asking its user who it is for.
    #>
    param([Parameter(Mandatory)] [string] $Topic, [string] $Log)
    $field = [System.Management.Automation.Host.FieldDescription]::new('Audience')
    $answer = $Host.UI.Prompt('Briefing', "Who is the briefing on $Topic for?", [System.Management.Automation.Host.FieldDescription[]]@($field))
    if ($Log) { Add-Content -Path $Log -Value $Topic }
    "Write a briefing on $Topic for $($answer['Audience'])."
}

function New-Memo {
    param([Parameter(Mandatory)] [string] $Topic)
    "Write a memo on $Topic."
}
`;

const ASKING_CONFIG = fixtureConfig({
  PromptCommands: ["New-Briefing", "New-Memo"],
  Environment: { StartupScript: ASKING_SCRIPT },
  CommandOverrides: { "New-Memo": { ConfirmBeforeRun: true } },
});

/** A file path for the command's `Log`, and whether the command wrote it. */
function briefingLog(dir: string, name: string) {
  const path = `${dir}/${name}.log`;
  return {
    path,
    written: () => Deno.readTextFile(path).then((text) => text.trim(), () => null),
  };
}

Deno.test("stdio 2025-11-25: a prompt's command asks the client's user by elicitation; a decline stops it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-prompts-ask-" });
  const answers: ElicitResult[] = [];
  const asked: string[] = [];
  try {
    await using svc = await startSvc({
      config: ASKING_CONFIG,
      elicitation: (params) => {
        asked.push(params.message);
        return Promise.resolve(answers.shift() ?? { action: "cancel" });
      },
    });
    const client = svc.client!;
    const yes = briefingLog(dir, "yes");
    answers.push({ action: "accept", content: { Audience: "the board" } });
    const got = await client.getPrompt({
      name: "new_briefing",
      arguments: { Topic: "budget", Log: yes.path },
    });
    assert.deepEqual(got.messages, [{
      role: "user",
      content: { type: "text", text: "Write a briefing on budget for the board." },
    }]);
    assert.match(asked[0] ?? "", /Who is the briefing on budget for\?/);
    assert.equal(await yes.written(), "budget");

    const no = briefingLog(dir, "no");
    answers.push({ action: "decline" });
    await assert.rejects(
      client.getPrompt({ name: "new_briefing", arguments: { Topic: "backlog", Log: no.path } }),
      /Prompt 'new_briefing' \(New-Briefing\) gave no messages: The user declined: .*Who is the briefing on backlog for\?.*; the command was stopped/s,
    );
    assert.equal(asked.length, 2);
    assert.equal(await no.written(), null, "the command stopped at its question");
    assert.match(
      svc.stderr(),
      /Tool call new_briefing \(New-Briefing\) by local, question .*: declined\./,
    );

    // ConfirmBeforeRun: svc asks before the command runs, naming it and its arguments.
    answers.push({ action: "accept", content: { answer: "Yes" } });
    const memo = await client.getPrompt({ name: "new_memo", arguments: { Topic: "rota" } });
    assert.deepEqual(memo.messages, [{
      role: "user",
      content: { type: "text", text: "Write a memo on rota." },
    }]);
    assert.match(asked[2] ?? "", /Run this command\?\nNew-Memo -Topic 'rota'/);
    answers.push({ action: "accept", content: { answer: "No" } });
    await assert.rejects(
      client.getPrompt({ name: "new_memo", arguments: { Topic: "rota" } }),
      /Prompt 'new_memo' \(New-Memo\) gave no messages: The user answered No to: .*; the command was not run/s,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stdio 2025-11-25: a client without elicitation gets a prompt whose command asks stopped, saying why", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-prompts-noask-" });
  try {
    await using svc = await startSvc({ config: ASKING_CONFIG });
    const log = briefingLog(dir, "none");
    await assert.rejects(
      svc.client!.getPrompt({
        name: "new_briefing",
        arguments: { Topic: "budget", Log: log.path },
      }),
      /Prompt 'new_briefing' \(New-Briefing\) gave no messages: The command asked its user: New-Briefing: Briefing: Who is the briefing on budget for\?; this client cannot ask its user, so the command was stopped/,
    );
    assert.equal(await log.written(), null);
    // A command svc must confirm with its user first is not run where nobody can be asked.
    await assert.rejects(
      svc.client!.getPrompt({ name: "new_memo", arguments: { Topic: "rota" } }),
      /Prompt 'new_memo' \(New-Memo\) was not run: .*ConfirmBeforeRun.*this client cannot ask its user/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

type RpcBody = { result?: Record<string, unknown>; error?: { code: number; message: string } };

Deno.test("http 2026-07-28: a prompt's command asks through input_required; a retry is bound to its prompt and arguments", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "svc-prompts-mrtr-" });
  await using svc = await startHttpSvc({ config: ASKING_CONFIG });
  const raw = async (method: string, params: Record<string, unknown>) =>
    (await post(`${svc.url}/mcp`, {
      jsonrpc: "2.0",
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
          "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
        },
      },
    }, {
      accept: "application/json",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      "mcp-name": params["name"] as string,
    })).body as RpcBody;
  try {
    await t.step("the SDK client answers the question and gets the messages", async () => {
      const client = new Client({ name: "t", version: "1" }, {
        versionNegotiation: { mode: { pin: "2026-07-28" } },
        capabilities: { elicitation: { form: {} } },
      });
      const asked: string[] = [];
      client.setRequestHandler("elicitation/create", (request) => {
        asked.push((request.params as ElicitRequestFormParams).message);
        return Promise.resolve({ action: "accept", content: { Audience: "new hires" } });
      });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)));
      try {
        const log = briefingLog(dir, "sdk");
        const got = await client.getPrompt({
          name: "new_briefing",
          arguments: { Topic: "onboarding", Log: log.path },
        });
        assert.deepEqual(got.messages, [{
          role: "user",
          content: { type: "text", text: "Write a briefing on onboarding for new hires." },
        }]);
        assert.equal(asked.length, 1);
        assert.match(asked[0]!, /Who is the briefing on onboarding for\?/);
        assert.equal(await log.written(), "onboarding");
      } finally {
        await client.close();
      }
    });

    await t.step(
      "a retry with other arguments, or as a tool call, is -32602 and runs nothing",
      async () => {
        const [a, b] = [briefingLog(dir, "a"), briefingLog(dir, "b")];
        const first = await raw("prompts/get", {
          name: "new_briefing",
          arguments: { Topic: "budget", Log: a.path },
        });
        assert.equal(first.result?.["resultType"], "input_required", JSON.stringify(first));
        const requests = first.result!["inputRequests"] as Record<string, unknown>;
        const [key] = Object.keys(requests);
        const answer = { [key!]: { action: "accept", content: { Audience: "the board" } } };
        const requestState = first.result!["requestState"];
        const crossed = await raw("prompts/get", {
          name: "new_briefing",
          arguments: { Topic: "budget", Log: b.path },
          requestState,
          inputResponses: answer,
        });
        assert.equal(crossed.error?.code, -32602, JSON.stringify(crossed));
        assert.match(
          crossed.error!.message,
          /^requestState belongs to a call of prompt 'new_briefing' with other arguments: a question is answered only for the call that asked it; get the prompt again without requestState\.$/,
        );
        const asTool = await raw("tools/call", {
          name: "new_briefing",
          arguments: { Topic: "budget", Log: a.path },
          requestState,
          inputResponses: answer,
        });
        assert.equal(asTool.error?.code, -32602, JSON.stringify(asTool));
        assert.match(asTool.error!.message, /belongs to a call of the prompt 'new_briefing'/);
        assert.equal(await a.written(), null, "the held command is still at its question");
        assert.equal(await b.written(), null);
        // Its own retry still answers it.
        const own = await raw("prompts/get", {
          name: "new_briefing",
          arguments: { Log: a.path, Topic: "budget" },
          requestState,
          inputResponses: answer,
        });
        assert.deepEqual(own.result?.["messages"], [{
          role: "user",
          content: { type: "text", text: "Write a briefing on budget for the board." },
        }]);
        assert.equal(await a.written(), "budget");
        assert.equal(await b.written(), null);
      },
    );

    await t.step(
      "an answer sent with the first request is not the user's: svc asks anyway",
      async () => {
        const c = briefingLog(dir, "c");
        const early = await raw("prompts/get", {
          name: "new_briefing",
          arguments: { Topic: "budget", Log: c.path },
          inputResponses: {
            Briefing: { action: "accept", content: { Audience: "me" } },
            Audience: { action: "accept", content: { Audience: "me" } },
          },
        });
        assert.equal(early.result?.["resultType"], "input_required", JSON.stringify(early));
        assert.equal(await c.written(), null);
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
