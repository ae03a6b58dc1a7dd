/**
 * The Deno half of interactive calls, without a worker: the prompt relay (answers, the time limit for
 * user input, failures), the call's time limit that stands still while the user is asked, and the
 * frame splitter the prompts arrive through.
 */
import assert from "node:assert/strict";
import { frameSplitter } from "../lib/worker_frames.ts";
import { promptRelay, TIMED_OUT } from "../lib/worker_prompts.ts";
import type { PromptAnswer, PromptRecord, WorkerPrompt } from "../lib/worker_protocol.ts";
import { interruptionOf } from "../lib/worker_request.ts";

const FRAME = {
  type: "prompt",
  id: 7,
  seq: 1,
  kind: "confirm",
  caption: "Confirm",
  message: "Are you sure?",
  choices: [{ label: "Yes", help: "" }, { label: "No", help: "" }],
  defaults: [0],
  multiple: false,
};

/** A relay whose answers and clock calls are recorded. */
function relay(
  ask: (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>,
  userInputTimeoutMs?: number,
) {
  const answers: unknown[] = [];
  const clock: string[] = [];
  const ended: PromptRecord[] = [];
  const sent = Promise.withResolvers<void>();
  const prompts = promptRelay(
    {
      onPrompt: ask,
      onPromptEnd: (record) => ended.push(record),
      ...(userInputTimeoutMs === undefined ? {} : { userInputTimeoutMs }),
    },
    { pause: () => clock.push("pause"), resume: () => clock.push("resume") },
    (answer) => {
      answers.push(answer);
      sent.resolve();
    },
  )!;
  return { prompts, answers, clock, ended, sent: sent.promise };
}

Deno.test("promptRelay: the prompt less type and id goes to onPrompt, its answer back with its seq", async () => {
  let asked: WorkerPrompt | undefined;
  const { prompts, answers, clock, ended, sent } = relay((prompt) => {
    asked = prompt;
    // Keys the protocol does not have, and choices that are not integers, never reach the worker.
    return Promise.resolve(
      { action: "accept", choices: [1, 0.5], extra: "x" } as unknown as PromptAnswer,
    );
  });
  prompts.take(FRAME);
  await sent;
  const { type: _type, id: _id, ...prompt } = FRAME;
  assert.deepEqual(asked, prompt);
  assert.deepEqual(answers, [{ action: "accept", choices: [1], seq: 1 }]);
  assert.equal(prompts.stopped(), false);
  assert.deepEqual(ended, [{ prompt, action: "accept", chosen: ["No"] }]);
  assert.deepEqual(prompts.records(), ended);
  assert.deepEqual(clock, ["pause", "resume"]);
  prompts.dispose();
});

Deno.test("promptRelay: strings of an answer reach the worker well-formed", async () => {
  // A lone surrogate is valid JSON from a client, but the worker's parser refused the whole
  // answer frame, and the prompt waited until the call's time limit (60 s seen end to end).
  const { prompts, answers, sent } = relay(() =>
    Promise.resolve({ action: "accept", values: { "na\ud800me": "c\ud800d", n: 1 } })
  );
  prompts.take({ ...FRAME, kind: "text", fields: [{ name: "name", type: "string" }] });
  await sent;
  assert.deepEqual(answers, [
    { action: "accept", values: { "na\ufffdme": "c\ufffdd", n: 1 }, seq: 1 },
  ]);
  prompts.dispose();
});

Deno.test("promptRelay: no answer within the time limit answers timeout and aborts the ask", async () => {
  let aborted = false;
  const { prompts, answers, clock, ended, sent } = relay(
    (_prompt, signal) =>
      new Promise((resolve) => {
        signal.addEventListener("abort", () => {
          aborted = signal.reason === TIMED_OUT;
          // An answer that comes after the time ran out is not sent.
          resolve({ action: "accept", choices: [0] });
        });
      }),
    20,
  );
  prompts.take(FRAME);
  await sent;
  await Promise.resolve();
  assert.equal(aborted, true);
  assert.deepEqual(answers, [{ action: "timeout", seq: 1 }]);
  assert.deepEqual(ended.map((record) => record.action), ["timeout"]);
  assert.equal(prompts.stopped(), true, "a prompt not accepted stops the call");
  assert.deepEqual(clock, ["pause", "resume"]);
  prompts.dispose();
});

Deno.test("promptRelay: a refused frame is never passed on, wants no answer, and is recorded", () => {
  let asked = 0;
  const { prompts, answers, ended } = relay(() => (asked++, Promise.resolve({ action: "accept" })));
  prompts.take({
    type: "prompt",
    id: 7,
    seq: 2,
    kind: "refused",
    caption: "",
    message: "asked for a credential, which svc never asks a user for",
  });
  assert.equal(asked, 0);
  assert.deepEqual(answers, []);
  assert.deepEqual(ended.map((record) => record.action), ["refused"]);
  assert.equal(prompts.stopped(), true);
});

Deno.test("promptRelay: an onPrompt that fails, or a malformed frame, answers cancel", async () => {
  const failing = relay(() => Promise.reject(new Error("no client")));
  failing.prompts.take({ ...FRAME, seq: 3 });
  await failing.sent;
  assert.deepEqual(failing.answers, [{ action: "cancel", seq: 3 }]);
  assert.equal(failing.prompts.stopped(), true, "the call is reported stopped by its prompt");
  const malformed = relay(() => Promise.resolve({ action: "decline" }));
  malformed.prompts.take({ ...FRAME, kind: "riddle" });
  assert.deepEqual(malformed.answers, [{ action: "cancel", seq: 1 }]);
  assert.deepEqual(malformed.clock, []);
});

Deno.test("promptRelay: dispose ends every wait: its signal aborts, no answer is sent, no timer is left", () => {
  let signal: AbortSignal | undefined;
  const { prompts, answers } = relay((_prompt, given) => {
    signal = given;
    return new Promise(() => {});
  });
  prompts.take(FRAME);
  prompts.dispose();
  assert.equal(signal?.aborted, true);
  prompts.take({ ...FRAME, seq: 2 });
  assert.deepEqual(answers, []);
});

Deno.test("promptRelay: none for a call without onPrompt", () => {
  assert.equal(promptRelay({}, { pause() {}, resume() {} }, () => {}), undefined);
});

Deno.test("interruptionOf: the time limit stands still while paused", async () => {
  const interruption = interruptionOf({ timeoutMs: 60 });
  let fired = false;
  interruption.promise.then(() => fired = true);
  interruption.pause();
  interruption.pause();
  await new Promise((resolve) => setTimeout(resolve, 120));
  interruption.resume();
  assert.equal(fired, false, "still one pause open");
  interruption.resume();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(fired, false, "about 40 ms of the limit are left");
  assert.deepEqual(await interruption.promise, { interrupted: "timeout" });
  interruption.dispose();
});

Deno.test("frameSplitter: lines across chunks, and a frame over the limit stops the reading", () => {
  const frames: string[] = [];
  const refused: number[] = [];
  const take = frameSplitter(() => 10, (line) => frames.push(line), (limit) => refused.push(limit));
  assert.equal(take('{"a"'), true);
  assert.equal(take(':1}\n{"b":2}\n{'), true);
  assert.deepEqual(frames, ['{"a":1}', '{"b":2}']);
  assert.equal(take('"c":"0123456789"}\n'), false);
  assert.deepEqual(refused, [10]);
});
