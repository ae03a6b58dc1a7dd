/**
 * The human decides, end to end on real PowerShell over stdio, HTTP Stateful (2025-11-25) and HTTP
 * Stateless (2026-07-28) with the SDK client: a caller can neither turn a confirmation off nor answer
 * for the user; any answer but an accepted one stops the command where it asked (no later statement
 * runs, even past a trap); "No" is said; svc asks before a ConfirmBeforeRun tool runs, naming its
 * arguments with secrets masked; a client that cannot ask is refused a call that would ask, with no
 * hint how to go ahead without its user; an answer belongs to the call that asked it (2026-07-28);
 * and every question and outcome is in the audit log, never what a user typed.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { ElicitRequestFormParams, ElicitResult } from "@modelcontextprotocol/client";
import {
  answerElicitations,
  type CallResult,
  fixtureConfig,
  type HttpSvc,
  modernToolCall,
  startHttpSvc,
  startSvc,
  type SvcConnection,
} from "./support/harness.ts";

const base = fixtureConfig() as { ShellConfiguration: { Commands: string[] } };
const shell = (extra: Record<string, unknown>) => ({
  ...base,
  ShellConfiguration: {
    ...base.ShellConfiguration,
    Commands: [...base.ShellConfiguration.Commands, "Remove-Item"],
    CommandOverrides: {
      "Publish-FixtureRelease": { ConfirmBeforeRun: true },
      // Unattended automation: its caller may answer for the user.
      "Remove-Item": { PromptsAnsweredBy: "Caller" },
    },
    ...extra,
  },
});
const CONFIG = shell({});

/** A user who answers each question with the next scripted answer, and what they were asked. */
function scriptedUser() {
  const asked: string[] = [];
  const answers: ElicitResult[] = [];
  const answer = (params: ElicitRequestFormParams): ElicitResult => {
    asked.push(params.message);
    const next = answers.shift();
    if (!next) throw new Error(`no answer scripted for: ${params.message}`);
    return next;
  };
  return { asked, answers, answer };
}
type User = ReturnType<typeof scriptedUser>;

const choose = (answer: string): ElicitResult => ({ action: "accept", content: { answer } });
const textOf = (result: CallResult) => result.content.map((c) => c.text ?? "").join("\n");
const notesOf = (result: CallResult) => (result.structuredContent?.["notes"] ?? []) as string[];
const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
const NO_WAY_AROUND =
  /Confirm (false|true)\b(?! is true)|Confirm:\$false|-Force|inputResponses|up front/;

type Call = (name: string, args: Record<string, unknown>) => Promise<CallResult>;

/** A note file with text in it, in `dir`. */
async function note(dir: string, name: string): Promise<string> {
  const path = `${dir}/${name}.txt`;
  await Deno.writeTextFile(path, "keep me");
  return path;
}

/** What every transport does with a client whose user answers. */
async function userAnswers(t: Deno.TestContext, call: Call, user: User, log: () => string) {
  const dir = await Deno.makeTempDir({ prefix: "svc-decides-" });
  try {
    await t.step(
      "Confirm false is refused, naming no way around the user, and nothing runs",
      async () => {
        const path = await note(dir, "false");
        const asked = user.asked.length;
        const result = await call("clear_fixture_note", { Path: path, Confirm: false });
        assert.equal(result.isError, true);
        assert.match(
          textOf(result),
          /^Argument 'Confirm' of tool 'clear_fixture_note' may only be true: whether Clear-FixtureNote goes ahead is its user's decision/,
        );
        assert.equal(await Deno.readTextFile(path), "keep me");
        assert.equal(user.asked.length, asked, "nobody was asked");
      },
    );

    await t.step("No to a confirmation skips the action and the result says so", async () => {
      const path = await note(dir, "no");
      user.answers.push(choose("No"));
      const result = await call("clear_fixture_note", { Path: path });
      const question =
        `Clear-FixtureNote: Confirm: Are you sure you want to perform this action?\nPerforming the operation "Empty the note" on target "${path}".`;
      assert.equal(user.asked.at(-1), question);
      assert.equal(result.isError, undefined, textOf(result));
      assert.equal(await Deno.readTextFile(path), "keep me");
      const said = `The user answered No to: ${question}`;
      assert.deepEqual(notesOf(result), [said]);
      assert.equal(result.content[0]?.text, said);
      user.answers.push(choose("Yes"));
      const yes = await call("clear_fixture_note", { Path: path });
      assert.equal(yes.isError, undefined, textOf(yes));
      assert.equal(await Deno.readTextFile(path), "");
    });

    await t.step(
      "a declined choice stops the command where it asked: its .NET delete never runs",
      async () => {
        const path = await note(dir, "choice");
        user.answers.push({ action: "decline" });
        const result = await call("remove_fixture_after_choice", { Path: path });
        assert.ok(await exists(path), textOf(result));
        assert.equal(result.isError, true);
        assert.equal(result.structuredContent?.["stopped"], "declined");
        assert.equal(
          textOf(result).split("\n")[0],
          `The user declined: Remove-FixtureAfterChoice: Delete: Delete ${path}?; the command was stopped`,
        );
      },
    );

    await t.step(
      "a cancelled Read-Host stops the command past its trap: the file stays",
      async () => {
        const path = await note(dir, "read");
        user.answers.push({ action: "cancel" });
        const result = await call("remove_fixture_after_read", { Path: path });
        assert.ok(await exists(path), textOf(result));
        assert.equal(result.structuredContent?.["stopped"], "cancelled");
        assert.match(
          textOf(result),
          /^The user cancelled: Remove-FixtureAfterRead: Your name; the command was stopped/,
        );
        user.answers.push({ action: "accept", content: { "Your name": "Ada-typed-this" } });
        const answered = await call("remove_fixture_after_read", { Path: path });
        assert.equal(answered.isError, undefined, textOf(answered));
        assert.equal(await exists(path), false);
      },
    );

    await t.step(
      "svc asks before a ConfirmBeforeRun tool runs, naming its arguments with secrets masked",
      async () => {
        const path = `${dir}/release.txt`;
        const args = { Path: path, Environment: "prod", ApiKey: "s3cret-value", Force: true };
        user.answers.push(choose("No"));
        const refused = await call("publish_fixture_release", args);
        const question =
          `Publish-FixtureRelease: Confirm: Run this command?\nPublish-FixtureRelease -Path '${path}' -Environment 'prod' -ApiKey ******** -Force`;
        assert.equal(user.asked.at(-1), question);
        assert.equal(await exists(path), false, "No runs nothing");
        assert.equal(refused.isError, undefined);
        assert.deepEqual(notesOf(refused), [
          `The user answered No to: ${question}; the command was not run`,
        ]);
        user.answers.push({ action: "decline" });
        const declined = await call("publish_fixture_release", args);
        assert.equal(declined.isError, true);
        assert.equal(await exists(path), false, "a decline runs nothing");
        user.answers.push(choose("Yes"));
        const ran = await call("publish_fixture_release", args);
        assert.equal(ran.isError, undefined, textOf(ran));
        assert.equal(await Deno.readTextFile(path), "published to prod");
      },
    );

    await t.step(
      "an operator's PromptsAnsweredBy Caller lets that tool's caller pass Confirm false",
      async () => {
        const path = await note(dir, "caller");
        const asked = user.asked.length;
        const result = await call("remove_item_path", { Path: [path], Confirm: false });
        assert.equal(result.isError, undefined, textOf(result));
        assert.equal(await exists(path), false);
        assert.equal(user.asked.length, asked);
      },
    );

    await t.step(
      "the audit log has every question and its outcome, never a typed answer or a secret",
      () => {
        const text = log();
        assert.match(
          text,
          /Tool call clear_fixture_note \(Clear-FixtureNote\) by \S+ asks its user: Clear-FixtureNote: Confirm: Are you sure/,
        );
        assert.match(
          text,
          /clear_fixture_note \(Clear-FixtureNote\) by \S+, question Clear-FixtureNote: Confirm: .*: answered No\./,
        );
        assert.match(text, /remove_fixture_after_choice .*, question .*: declined\./);
        assert.match(
          text,
          /remove_fixture_after_read .*, question Remove-FixtureAfterRead: Your name: cancelled\./,
        );
        assert.match(
          text,
          /remove_fixture_after_read .*, question Remove-FixtureAfterRead: Your name: accepted\./,
        );
        assert.doesNotMatch(text, /Ada-typed-this|s3cret-value/);
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** What every transport does with a client that cannot ask its user. */
async function nobodyToAsk(t: Deno.TestContext, call: Call) {
  const dir = await Deno.makeTempDir({ prefix: "svc-decides-" });
  try {
    await t.step(
      "a call that would ask is refused before it runs, naming the operator's setting only",
      async () => {
        const path = await note(dir, "refused");
        const result = await call("clear_fixture_note", { Path: path });
        assert.equal(result.isError, true);
        assert.equal(
          textOf(result),
          "Clear-FixtureNote asks its user to confirm before it acts (its ConfirmImpact High reaches ShellConfiguration:ConfirmPreference High), and this client cannot ask its user (it declared no form elicitation for this request), so it was not run; only an operator can let callers answer for the user (ShellConfiguration:PromptsAnsweredBy)",
        );
        assert.doesNotMatch(textOf(result), NO_WAY_AROUND);
        assert.equal(await Deno.readTextFile(path), "keep me");
        const release = await call("publish_fixture_release", {
          Path: `${dir}/release.txt`,
          Environment: "test",
        });
        assert.match(
          textOf(release),
          /runs only once its user confirms the call \(ShellConfiguration:CommandOverrides:Publish-FixtureRelease:ConfirmBeforeRun\)/,
        );
        assert.equal(await exists(`${dir}/release.txt`), false);
        // WhatIf asks nobody and changes nothing.
        const whatIf = await call("clear_fixture_note", { Path: path, WhatIf: true });
        assert.equal(whatIf.isError, undefined, textOf(whatIf));
        assert.equal(await Deno.readTextFile(path), "keep me");
      },
    );

    await t.step(
      "a Read-Host nobody can answer stops the command, quoting its prompt",
      async () => {
        const path = await note(dir, "read");
        const result = await call("remove_fixture_after_read", { Path: path });
        assert.ok(await exists(path), textOf(result));
        assert.equal(result.structuredContent?.["stopped"], "unanswered");
        assert.equal(
          textOf(result).split("\n")[0],
          "The command asked its user: Remove-FixtureAfterRead: Your name; this client cannot ask its user, so the command was stopped; only an operator can let callers answer for the user (ShellConfiguration:PromptsAnsweredBy)",
        );
        assert.doesNotMatch(textOf(result), NO_WAY_AROUND);
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

async function httpClient(url: string, era: "2025-11-25" | "2026-07-28", user: User | null) {
  const client = new Client(
    { name: "decides", version: "1" },
    {
      ...(era === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
      ...(user ? { capabilities: { elicitation: { form: {} } } } : {}),
    },
  );
  answerElicitations(client, user ? (params) => Promise.resolve(user.answer(params)) : undefined);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const callWith = (client: Client): Call => (name, args) =>
  client.callTool({ name, arguments: args }) as Promise<CallResult>;
const callOver = (svc: SvcConnection): Call => (name, args) => svc.callTool(name, args);

Deno.test("stdio: only the user answers, and a client that cannot ask is refused", async (t) => {
  const user = scriptedUser();
  // ConfirmPreference Medium: Remove-Item (ConfirmImpact Medium) asks without Confirm true.
  const [asking, plain] = await Promise.all([
    startSvc({
      config: shell({ ConfirmPreference: "Medium" }),
      elicitation: (params) => Promise.resolve(user.answer(params)),
    }),
    startSvc({ config: CONFIG }),
  ]);
  await using _asking = asking;
  await using _plain = plain;
  const listed = (await asking.listTools()).tools.find((tool) =>
    tool.name === "clear_fixture_note"
  )!;
  const confirm = (listed.inputSchema["properties"] as Record<string, { description: string }>)[
    "Confirm"
  ]!;
  assert.match(confirm.description, /false is not accepted/);
  await userAnswers(t, callOver(asking), user, () => asking.stderr());
  await t.step("ConfirmPreference is the worker's threshold at every call", async () => {
    const path = await Deno.makeTempFile({ prefix: "svc-decides-" });
    try {
      user.answers.push({ action: "decline" });
      const result = await asking.callTool("remove_item_literal_path", { LiteralPath: [path] });
      assert.match(user.asked.at(-1)!, /^Remove-Item: Confirm: /);
      assert.ok(await exists(path), textOf(result));
      assert.equal(result.structuredContent?.["stopped"], "declined");
    } finally {
      await Deno.remove(path).catch(() => {});
    }
  });
  await nobodyToAsk(t, callOver(plain));
});

Deno.test("http Stateful 2025-11-25: only the user answers, and a client that cannot ask is refused", async (t) => {
  await using svc = await startHttpSvc({
    config: { ...CONFIG, McpServer: { HttpTransportMode: "Stateful" } },
  });
  const user = scriptedUser();
  const asking = await httpClient(svc.url, "2025-11-25", user);
  const plain = await httpClient(svc.url, "2025-11-25", null);
  try {
    await userAnswers(t, callWith(asking), user, () => svc.stderr());
    await nobodyToAsk(t, callWith(plain));
  } finally {
    await asking.close();
    await plain.close();
  }
});

type RpcBody = { result?: Record<string, unknown>; error?: { code: number; message: string } };

Deno.test("http Stateless 2026-07-28: only the user answers, an answer belongs to its call, a client that cannot ask is refused", async (t) => {
  await using svc = await startHttpSvc({ config: CONFIG });
  const user = scriptedUser();
  const asking = await httpClient(svc.url, "2026-07-28", user);
  const plain = await httpClient(svc.url, "2026-07-28", null);
  try {
    await userAnswers(t, callWith(asking), user, () => svc.stderr());
    await nobodyToAsk(t, callWith(plain));
    await answerBelongsToItsCall(t, svc);
  } finally {
    await asking.close();
    await plain.close();
  }
});

/** 2026-07-28 rounds by hand: what a client sends with a retry is checked against its call. */
async function answerBelongsToItsCall(t: Deno.TestContext, svc: HttpSvc) {
  const dir = await Deno.makeTempDir({ prefix: "svc-decides-" });
  const yes = { Confirm: { action: "accept", content: { answer: "Yes" } } };
  const ask = async (path: string, params: Record<string, unknown> = {}) =>
    (await modernToolCall(svc.url, "clear_fixture_note", { arguments: { Path: path }, ...params }))
      .body as RpcBody;
  try {
    await t.step(
      "a retry with another call's state and its own arguments is -32602, and nothing runs",
      async () => {
        const [c, d] = [await note(dir, "c"), await note(dir, "d")];
        const [first, second] = await Promise.all([ask(c), ask(d)]);
        assert.equal(first.result?.["resultType"], "input_required", JSON.stringify(first));
        assert.equal(second.result?.["resultType"], "input_required", JSON.stringify(second));
        const crossed = await ask(d, {
          requestState: first.result!["requestState"],
          inputResponses: yes,
        });
        assert.equal(crossed.error?.code, -32602, JSON.stringify(crossed));
        assert.match(
          crossed.error!.message,
          /^requestState belongs to a call of 'clear_fixture_note' with other arguments: a question is answered only for the call that asked it; call the tool again without requestState\.$/,
        );
        assert.equal(await Deno.readTextFile(c), "keep me");
        assert.equal(await Deno.readTextFile(d), "keep me");
        // Each state still answers its own call.
        const own = await ask(c, {
          requestState: first.result!["requestState"],
          inputResponses: yes,
        });
        assert.match(JSON.stringify(own.result), /Emptied/);
        assert.equal(await Deno.readTextFile(c), "");
        const no = await ask(d, {
          requestState: second.result!["requestState"],
          inputResponses: { Confirm: { action: "accept", content: { answer: "No" } } },
        });
        assert.match(
          JSON.stringify(no.result),
          /The user answered No to: Clear-FixtureNote: Confirm/,
        );
        assert.equal(await Deno.readTextFile(d), "keep me");
      },
    );

    await t.step(
      "answers sent with the first request are not the user's: the question is still asked",
      async () => {
        const path = await note(dir, "ahead");
        const first = await ask(path, { inputResponses: yes });
        assert.equal(first.result?.["resultType"], "input_required", JSON.stringify(first));
        assert.equal(await Deno.readTextFile(path), "keep me");
        const done = await ask(path, {
          requestState: first.result!["requestState"],
          inputResponses: yes,
        });
        assert.match(JSON.stringify(done.result), /Emptied/);
        // Where the operator lets the caller answer, its answers ahead count.
        const other = await note(dir, "ahead-caller");
        const caller = (await modernToolCall(svc.url, "remove_item_path", {
          arguments: { Path: [other], Confirm: true },
          inputResponses: yes,
        })).body as RpcBody;
        assert.equal(caller.result?.["resultType"], "complete", JSON.stringify(caller));
        assert.equal(await exists(other), false);
        // The audit says who answered: the caller, not its user.
        assert.match(
          svc.stderr(),
          /remove_item_path \(Remove-Item\) by \S+, question Remove-Item: Confirm: .*: answered Yes by the caller, ahead of the question\./,
        );
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

Deno.test("http Stateless 2026-07-28: a whole-command tool takes answers ahead only where its chosen parameter set lets the caller answer", async () => {
  // Remove-Item lets its caller answer, but not in its Path set: one tool covers both sets.
  const config = shell({ ToolGranularity: "Command" });
  const overrides = (config.ShellConfiguration as { CommandOverrides: Record<string, unknown> })
    .CommandOverrides;
  overrides["remove_item_path"] = { PromptsAnsweredBy: "User" };
  await using svc = await startHttpSvc({ config });
  const dir = await Deno.makeTempDir({ prefix: "svc-decides-" });
  const yes = { Confirm: { action: "accept", content: { answer: "Yes" } } };
  const remove = async (args: Record<string, unknown>, params: Record<string, unknown> = {}) =>
    (await modernToolCall(svc.url, "remove_item", { arguments: args, ...params })).body as RpcBody;
  try {
    const path = await note(dir, "path-set");
    const args = { Path: [path], Confirm: true, _ParameterSet: "Path" };
    const ahead = await remove(args, { inputResponses: yes });
    assert.equal(ahead.result?.["resultType"], "input_required", JSON.stringify(ahead));
    assert.equal(await Deno.readTextFile(path), "keep me");
    await remove(args, {
      requestState: ahead.result!["requestState"],
      inputResponses: { Confirm: { action: "decline" } },
    });
    assert.equal(await Deno.readTextFile(path), "keep me");
    // The LiteralPath set keeps the tool's own policy: its caller's answer ahead counts.
    const literal = await note(dir, "literal-set");
    const caller = await remove({ LiteralPath: [literal], Confirm: true }, { inputResponses: yes });
    assert.equal(caller.result?.["resultType"], "complete", JSON.stringify(caller));
    assert.equal(await exists(literal), false);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
