/**
 * Held calls and their request state (lib/input_required.ts, lib/input_required_round.ts), driven by a fake call that prompts
 * like a worker does: the rounds, the checks on a retry's state, answers given up front, the bound
 * per caller, the time limit and a cancelled request. The end-to-end tests on real PowerShell are in
 * input_required_e2e_test.ts.
 */
import assert from "node:assert/strict";
import {
  type CallToolResult,
  type GetPromptResult,
  type InputRequiredResult,
  isInputRequiredResult,
  ProtocolError,
} from "@modelcontextprotocol/server";
import { HeldCall, HeldCalls } from "../lib/input_required.ts";
import { callWithInput, type InputCall } from "../lib/input_required_round.ts";
import type { PromptAnswer, WorkerPrompt } from "../lib/worker_protocol.ts";

const ask = (name: string, seq = 1): WorkerPrompt => ({
  seq,
  kind: "fields",
  caption: "",
  message: `What is your ${name}?`,
  fields: [{ name, label: name, help: "", type: "string" }],
});

/** A call that asks `prompts` in turn (stopping at the first one not accepted) and returns the answers. */
function prompting(
  prompts: WorkerPrompt[],
  seen: { signal?: AbortSignal } = {},
): InputCall["start"] {
  return async ({ signal, onPrompt }) => {
    seen.signal = signal;
    const answers: PromptAnswer[] = [];
    for (const prompt of prompts) {
      const answer = await onPrompt(prompt, new AbortController().signal);
      answers.push(answer);
      if (answer.action !== "accept") break;
    }
    return { content: [{ type: "text", text: JSON.stringify(answers) }] };
  };
}

function round(
  calls: HeldCalls,
  start: InputCall["start"],
  more: Partial<InputCall> = {},
): Promise<CallToolResult | InputRequiredResult> {
  return callWithInput({
    calls,
    tool: "ask",
    owner: "alice",
    arguments: { Path: "/tmp/a", Force: true },
    requestState: undefined,
    inputResponses: undefined,
    signal: new AbortController().signal,
    start,
    ...more,
  });
}

const accept = (content: Record<string, unknown>) => ({ action: "accept", content });

function held(result: CallToolResult | InputRequiredResult): InputRequiredResult {
  assert.ok(isInputRequiredResult(result), JSON.stringify(result));
  return result;
}

function answers(result: CallToolResult | InputRequiredResult): unknown {
  assert.ok(!isInputRequiredResult(result), JSON.stringify(result));
  return JSON.parse((result.content[0] as { text: string }).text);
}

async function refused(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ProtocolError, String(error));
    assert.equal(error.code, -32602);
    assert.match(error.message, pattern);
    assert.match(error.message, /call the tool again without requestState\.$/);
    return true;
  });
}

Deno.test("a call that never prompts answers at once and holds nothing", async () => {
  const calls = new HeldCalls();
  assert.deepEqual(answers(await round(calls, prompting([]))), []);
  assert.equal(calls.heldBy("alice"), 0);
});

Deno.test("two prompts take two rounds, each with a fresh state; the answers reach the call", async () => {
  const calls = new HeldCalls();
  const start = prompting([ask("name"), ask("color", 2)]);
  const first = held(await round(calls, start));
  assert.deepEqual(Object.keys(first.inputRequests!), ["name"]);
  assert.equal(first.inputRequests!["name"]!.method, "elicitation/create");
  assert.equal(calls.heldBy("alice"), 1);
  const second = held(
    await round(calls, start, {
      requestState: first.requestState,
      inputResponses: { name: accept({ name: "Alice" }) },
    }),
  );
  assert.deepEqual(Object.keys(second.inputRequests!), ["color"]);
  assert.notEqual(second.requestState, first.requestState);
  // The first round's state cannot answer the second question.
  await refused(
    round(calls, start, {
      requestState: first.requestState,
      inputResponses: { color: accept({ color: "blue" }) },
    }),
    /earlier question/,
  );
  const done = await round(calls, start, {
    requestState: second.requestState,
    inputResponses: { color: accept({ color: "blue" }) },
  });
  assert.deepEqual(answers(done), [
    { action: "accept", values: { name: "Alice" } },
    { action: "accept", values: { color: "blue" } },
  ]);
  assert.equal(calls.heldBy("alice"), 0);
  await refused(
    round(calls, start, { requestState: second.requestState, inputResponses: {} }),
    /names no call waiting for input/,
  );
});

Deno.test("a retry without the answer asks the same question again, with a fresh state", async () => {
  const calls = new HeldCalls();
  const start = prompting([ask("name")]);
  const first = held(await round(calls, start));
  const again = held(
    await round(calls, start, {
      requestState: first.requestState,
      inputResponses: { wrong_key: accept({ name: "x" }) },
    }),
  );
  assert.deepEqual(again.inputRequests, first.inputRequests);
  assert.notEqual(again.requestState, first.requestState);
  const done = await round(calls, start, {
    requestState: again.requestState,
    inputResponses: { name: { action: "decline" } },
  });
  assert.deepEqual(answers(done), [{ action: "decline" }]);
});

Deno.test("a changed, foreign or misdirected state is refused with -32602 and one sentence", async () => {
  const calls = new HeldCalls();
  const start = prompting([ask("name")]);
  const first = held(await round(calls, start));
  const state = first.requestState!;
  const retry = (more: Partial<InputCall>) =>
    round(calls, start, { inputResponses: { name: accept({ name: "Eve" }) }, ...more });
  await refused(retry({ requestState: `${state}-TAMPERED` }), /not accepted \(mac\)/);
  await refused(retry({ requestState: 42 }), /not accepted \(malformed\)/);
  // A state another process (another key) minted.
  const other = new HeldCalls();
  const foreign = await other.state(
    new HeldCall("alice", "ask", other.binding("alice", "ask", {})),
  );
  await refused(retry({ requestState: foreign }), /not accepted \(mac\)/);
  await refused(retry({ requestState: state, owner: "mallory" }), /names no call waiting/);
  await refused(retry({ requestState: state, tool: "other" }), /a call of 'ask', not of 'other'/);
  for (const args of [{ Path: "/tmp/b", Force: true }, { Path: "/tmp/a" }, undefined]) {
    await refused(
      retry({ requestState: state, arguments: args }),
      /^requestState belongs to a call of 'ask' with other arguments: a question is answered only for the call that asked it;/,
    );
  }
  // Still held for its owner, who answers it with the call's own arguments, in any key order.
  const done = await retry({ requestState: state, arguments: { Force: true, Path: "/tmp/a" } });
  assert.deepEqual(answers(done), [{ action: "accept", values: { name: "Eve" } }]);
});

Deno.test("answers sent with the first request answer no question unless allowed", async () => {
  const calls = new HeldCalls();
  const start = prompting([ask("name")]);
  const first = held(
    await round(calls, start, { inputResponses: { name: accept({ name: "Eve" }) } }),
  );
  assert.deepEqual(Object.keys(first.inputRequests!), ["name"]);
  const done = await round(calls, start, {
    requestState: first.requestState,
    inputResponses: { name: accept({ name: "Alice" }) },
  });
  assert.deepEqual(answers(done), [{ action: "accept", values: { name: "Alice" } }]);
});

Deno.test("answers given up front, where allowed, are used once; extra keys are ignored", async () => {
  const calls = new HeldCalls();
  const start = prompting([ask("name"), ask("name", 2)]);
  const result = await round(calls, start, {
    inputResponses: { name: accept({ name: "Alice" }), unknown_extra_key: accept({ foo: "bar" }) },
    answersUpFront: () => true,
  });
  // The second prompt with the same key is asked, not answered again.
  const second = held(result);
  assert.deepEqual(Object.keys(second.inputRequests!), ["name"]);
  const done = await round(calls, start, {
    requestState: second.requestState,
    inputResponses: { name: { action: "cancel" } },
  });
  assert.deepEqual(answers(done), [
    { action: "accept", values: { name: "Alice" }, by: "caller" },
    { action: "cancel" },
  ]);
});

Deno.test("one caller holds at most maxPerCaller calls; the next prompting call fails saying so", async () => {
  const calls = new HeldCalls({ maxPerCaller: 1 });
  const first = held(await round(calls, prompting([ask("name")])));
  const refusedCall = await round(calls, prompting([ask("name")]));
  assert.ok(!isInputRequiredResult(refusedCall) && refusedCall.isError);
  assert.match(
    (refusedCall.content[0] as { text: string }).text,
    /already has 1 calls waiting for input \(McpServer:MaxStreamsPerCaller\)/,
  );
  // Another caller is not affected.
  const bob = held(await round(calls, prompting([ask("name")]), { owner: "bob" }));
  for (const [state, owner] of [[first.requestState, "alice"], [bob.requestState, "bob"]]) {
    await round(calls, prompting([]), {
      owner: owner!,
      requestState: state,
      inputResponses: { name: { action: "decline" } },
    });
  }
  assert.equal(calls.heldBy("alice") + calls.heldBy("bob"), 0);
});

Deno.test("a call answered in time and running past the limit may still ask again", async () => {
  // The held call's timer keeps running after the answer; when it fires while a request serves the
  // call, the call's next question must still reach that request's client.
  const calls = new HeldCalls({ timeoutMs: 50 });
  const start: InputCall["start"] = async ({ onPrompt }) => {
    const first = await onPrompt(ask("name"), new AbortController().signal);
    await new Promise((resolve) => setTimeout(resolve, 120));
    const second = await onPrompt(ask("colour", 2), new AbortController().signal);
    return { content: [{ type: "text", text: JSON.stringify([first, second]) }] };
  };
  const first = held(await round(calls, start));
  const second = held(
    await round(calls, start, {
      requestState: first.requestState,
      inputResponses: { name: accept({ name: "Ada" }) },
    }),
  );
  const done = await round(calls, start, {
    requestState: second.requestState,
    inputResponses: { colour: accept({ colour: "teal" }) },
  });
  assert.ok(!isInputRequiredResult(done));
  assert.match((done.content[0] as { text: string }).text, /Ada.*teal/);
});

Deno.test("all callers together hold at most maxHeld calls: one caller cannot take the pool", async () => {
  // Before: with the defaults (16 per caller, a pool of 16) one API key's 16 `Confirm: true` calls,
  // answered by nobody, leased every worker for UserInputTimeout; another key's calls then failed
  // "No PowerShell worker became free".
  const calls = new HeldCalls({ maxPerCaller: 16, maxHeld: 2 });
  const states = [];
  for (const owner of ["mallory", "mallory"]) {
    states.push([held(await round(calls, prompting([ask("name")]), { owner })), owner] as const);
  }
  const refusedCall = await round(calls, prompting([ask("name")]), { owner: "alice" });
  assert.ok(!isInputRequiredResult(refusedCall) && refusedCall.isError);
  const refusal = (refusedCall.content[0] as { text: string }).text;
  assert.match(
    refusal,
    /2 calls wait for input on this server already.*half of McpServer:RunspacePool:MaxPoolSize/,
  );
  // The model reads it: it must not be told to answer in its user's place.
  assert.doesNotMatch(refusal, /argument|pass the answer|up front/);
  for (const [first, owner] of states) {
    await round(calls, prompting([]), {
      owner,
      requestState: first.requestState,
      inputResponses: { name: { action: "decline" } },
    });
  }
  // Answered, they make room again.
  held(await round(calls, prompting([ask("name")]), { owner: "alice" }));
});

Deno.test("past the time limit the prompt is answered 'timeout' and the call is dropped", async () => {
  const calls = new HeldCalls({ timeoutMs: 50 });
  const start = prompting([ask("name")]);
  const first = held(await round(calls, start));
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.equal(calls.heldBy("alice"), 0);
  await refused(
    round(calls, start, {
      requestState: first.requestState,
      inputResponses: { name: accept({ name: "late" }) },
    }),
    /names no call waiting for input|not accepted \(expired\)/,
  );
});

Deno.test("once a question went unanswered, the call's later questions fail at once", async () => {
  // A command that asks in a loop (ShouldProcess per item, Read-Host in a try/catch) goes on to its
  // next question after a timeout; nobody can see that one, so it must not keep the worker for
  // another UserInputTimeout (before: one full limit per question, 4 x 3 s for 4 items end to end).
  const calls = new HeldCalls({ timeoutMs: 50 });
  const answers: PromptAnswer[] = [];
  let finished!: () => void;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const start: InputCall["start"] = async ({ onPrompt }) => {
    for (const name of ["a", "b", "c"]) {
      answers.push(await onPrompt(ask(name), new AbortController().signal));
    }
    finished();
    return { content: [] };
  };
  held(await round(calls, start));
  const started = performance.now();
  await done;
  assert.ok(performance.now() - started < 100, "the later questions wait for nobody");
  assert.deepEqual(answers.map((a) => a.action), ["timeout", "timeout", "timeout"]);
  assert.equal(calls.heldBy("alice"), 0);
});

Deno.test("a cancelled request gives its call up: the call's signal aborts and nothing stays held", async () => {
  const calls = new HeldCalls();
  let ended!: Promise<string>;
  const start: InputCall["start"] = ({ signal, onPrompt }) => {
    ended = (async () => {
      await onPrompt(ask("name"), new AbortController().signal);
      // Runs on after the answer until it is stopped.
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      return "stopped";
    })();
    return ended.then((text) => ({ content: [{ type: "text", text }] }));
  };
  const first = held(await round(calls, start));
  const request = new AbortController();
  const retry = round(calls, start, {
    requestState: first.requestState,
    inputResponses: { name: accept({ name: "Alice" }) },
    signal: request.signal,
  });
  await new Promise((resolve) => setTimeout(resolve, 10));
  request.abort(new Error("client went away"));
  await assert.rejects(retry, /client went away/);
  assert.equal(await ended, "stopped");
  assert.equal(calls.heldBy("alice"), 0);
});

Deno.test("the call's progress goes to the request serving it at the time", async () => {
  const calls = new HeldCalls();
  const progress = (status: string) => ({
    activity: "work",
    status,
    operation: "",
    percent: -1,
    completed: false,
  });
  const start: InputCall["start"] = async ({ onPrompt, onProgress }) => {
    onProgress(progress("before"));
    await onPrompt(ask("name"), new AbortController().signal);
    onProgress(progress("after"));
    return { content: [{ type: "text", text: "done" }] };
  };
  const seen: string[][] = [[], []];
  const first = held(
    await round(calls, start, { onProgress: (p) => seen[0]!.push(p.status) }),
  );
  await round(calls, start, {
    requestState: first.requestState,
    inputResponses: { name: accept({ name: "Ada" }) },
    onProgress: (p) => seen[1]!.push(p.status),
  });
  assert.deepEqual(seen, [["before"], ["after"]]);
});

/** An MCP prompt's get that asks `prompt` and fails, as getPrompt does, unless it is accepted. */
function promptGet(prompt: WorkerPrompt): InputCall<GetPromptResult>["start"] {
  return async ({ onPrompt }) => {
    const answer = await onPrompt(prompt, new AbortController().signal);
    if (answer.action !== "accept") throw new Error(`stopped: ${answer.action}`);
    return { messages: [{ role: "user", content: { type: "text", text: "ok" } }] };
  };
}

Deno.test("a prompts/get is held like a call, and a state of one kind never resumes the other", async () => {
  const calls = new HeldCalls({ maxPerCaller: 1 });
  const get = (more: Partial<InputCall<GetPromptResult>> = {}) =>
    callWithInput<GetPromptResult>({
      calls,
      kind: "prompt",
      tool: "ask",
      owner: "alice",
      arguments: { Topic: "budget" },
      requestState: undefined,
      inputResponses: undefined,
      signal: new AbortController().signal,
      start: promptGet(ask("name")),
      refused: (message) => {
        throw new Error(`refused: ${message}`);
      },
      ...more,
    });
  const first = await get();
  assert.ok(isInputRequiredResult(first), JSON.stringify(first));
  const answer = { name: accept({ name: "Ada" }) };
  // A tool call of the same name and arguments does not answer the prompt's question.
  await refused(
    round(calls, prompting([]), {
      arguments: { Topic: "budget" },
      requestState: first.requestState,
      inputResponses: answer,
    }),
    /^requestState belongs to a call of the prompt 'ask', not of the tool 'ask'/,
  );
  await assert.rejects(
    get({
      arguments: { Topic: "backlog" },
      requestState: first.requestState,
      inputResponses: answer,
    }),
    /^ProtocolError: requestState belongs to a call of prompt 'ask' with other arguments: .*; get the prompt again without requestState\.$/,
  );
  // The caller's one held call is taken: the next question cannot be held, and the get says why.
  await assert.rejects(
    get(),
    /^Error: refused: The call waits for input, but this caller already has 1 calls/,
  );
  const done = await get({ requestState: first.requestState, inputResponses: answer });
  assert.deepEqual((done as GetPromptResult).messages.length, 1);
  assert.equal(calls.heldBy("alice"), 0);
});
