/**
 * Prompts of 2026-07-28 clients as `input_required` results (SEP-2322), end to end on real
 * PowerShell over HTTP (Stateless): the SDK client answers them with its elicitation handler and
 * retries. Remove-Item's confirmation (Yes removes, No keeps, decline and cancel stop), Read-Host,
 * two prompts in one call, a client without elicitation, a changed or unknown state, the time
 * limit, and a pool that keeps serving beside held calls. Over stdio: stdio_test's
 * 2026-07-28 step; across replicas: scale_out_test; an answer bound to its call and who may answer:
 * user_decides_test.
 */
import assert from "node:assert/strict";
import {
  Client,
  type ElicitRequestFormParams,
  type ElicitResult,
  LOG_LEVEL_META_KEY,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import {
  type CallResult,
  fixtureConfig,
  modernToolCall,
  outputOf,
  startHttpSvc,
} from "./support/harness.ts";
import { startIssuer } from "./support/issuer.ts";

/** What the test's user answers; set per case. */
type User = (params: ElicitRequestFormParams) => ElicitResult;

const config = (timeout: string) => {
  const base = fixtureConfig({ UserInputTimeout: timeout });
  const shell = base["ShellConfiguration"] as { Commands: string[] };
  shell.Commands.push("Remove-Item");
  return base;
};

async function httpClient(url: string, user: User | null): Promise<Client> {
  const client = new Client(
    { name: "mrtr", version: "1" },
    {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      ...(user ? { capabilities: { elicitation: { form: {} } } } : {}),
    },
  );
  if (user) {
    client.setRequestHandler(
      "elicitation/create",
      (request) => Promise.resolve(user(request.params as ElicitRequestFormParams)),
    );
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallResult>;

const textOf = (result: CallResult) => result.content.map((c) => c.text ?? "").join("\n");

type RpcBody = { result?: Record<string, unknown>; error?: { code: number; message: string } };

async function leased(url: string): Promise<number> {
  const text = await (await fetch(`${url}/health`)).text();
  return Number(/(\d+) leased/.exec(text)?.[1] ?? NaN);
}

/** Asks Remove-Item to delete a new file with `Confirm: true`; says whether it is gone. */
async function confirmRemoval(
  remove: (args: Record<string, unknown>) => Promise<CallResult>,
): Promise<{ result: CallResult; removed: boolean }> {
  const file = await Deno.makeTempFile({ prefix: "svc-mrtr-" });
  try {
    const result = await remove({ Path: file, Confirm: true });
    const removed = await Deno.stat(file).then(() => false, () => true);
    return { result, removed };
  } finally {
    await Deno.remove(file).catch(() => {});
  }
}

Deno.test("http 2026-07-28: prompts reach the client's user and the call does what they chose", async (t) => {
  await using svc = await startHttpSvc({ config: config("00:00:03") });
  let user: User = () => ({ action: "cancel" });
  const asked: ElicitRequestFormParams[] = [];
  const client = await httpClient(svc.url, (params) => (asked.push(params), user(params)));
  try {
    await t.step(
      "Remove-Item -Confirm: Yes removes, No keeps, decline and cancel stop",
      async () => {
        for (
          const [answer, removed] of [
            [{ action: "accept", content: { answer: "Yes" } }, true],
            [{ action: "accept", content: { answer: "No" } }, false],
            [{ action: "decline" }, false],
            [{ action: "cancel" }, false],
          ] as const
        ) {
          asked.length = 0;
          user = () => answer;
          const outcome = await confirmRemoval((args) => call(client, "remove_item_path", args));
          assert.equal(
            outcome.removed,
            removed,
            `${JSON.stringify(answer)}: ${textOf(outcome.result)}`,
          );
          assert.equal(asked.length, 1);
          assert.match(asked[0]!.message, /Performing the operation "Remove File" on target "/);
        }
      },
    );
    await t.step("Read-Host gets the user's text", async () => {
      user = (params) => ({
        action: "accept",
        content: { [Object.keys(params.requestedSchema.properties)[0]!]: "teal" },
      });
      assert.deepEqual(outputOf(await call(client, "read_fixture_prompt", {})), ["teal"]);
      // A lone surrogate in the answer (valid JSON) made the worker drop the answer frame: the
      // prompt waited until the call's time limit.
      user = (params) => ({
        action: "accept",
        content: { [Object.keys(params.requestedSchema.properties)[0]!]: "te\ud800al" },
      });
      assert.deepEqual(outputOf(await call(client, "read_fixture_prompt", {})), ["te\ufffdal"]);
    });
    await t.step("a held call's log messages go to the request serving it", async () => {
      const messages: unknown[] = [];
      client.setNotificationHandler("notifications/message", (notification) => {
        messages.push(notification.params.data);
      });
      user = (params) => ({
        action: "accept",
        content: { [Object.keys(params.requestedSchema.properties)[0]!]: "Ada" },
      });
      const result = await client.callTool({
        name: "read_fixture_narrated",
        arguments: {},
        _meta: { [LOG_LEVEL_META_KEY]: "warning" },
      }) as CallResult;
      assert.deepEqual(outputOf(result), ["answered Ada"]);
      assert.deepEqual(messages, ["before the question", "after the question: Ada"]);
    });
    await t.step("two prompts in one call take two rounds", async () => {
      asked.length = 0;
      user = (params) => ({
        action: "accept",
        content: "name" in params.requestedSchema.properties ? { name: "Ada" } : { color: "green" },
      });
      const result = await call(client, "test_input_required_result_multi_round", {});
      assert.match(textOf(result), /Hello, Ada! Your favorite color is green\./);
      assert.equal(asked.length, 2);
    });
    await t.step(
      "a client without elicitation is refused at once a call that would ask",
      async () => {
        const plain = await httpClient(svc.url, null);
        try {
          const started = performance.now();
          const outcome = await confirmRemoval((args) => call(plain, "remove_item_path", args));
          assert.equal(outcome.removed, false);
          assert.equal(outcome.result.isError, true, textOf(outcome.result));
          assert.ok(performance.now() - started < 3000, "fails at once");
          assert.match(
            textOf(outcome.result),
            /^Remove-Item asks its user to confirm before it acts \(Confirm is true\), and this client cannot ask its user/,
          );
        } finally {
          await plain.close();
        }
      },
    );
    await t.step("a changed or unknown requestState is -32602 with one sentence", async () => {
      const first = (await modernToolCall(svc.url, "test_input_required_result_elicitation"))
        .body as RpcBody;
      assert.equal(first.result?.["resultType"], "input_required", JSON.stringify(first));
      const state = first.result!["requestState"] as string;
      for (const bad of [`${state}-TAMPERED`, "v1.e30.AAAA"]) {
        const retry = (await modernToolCall(svc.url, "test_input_required_result_elicitation", {
          requestState: bad,
          inputResponses: { user_name: { action: "accept", content: { name: "Eve" } } },
        })).body as RpcBody;
        assert.equal(retry.error?.code, -32602, JSON.stringify(retry));
        assert.match(retry.error!.message, /call the tool again without requestState\.$/);
      }
      // The genuine state still answers the held call.
      const done = (await modernToolCall(svc.url, "test_input_required_result_elicitation", {
        requestState: state,
        inputResponses: { user_name: { action: "accept", content: { name: "Alice" } } },
      })).body as RpcBody;
      assert.match(JSON.stringify(done.result), /Hello, Alice!/);
    });
    await t.step(
      "a pool with held calls keeps serving the others (c = 16)",
      async () => {
        const heldAt = performance.now();
        // The third asks twice: after the first question goes unanswered the second must fail at
        // once, not keep the worker for another UserInputTimeout that nobody can answer.
        const held = await Promise.all([
          modernToolCall(svc.url, "test_input_required_result_elicitation"),
          modernToolCall(svc.url, "test_input_required_result_elicitation"),
          modernToolCall(svc.url, "test_input_required_result_multi_round"),
        ]);
        for (const h of held) {
          assert.equal((h.body as RpcBody).result?.["resultType"], "input_required");
        }
        assert.ok((await leased(svc.url)) >= 3);
        const started = performance.now();
        const dates = await Promise.all(
          Array.from({ length: 16 }, () => call(client, "get_fixture_greeting", { Name: "load" })),
        );
        const elapsed = Math.round(performance.now() - started);
        assert.ok(dates.every((d) => !d.isError), JSON.stringify(dates.find((d) => d.isError)));
        // Answered while the three still wait (they are given up at 3 s).
        assert.ok(elapsed < 3000, `16 calls beside 3 held ones took ${elapsed} ms`);
        // Past UserInputTimeout the held calls fail as unanswered prompts do, and their workers are
        // given back and reset.
        const state = (held[0]!.body as RpcBody).result!["requestState"] as string;
        await new Promise((resolve) => setTimeout(resolve, 3500));
        const late = (await modernToolCall(svc.url, "test_input_required_result_elicitation", {
          requestState: state,
          inputResponses: { user_name: { action: "accept", content: { name: "late" } } },
        })).body as RpcBody;
        assert.equal(late.error?.code, -32602, JSON.stringify(late));
        let free = NaN;
        for (let i = 0; i < 50 && free !== 0; i++) {
          free = await leased(svc.url);
          if (free !== 0) await new Promise((resolve) => setTimeout(resolve, 100));
        }
        assert.equal(free, 0, "every held worker is given back");
        const given = Math.round(performance.now() - heldAt);
        assert.ok(given < 5500, `held workers given back ${given} ms after their calls began`);
        assert.match(svc.stderr(), /no answer to its prompt within 3000 ms/);
      },
    );
  } finally {
    await client.close();
  }
});

Deno.test("http 2026-07-28: a token without a 'sub' claim has no call held, as it owns no session", async () => {
  await using issuer = await startIssuer();
  await using svc = await startHttpSvc({
    config: {
      ...config("00:00:30"),
      Authentication: {
        Enabled: true,
        DefaultScheme: "entra",
        DefaultPolicy: { RequireAuthentication: true, RequiredScopes: [], RequiredRoles: [] },
        Schemes: { entra: { Type: "JwtBearer", Authority: issuer.url, Audience: "api://svc" } },
      },
    },
  });
  const as = async (claims: Record<string, unknown>) => ({
    headers: { authorization: `Bearer ${await issuer.sign(claims)}` },
  });
  const ask = async (claims: Record<string, unknown>, params: Record<string, unknown> = {}) =>
    (await modernToolCall(
      svc.url,
      "test_input_required_result_elicitation",
      params,
      await as(claims),
    ))
      .body as RpcBody;
  // One subject is told apart from the next: its call is held for the retry that answers it.
  const dana = { "preferred_username": "dana@example.com", sub: "dana-1" };
  const held = await ask(dana);
  assert.equal(held.result?.["resultType"], "input_required", JSON.stringify(held));
  const answered = await ask(dana, {
    requestState: held.result!["requestState"],
    inputResponses: { user_name: { action: "accept", content: { name: "Dana" } } },
  });
  assert.match(JSON.stringify(answered.result), /Hello, Dana!/);
  // Without `sub` the same name could be anyone's: the prompt fails at once, nothing keeps a worker.
  const nobody = { "preferred_username": "dana@example.com" };
  const started = performance.now();
  const failed = await ask(nobody);
  assert.ok(performance.now() - started < 10_000, "fails at once, not after UserInputTimeout");
  assert.notEqual(failed.result?.["resultType"], "input_required", JSON.stringify(failed));
  assert.equal(failed.result?.["isError"], true, JSON.stringify(failed));
  assert.match(
    JSON.stringify(failed.result),
    /What is your name\?; svc holds a call for its user only for a caller it can name, and this caller's token has no 'sub' claim, so the command was stopped/,
  );
  assert.equal(await leased(svc.url), 0);
  const stateless = await ask(nobody, {
    requestState: held.result!["requestState"],
    inputResponses: { user_name: { action: "accept", content: { name: "Eve" } } },
  });
  assert.equal(stateless.error?.code, -32602, JSON.stringify(stateless));
  assert.match(stateless.error!.message, /names no call waiting for input.*'sub' claim/);
});
