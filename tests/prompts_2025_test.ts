/**
 * Prompts reach the user of a 2025-11-25 client: a ShouldProcess confirmation, Read-Host and
 * PromptForChoice become `elicitation/create` requests during the call, over stdio and Stateful
 * HTTP, through the SDK client, on real pwsh, and the command does what the user chose; any answer
 * but an accepted one stops it. A client that did not declare elicitation is told nobody could be
 * asked. (The Stateless HTTP case is in progress_test.ts, on its Stateless server; who may answer,
 * and the refusals before a call runs, are in user_decides_test.ts.)
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { ElicitRequestFormParams, ElicitResult } from "@modelcontextprotocol/client";
import {
  answerElicitations,
  type CallResult,
  type Elicitor,
  eventually,
  fixtureConfig,
  isAlive,
  outputOf,
  startHttpSvc,
  startSvc,
} from "./support/harness.ts";

const base = fixtureConfig() as { ShellConfiguration: { Commands: string[] } };
// A choice asked the real way, through the host's PromptForChoice.
const STARTUP_SCRIPT = String.raw`
function Select-Colour {
    [CmdletBinding()] param()
    $choices = [System.Management.Automation.Host.ChoiceDescription[]]@('&Red', '&Green', '&Blue')
    $picked = $Host.UI.PromptForChoice('Colour', 'Which colour?', $choices, 1)
    @('Red', 'Green', 'Blue')[$picked]
}
`;
const CONFIG = {
  ...base,
  ShellConfiguration: {
    ...base.ShellConfiguration,
    Commands: [...base.ShellConfiguration.Commands, "Remove-Item", "Read-Host", "Select-Colour"],
    Environment: { StartupScript: STARTUP_SCRIPT },
  },
};

/** A user who answers each question with the next scripted answer, and what they were asked. */
function scriptedUser() {
  const asked: ElicitRequestFormParams[] = [];
  const answers: (ElicitResult | "wait")[] = [];
  const withdrawn: string[] = [];
  const elicitor: Elicitor = (params, signal) => {
    asked.push(params);
    const answer = answers.shift();
    if (answer === "wait") {
      // Never answers: the question stays open until svc withdraws it.
      return new Promise((_resolve, reject) =>
        signal.addEventListener("abort", () => {
          withdrawn.push(params.message);
          reject(new Error("withdrawn"));
        })
      );
    }
    return answer ? Promise.resolve(answer) : Promise.reject(new Error("no answer scripted"));
  };
  return { asked, answers, withdrawn, elicitor };
}

const textOf = (result: CallResult) => result.content.map((c) => c.text ?? "").join("\n");
const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
const confirmAnswer = (answer: string): ElicitResult => ({ action: "accept", content: { answer } });

type Call = (
  name: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
) => Promise<CallResult>;

/**
 * The checks every transport passes: Remove-Item -Confirm asks with the operation's own text; Yes
 * removes, No keeps and says so, decline and cancel stop the call; "Yes to All" answers the rest of
 * the call; Read-Host gets the user's text.
 */
async function checkPrompts(
  t: Deno.TestContext,
  call: Call,
  user: ReturnType<typeof scriptedUser>,
) {
  const dir = await Deno.makeTempDir({ prefix: "svc-prompts-" });
  /** The user answers Yes to Remove-Item's confirmation: the file is gone, without an error. */
  const removedOnYes = async (file: string) => {
    user.answers.push(confirmAnswer("Yes"));
    const removed = await call("remove_item_literal_path", { LiteralPath: [file], Confirm: true });
    assert.equal(removed.isError, undefined, textOf(removed));
    assert.equal(await exists(file), false);
  };
  try {
    await t.step(
      "Remove-Item -Confirm: Yes removes, No keeps and says so, decline and cancel stop",
      async () => {
        const file = `${dir}/a.txt`;
        await Deno.writeTextFile(file, "a");
        user.answers.push(confirmAnswer("No"), { action: "decline" }, { action: "cancel" });
        const outcomes = [];
        for (let i = 0; i < 3; i++) {
          const kept = await call("remove_item_literal_path", {
            LiteralPath: [file],
            Confirm: true,
          });
          assert.ok(await exists(file), `answer ${i}: ${textOf(kept)}`);
          assert.deepEqual(kept.structuredContent?.["output"], [], textOf(kept));
          outcomes.push([kept.isError, kept.structuredContent?.["stopped"], textOf(kept)]);
        }
        const question =
          `Remove-Item: Confirm: Are you sure you want to perform this action?\nPerforming the operation "Remove File" on target "${file}".`;
        // No skips the removal as PowerShell does, without an error; decline and cancel stop.
        assert.deepEqual(outcomes.map(([isError, stopped]) => [isError, stopped]), [
          [undefined, undefined],
          [true, "declined"],
          [true, "cancelled"],
        ]);
        assert.equal(
          String(outcomes[0]![2]).split("\n[]")[0],
          `The user answered No to: ${question}`,
        );
        assert.match(
          String(outcomes[1]![2]),
          /^The user declined: Remove-Item: Confirm: .*; the command was stopped/s,
        );
        assert.match(
          String(outcomes[2]![2]),
          /^The user cancelled: Remove-Item: Confirm: .*; the command was stopped/s,
        );
        assert.equal(user.asked.length, 3);
        const asked = user.asked[0]!;
        assert.equal(asked.message, question);
        assert.deepEqual(
          (asked.requestedSchema.properties["answer"] as { oneOf: { const: string }[] }).oneOf
            .map((o) => o.const),
          ["Yes", "Yes to All", "No", "No to All"],
        );
        await removedOnYes(file);
        assert.equal(user.asked.length, 4);
      },
    );

    await t.step("'Yes to All' answers every later confirmation of the call", async () => {
      const files = [`${dir}/b.txt`, `${dir}/c.txt`];
      for (const file of files) await Deno.writeTextFile(file, "x");
      const before = user.asked.length;
      user.answers.push(confirmAnswer("Yes to All"));
      const removed = await call("remove_item_literal_path", { LiteralPath: files, Confirm: true });
      assert.equal(removed.isError, undefined, textOf(removed));
      assert.deepEqual(await Promise.all(files.map(exists)), [false, false]);
      assert.equal(user.asked.length - before, 1, "asked once");
    });

    await t.step(
      "Read-Host gets the user's text; a decline stops it, naming the question",
      async () => {
        user.answers.push({ action: "accept", content: { "Favourite colour": "green" } });
        const read = await call("read_host_as_string", { Prompt: "Favourite colour" });
        assert.deepEqual(outputOf(read), ["green"], textOf(read));
        user.answers.push({ action: "decline" });
        const declined = await call("read_host_as_string", { Prompt: "Favourite colour" });
        assert.equal(declined.isError, true);
        assert.match(
          textOf(declined),
          /^The user declined: Read-Host: Favourite colour; the command was stopped/,
        );
      },
    );

    await t.step(
      "PromptForChoice offers its labels with the default and gets the user's choice",
      async () => {
        user.answers.push(confirmAnswer("Blue"));
        const chosen = await call("select_colour", {});
        assert.deepEqual(outputOf(chosen), ["Blue"], textOf(chosen));
        const asked = user.asked.at(-1)!;
        assert.equal(asked.message, "Select-Colour: Colour: Which colour?");
        assert.deepEqual(asked.requestedSchema.properties["answer"], {
          type: "string",
          title: "Answer",
          oneOf: ["Red", "Green", "Blue"].map((label) => ({ const: label, title: label })),
          default: "Green",
        });
      },
    );

    await t.step("a call cancelled while its question is open withdraws the question", async () => {
      const file = `${dir}/d.txt`;
      await Deno.writeTextFile(file, "d");
      const before = user.asked.length;
      user.answers.push("wait");
      const controller = new AbortController();
      const pending = call(
        "remove_item_literal_path",
        { LiteralPath: [file], Confirm: true },
        controller.signal,
      ).catch((error: Error) => error);
      assert.ok(await eventually(() => user.asked.length > before), "the question was asked");
      controller.abort();
      await pending;
      assert.ok(await eventually(() => user.withdrawn.length > 0), "the question was withdrawn");
      assert.ok(await exists(file), "nothing was removed");
      // The worker is clean for the next call.
      await removedOnYes(file);
    });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

Deno.test("stdio 2025-11-25: confirmations and Read-Host reach the user as elicitation/create", async (t) => {
  const user = scriptedUser();
  const config = {
    ...CONFIG,
    ShellConfiguration: { ...CONFIG.ShellConfiguration, UserInputTimeout: "00:00:02" },
  };
  await using svc = await startSvc({ config, elicitation: user.elicitor });
  await checkPrompts(
    t,
    (name, args, signal) => svc.callTool(name, args, signal ? { signal } : {}),
    user,
  );
  await t.step(
    "no answer within UserInputTimeout: the question is withdrawn and the command stopped",
    async () => {
      user.withdrawn.length = 0;
      user.answers.push("wait");
      const started = Date.now();
      const read = await svc.callTool("read_host_as_string", { Prompt: "Favourite colour" });
      assert.equal(read.isError, true);
      assert.match(
        textOf(read),
        /^No answer came within 2 s \(ShellConfiguration:UserInputTimeout\) to: Read-Host: Favourite colour; the command was stopped/,
      );
      assert.equal(read.structuredContent?.["stopped"], "unanswered");
      assert.ok(await eventually(() => user.withdrawn.length === 1), "the question was withdrawn");
      assert.ok(Date.now() - started < 6_000, `${Date.now() - started} ms`);
      user.answers.push({ action: "accept", content: { "Favourite colour": "blue" } });
      const again = await svc.callTool("read_host_as_string", { Prompt: "Favourite colour" });
      assert.deepEqual(outputOf(again), ["blue"], textOf(again));
    },
  );
});

Deno.test("stdio: a client that goes away while a call is held for its user ends svc quietly", async () => {
  let asked = false;
  const svc = await startSvc({
    config: CONFIG,
    elicitation: () => {
      asked = true;
      return new Promise(() => {}); // the user never answers
    },
  });
  const pending = svc.callTool("read_host_as_string", { Prompt: "Favourite colour" }).catch(() =>
    null
  );
  assert.ok(await eventually(() => asked, 30_000), "the question reached the client");
  const pid = svc.serverPid()!;
  await svc.close();
  await pending;
  assert.ok(await eventually(() => !isAlive(pid), 20_000), "svc exited");
  // The answer the worker gives once its call is stopped is expected, not an unknown frame.
  assert.doesNotMatch(svc.stderr(), /WARNING.*unexpected frame/);
  await svc[Symbol.asyncDispose]();
});

Deno.test("http Stateful 2025-11-25: confirmations reach a client that declared elicitation; others are told nobody could be asked", async (t) => {
  await using svc = await startHttpSvc({
    config: { ...CONFIG, McpServer: { HttpTransportMode: "Stateful" } },
  });
  const connect = async (elicitor?: Elicitor) => {
    const client = new Client(
      { name: "prompts", version: "1" },
      elicitor ? { capabilities: { elicitation: { form: {} } } } : {},
    );
    answerElicitations(client, elicitor);
    await client.connect(new StreamableHTTPClientTransport(new URL(svc.url)));
    return client;
  };
  const user = scriptedUser();
  const client = await connect(user.elicitor);
  const plain = await connect();
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), "2025-11-25");
    await checkPrompts(
      t,
      (name, args, signal) =>
        client.callTool({ name, arguments: args }, signal ? { signal } : {}) as Promise<CallResult>,
      user,
    );
    await t.step(
      "a client without the capability stops at once at the question, quoting it",
      async () => {
        const started = Date.now();
        const read = await plain.callTool({
          name: "read_host_as_string",
          arguments: { Prompt: "Favourite colour" },
        }) as CallResult;
        assert.equal(read.isError, true);
        assert.match(
          textOf(read),
          /^The command asked its user: Read-Host: Favourite colour; this client cannot ask its user, so the command was stopped/,
        );
        assert.ok(Date.now() - started < 5_000, `${Date.now() - started} ms`);
      },
    );
  } finally {
    await client.close();
    await plain.close();
  }
});
