import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/client";
import {
  type ElicitRequestFormParams,
  type ElicitResult,
  InMemoryTransport,
  Server,
} from "@modelcontextprotocol/server";
import { toElicitation, toPromptAnswer } from "../lib/elicitation.ts";
import type { WorkerPrompt } from "../lib/worker_protocol.ts";
import { pushedPrompts } from "../lib/elicitation_push.ts";

/** The prompt ShouldProcess makes for `Remove-Item -Confirm`, as the worker's host frames it. */
const CONFIRM: WorkerPrompt = {
  seq: 1,
  kind: "confirm",
  command: "Remove-Item",
  caption: "Confirm",
  message:
    'Are you sure you want to perform this action?\nPerforming the operation "Remove File" ' +
    'on target "/tmp/x".',
  choices: [
    { label: "Yes", help: "Continue with only the next step of the operation." },
    { label: "Yes to All", help: "Continue with all the steps of the operation." },
    { label: "No", help: "Skip this operation and proceed with the next operation." },
    { label: "No to All", help: "Skip this operation and all subsequent operations." },
  ],
  defaults: [0],
};

const READ_HOST: WorkerPrompt = {
  seq: 2,
  kind: "text",
  caption: "",
  message: "",
  fields: [{ name: "What is your name?", label: "What is your name?", help: "", type: "string" }],
};

Deno.test("toElicitation() asks a confirmation with the operation's own text and one answer among the labels", () => {
  const { key, params } = toElicitation(CONFIRM);
  assert.equal(key, "Confirm");
  assert.equal(params.mode, "form");
  // The command the call runs comes first: the target alone is the caller's choice of words.
  assert.equal(
    params.message,
    'Remove-Item: Confirm: Are you sure you want to perform this action?\nPerforming the operation "Remove File" ' +
      'on target "/tmp/x".',
  );
  assert.deepEqual(params.requestedSchema.required, ["answer"]);
  assert.deepEqual(params.requestedSchema.properties["answer"], {
    type: "string",
    title: "Answer",
    description: "Yes: Continue with only the next step of the operation.\n" +
      "Yes to All: Continue with all the steps of the operation.\n" +
      "No: Skip this operation and proceed with the next operation.\n" +
      "No to All: Skip this operation and all subsequent operations.",
    oneOf: [
      { const: "Yes", title: "Yes" },
      { const: "Yes to All", title: "Yes to All" },
      { const: "No", title: "No" },
      { const: "No to All", title: "No to All" },
    ],
    default: "Yes",
  });
});

Deno.test("toPromptAnswer() maps a chosen label to its index, and decline and cancel as they are", () => {
  const answer = (content: Record<string, unknown>) =>
    toPromptAnswer(CONFIRM, { action: "accept", content } as never);
  assert.deepEqual(answer({ answer: "No" }), { action: "accept", choices: [2] });
  assert.deepEqual(answer({ answer: "Yes to All" }), { action: "accept", choices: [1] });
  assert.deepEqual(toPromptAnswer(CONFIRM, { action: "decline" }), { action: "decline" });
  assert.deepEqual(toPromptAnswer(CONFIRM, { action: "cancel" }), { action: "cancel" });
});

Deno.test("toPromptAnswer() takes an accepted form without a valid answer as declined, never as the default Yes", () => {
  const answer = (content: Record<string, unknown> | undefined) =>
    toPromptAnswer(CONFIRM, { action: "accept", ...(content ? { content } : {}) } as never);
  assert.deepEqual(answer(undefined), { action: "decline" });
  assert.deepEqual(answer({}), { action: "decline" });
  assert.deepEqual(answer({ answer: "yes" }), { action: "decline" }, "labels match exactly");
  assert.deepEqual(answer({ answer: 0 }), { action: "decline" });
  assert.deepEqual(answer({ answer: ["Yes"] }), { action: "decline" });
  assert.deepEqual(answer({ answer: "Maybe", other: "Yes" }), { action: "decline" });
});

Deno.test("toPromptAnswer() takes the only value of a one-question form under another name when it fits", () => {
  const answer = (content: Record<string, unknown>) =>
    toPromptAnswer(CONFIRM, { action: "accept", content } as never);
  assert.deepEqual(answer({ choice: "No" }), { action: "accept", choices: [2] });
  assert.deepEqual(answer({ choice: "Nope" }), { action: "decline" });
  assert.deepEqual(
    answer({ a: "No", b: "Yes" }),
    { action: "decline" },
    "two values: neither taken",
  );
  const text = (content: Record<string, unknown>) =>
    toPromptAnswer(READ_HOST, { action: "accept", content } as never);
  assert.deepEqual(text({ name: "Ada" }), {
    action: "accept",
    values: { "What is your name?": "Ada" },
  });
  assert.deepEqual(text({ name: 42 }), { action: "decline" });
});

Deno.test("toElicitation() asks Read-Host's prompt as one required string field keyed 'text'", () => {
  const { key, params } = toElicitation(READ_HOST);
  assert.equal(key, "text", "the prompt is not a plain name, so the kind names the request");
  assert.equal(params.message, "What is your name?");
  assert.deepEqual(params.requestedSchema, {
    type: "object",
    properties: { "What is your name?": { type: "string", title: "What is your name?" } },
    required: ["What is your name?"],
  });
  assert.deepEqual(
    toPromptAnswer(READ_HOST, {
      action: "accept",
      content: { "What is your name?": "Ada" },
    }),
    { action: "accept", values: { "What is your name?": "Ada" } },
  );
});

Deno.test("toElicitation() names the request by a plain caption, else a plain single field name, else the kind", () => {
  const base: WorkerPrompt = { seq: 1, kind: "text", caption: "", message: "Say it" };
  const field = { label: "", help: "", type: "string" as const };
  assert.equal(toElicitation({ ...base, caption: "Deploy_1" }).key, "Deploy_1");
  assert.equal(toElicitation({ ...base, fields: [{ ...field, name: "Name" }] }).key, "Name");
  assert.equal(toElicitation({ ...base, caption: "Two words" }).key, "text");
  assert.equal(toElicitation({ ...base, caption: "x".repeat(65) }).key, "text");
  assert.equal(
    toElicitation({
      ...base,
      kind: "fields",
      fields: [{ ...field, name: "A" }, { ...field, name: "B" }],
    })
      .key,
    "fields",
  );
});

Deno.test("toElicitation() asks Read-Host without -Prompt as one unnamed string answered under ''", () => {
  const prompt: WorkerPrompt = { seq: 1, kind: "text", caption: "", message: "" };
  const { key, params } = toElicitation(prompt);
  assert.equal(key, "text");
  assert.equal(params.message, "PowerShell asks for input.");
  assert.deepEqual(params.requestedSchema.properties, { answer: { type: "string" } });
  assert.deepEqual(toPromptAnswer(prompt, { action: "accept", content: { answer: "typed" } }), {
    action: "accept",
    values: { "": "typed" },
  });
});

Deno.test("toElicitation() asks $Host.UI.Prompt's fields with their types, labels, help and defaults, all required", () => {
  const prompt: WorkerPrompt = {
    seq: 3,
    kind: "fields",
    caption: "Deployment",
    message: "Tell me about the deployment",
    fields: [
      { name: "Name", label: "Name", help: "The service name", type: "string", default: "web" },
      { name: "Replicas", label: "Replicas", help: "", type: "integer", default: 2 },
      { name: "Ratio", label: "", help: "", type: "number" },
      { name: "Force", label: "Force it", help: "", type: "boolean", default: false },
      { name: "Name", label: "Again", help: "", type: "string", default: 7 },
    ],
  };
  const { key, params } = toElicitation(prompt);
  assert.equal(key, "Deployment");
  assert.equal(params.message, "Deployment: Tell me about the deployment");
  assert.deepEqual(params.requestedSchema, {
    type: "object",
    properties: {
      Name: { type: "string", title: "Name", description: "The service name", default: "web" },
      Replicas: { type: "integer", title: "Replicas", default: 2 },
      Ratio: { type: "number" },
      Force: { type: "boolean", title: "Force it", default: false },
      "Name (2)": { type: "string", title: "Again" },
    },
    required: ["Name", "Replicas", "Ratio", "Force", "Name (2)"],
  });
  const content = { Name: "api", Replicas: 3, Ratio: 0.5, Force: true, "Name (2)": "x" };
  assert.deepEqual(toPromptAnswer(prompt, { action: "accept", content }), {
    action: "accept",
    values: { Name: "x", Replicas: 3, Ratio: 0.5, Force: true },
  });
  for (
    const wrong of [{ Replicas: 2.5 }, { Replicas: "3" }, { Ratio: "0.5" }, { Force: "true" }, {
      Name: undefined,
    }]
  ) {
    const answer = toPromptAnswer(prompt, {
      action: "accept",
      content: { ...content, ...wrong } as never,
    });
    assert.deepEqual(answer, { action: "decline" }, JSON.stringify(wrong));
  }
});

Deno.test("toElicitation() asks a multiple choice as an array of labels and maps each chosen label back once", () => {
  const prompt: WorkerPrompt = {
    seq: 1,
    kind: "choice",
    caption: "Pick colours",
    message: "Which?",
    choices: [{ label: "Red", help: "" }, { label: "Blue", help: "" }, { label: "Red", help: "" }],
    defaults: [1, 9],
    multiple: true,
  };
  const { key, params } = toElicitation(prompt);
  assert.equal(key, "choice");
  assert.deepEqual(params.requestedSchema.properties["answer"], {
    type: "array",
    title: "Answer",
    items: {
      anyOf: [
        { const: "Red", title: "Red" },
        { const: "Blue", title: "Blue" },
        { const: "Red (2)", title: "Red (2)" },
      ],
    },
    default: ["Blue"],
  });
  const answer = (value: unknown) =>
    toPromptAnswer(prompt, { action: "accept", content: { answer: value } as never });
  assert.deepEqual(answer(["Red (2)", "Blue", "Blue"]), { action: "accept", choices: [2, 1] });
  assert.deepEqual(answer([]), { action: "accept", choices: [] });
  assert.deepEqual(answer(["Green"]), { action: "decline" });
  assert.deepEqual(answer("Red"), { action: "decline" });
});

/**
 * An SDK client and a server whose one tool asks CONFIRM through {@linkcode pushedPrompts}, in
 * memory: the tool's text is the answer the worker would get, or "no prompts".
 */
async function connected(
  capabilities: Record<string, unknown>,
  answer: (params: ElicitRequestFormParams, signal: AbortSignal) => Promise<ElicitResult>,
  promptSignal: () => AbortSignal = () => new AbortController().signal,
) {
  const server = new Server({ name: "t", version: "1" }, { capabilities: { tools: {} } });
  server.setRequestHandler("tools/call", async (_request, ctx) => {
    const onPrompt = pushedPrompts(server, ctx, true);
    const text = onPrompt ? JSON.stringify(await onPrompt(CONFIRM, promptSignal())) : "no prompts";
    return { content: [{ type: "text", text }] };
  });
  const client = new Client({ name: "t", version: "1" }, { capabilities });
  if ("elicitation" in capabilities) {
    client.setRequestHandler(
      "elicitation/create",
      (request, ctx) => answer(request.params as ElicitRequestFormParams, ctx.mcpReq.signal),
    );
  }
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  await client.connect(clientSide);
  const call = async () => {
    const result = await client.callTool({ name: "x", arguments: {} });
    return (result.content as { text: string }[])[0]!.text;
  };
  return { call, [Symbol.asyncDispose]: () => client.close() };
}

Deno.test("pushedPrompts() sends elicitation/create during the call and maps the user's choice back", async () => {
  const asked: ElicitRequestFormParams[] = [];
  await using session = await connected({ elicitation: { form: {} } }, (params) => {
    asked.push(params);
    return Promise.resolve({ action: "accept", content: { answer: "No" } });
  });
  assert.equal(await session.call(), JSON.stringify({ action: "accept", choices: [2] }));
  assert.deepEqual(asked, [toElicitation(CONFIRM).params]);
});

Deno.test("pushedPrompts() counts a bare elicitation capability as forms, and none as no prompts", async () => {
  const decline = () => Promise.resolve({ action: "decline" as const });
  await using bare = await connected({ elicitation: {} }, decline);
  assert.equal(await bare.call(), JSON.stringify({ action: "decline" }));
  await using urlOnly = await connected({ elicitation: { url: {} } }, decline);
  assert.equal(await urlOnly.call(), "no prompts");
  await using none = await connected({}, decline);
  assert.equal(await none.call(), "no prompts");
});

Deno.test("pushedPrompts() withdraws the question when the prompt's signal aborts, and answers an error with cancel", async () => {
  let withdrawn!: () => void;
  const sawWithdrawal = new Promise<void>((resolve) => withdrawn = resolve);
  await using slow = await connected(
    { elicitation: { form: {} } },
    (_params, signal) =>
      new Promise((_resolve, reject) => {
        signal.addEventListener("abort", () => {
          withdrawn();
          reject(new Error("withdrawn"));
        });
      }),
    () => AbortSignal.timeout(100),
  );
  assert.equal(await slow.call(), JSON.stringify({ action: "cancel" }));
  await sawWithdrawal;
  await using failing = await connected(
    { elicitation: { form: {} } },
    () => Promise.reject(new Error("the client cannot show forms today")),
  );
  assert.equal(await failing.call(), JSON.stringify({ action: "cancel" }));
});
