import assert from "node:assert/strict";
import {
  BodiesOverBudget,
  BodyBudget,
  BodyNotText,
  BodyTimedOut,
  BodyTooLarge,
  isJsonContentType,
  onBodyEnd,
  readBodyText,
  withWholeBody,
} from "../lib/http_body.ts";

/** Bounds of `limit` bytes and a time no test here comes near. */
function bounded(limit: number) {
  return { limit, timeoutMs: 60_000, budget: new BodyBudget(1 << 30) };
}

function post(body: BodyInit | null, headers: HeadersInit = {}): Request {
  return new Request("http://localhost/mcp", { method: "POST", body, headers });
}

/** A body streamed in `chunk`-byte pieces, endlessly unless `total` is given; tells when cancelled. */
function streamed(chunk: number, total = Infinity) {
  const state = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled >= total) return controller.close();
      state.pulled += chunk;
      controller.enqueue(new Uint8Array(chunk).fill(0x61));
    },
    cancel() {
      state.cancelled = true;
    },
  }, { highWaterMark: 0 }); // pulled only when read, so `pulled` counts what was read
  return { stream, state };
}

Deno.test("readBodyText() reads a body at or under the limit as UTF-8 text", async () => {
  assert.equal(await readBodyText(post('{"a":"é"}'), bounded(1024)), '{"a":"é"}');
  const exact = "x".repeat(100);
  assert.equal(await readBodyText(post(exact), bounded(100)), exact);
  assert.equal(await readBodyText(post(null), bounded(10)), "");
  assert.equal(await readBodyText(new Request("http://localhost/"), bounded(10)), "");
  const { stream } = streamed(1000, 3000);
  assert.equal((await readBodyText(post(stream), bounded(3000))).length, 3000);
});

Deno.test("readBodyText() counts bytes, not characters", async () => {
  // Three two-byte characters are six bytes.
  await assert.rejects(readBodyText(post("ééé"), bounded(5)), BodyTooLarge);
  assert.equal(await readBodyText(post("ééé"), bounded(6)), "ééé");
});

Deno.test("readBodyText() refuses a body over the limit in a sentence naming the setting and the limit", async () => {
  const error = await readBodyText(post("x".repeat(101)), bounded(100)).catch((e) => e);
  assert.ok(error instanceof BodyTooLarge);
  assert.equal(error.limit, 100);
  assert.equal(
    error.message,
    "The request body is larger than McpServer:MaxRequestBodyBytes (100 bytes)",
  );
});

Deno.test("readBodyText() stops reading an endless stream as soon as it passes the limit, and cancels it", async () => {
  const { stream, state } = streamed(1024);
  await assert.rejects(readBodyText(post(stream), bounded(4096)), BodyTooLarge);
  assert.ok(state.pulled <= 4096 + 2 * 1024, `read ${state.pulled} bytes of a 4096-byte limit`);
  assert.equal(state.cancelled, true);
});

Deno.test("readBodyText() refuses a declared Content-Length over the limit before reading anything", async () => {
  const { stream, state } = streamed(16, 16);
  const req = post(stream, { "content-length": "1000000" });
  await assert.rejects(readBodyText(req, bounded(100)), BodyTooLarge);
  assert.equal(state.pulled, 0);
  assert.equal(state.cancelled, true);
  // A lying small Content-Length does not let a larger body through.
  const liar = streamed(1024);
  await assert.rejects(
    readBodyText(post(liar.stream, { "content-length": "10" }), bounded(4096)),
    BodyTooLarge,
  );
});

Deno.test("readBodyText() refuses a body that is not UTF-8", async () => {
  const error = await readBodyText(post(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])), bounded(100))
    .catch((e) => e);
  assert.ok(error instanceof BodyNotText);
  assert.equal(error.message, "The request body is not UTF-8 text");
  assert.ok(error.cause instanceof TypeError);
});

Deno.test("isJsonContentType() accepts application/json with any parameters and case, nothing else", () => {
  assert.equal(isJsonContentType("application/json"), true);
  assert.equal(isJsonContentType("Application/JSON; charset=utf-8"), true);
  assert.equal(isJsonContentType(" application/json ;charset=UTF-8"), true);
  assert.equal(isJsonContentType("application/json-patch+json"), false);
  assert.equal(isJsonContentType("text/json"), false);
  assert.equal(isJsonContentType("text/plain"), false);
  assert.equal(isJsonContentType(""), false);
  assert.equal(isJsonContentType(null), false);
});

Deno.test("onBodyEnd() calls back at once for a response without a body", () => {
  let ends = 0;
  const response = new Response(null, { status: 204 });
  assert.equal(onBodyEnd(response, () => ends++), response);
  assert.equal(ends, 1);
});

Deno.test("onBodyEnd() calls back once, when the body has been read, and keeps status, headers and bytes", async () => {
  let ends = 0;
  const wrapped = onBodyEnd(
    new Response("hello", { status: 201, statusText: "Made", headers: { "x-a": "1" } }),
    () => ends++,
  );
  assert.equal(ends, 0);
  assert.equal(wrapped.status, 201);
  assert.equal(wrapped.statusText, "Made");
  assert.equal(wrapped.headers.get("x-a"), "1");
  assert.equal(await wrapped.text(), "hello");
  assert.equal(ends, 1);
});

Deno.test("onBodyEnd() calls back once when the reader abandons the body, and cancels the source", async () => {
  let ends = 0;
  const { stream, state } = streamed(8);
  const wrapped = onBodyEnd(new Response(stream), () => ends++);
  const reader = wrapped.body!.getReader();
  await reader.read();
  assert.equal(ends, 0);
  await reader.cancel("client went away");
  await reader.cancel("twice");
  assert.equal(ends, 1);
  assert.equal(state.cancelled, true);
});

Deno.test("onBodyEnd() calls back once when the source body fails", async () => {
  let ends = 0;
  const failing = new ReadableStream<Uint8Array>({
    pull() {
      throw new Error("source broke");
    },
  });
  const wrapped = onBodyEnd(new Response(failing), () => ends++);
  await assert.rejects(wrapped.text(), /source broke/);
  assert.equal(ends, 1);
});

Deno.test("readBodyText() refuses a body that stops arriving, after the timeout, and cancels it", async () => {
  const { stream, state } = streamed(10, 10); // ten bytes, then nothing: never closed
  const stalled = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const reader = stream.getReader();
      const { value } = await reader.read();
      reader.releaseLock();
      if (value) controller.enqueue(value);
    },
    cancel() {
      state.cancelled = true;
    },
  }, { highWaterMark: 0 });
  const error = await readBodyText(post(stalled), {
    limit: 1000,
    timeoutMs: 200,
    budget: new BodyBudget(1 << 30),
  }).catch((e) => e);
  assert.ok(error instanceof BodyTimedOut);
  assert.equal(error.status, 408);
  assert.match(error.message, /McpServer:BodyReadTimeout \(0\.2 s\)/);
  assert.ok(state.cancelled);
});

Deno.test("readBodyText() refuses with 503 a body that does not fit the shared budget, and gives back what it held", async () => {
  const budget = new BodyBudget(100);
  // The buffer is at most the limit, so a budget of one limit holds one body.
  const bounds = { limit: 100, timeoutMs: 60_000, budget };
  assert.ok(budget.take(60));
  const error = await readBodyText(post("x".repeat(50)), bounds).catch((e) => e);
  assert.ok(error instanceof BodiesOverBudget, String(error));
  assert.equal(error.status, 503);
  assert.match(error.message, /McpServer:MaxBufferedBodyBytes \(100 bytes\)/);
  budget.give(60);
  // Read bodies give their share back: many in a row fit a budget that holds one.
  for (let i = 0; i < 5; i++) {
    assert.equal(await readBodyText(post("y".repeat(90)), bounds), "y".repeat(90));
  }
  assert.ok(budget.take(100), "the whole budget is free again");
});

Deno.test("readBodyText() takes a body that came whole with its head as it is, within the limit", async () => {
  const bytes = new TextEncoder().encode('{"a":"é"}');
  // The stream is never read: its content differs, so the answer shows which was taken.
  const whole = () => withWholeBody(post("not this"), bytes);
  assert.equal(await readBodyText(whole(), bounded(1024)), '{"a":"é"}');
  await assert.rejects(() => readBodyText(whole(), bounded(5)), BodyTooLarge);
  const invalid = withWholeBody(post("x"), new Uint8Array([0xff, 0xfe]));
  await assert.rejects(() => readBodyText(invalid, bounded(10)), BodyNotText);
});
