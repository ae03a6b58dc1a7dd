/** Unit tests of lib/pool_wait.ts: the line of waiting callers and the hold on new processes. */
import assert from "node:assert/strict";
import {
  GROWTH_HOLD_BACK_MS,
  GrowthHoldBack,
  pollWhile,
  type Waiter,
  waitInLine,
} from "../lib/pool_wait.ts";

const never = () => new Error("timed out");

Deno.test("waitInLine() resolves with the entry the pool gives and leaves the line", async () => {
  const line: Waiter<string>[] = [];
  const outcomes: (Error | null)[] = [];
  const waiting = waitInLine(line, {
    tenant: "a",
    timeoutMs: 10_000,
    timedOut: never,
    settled: (error) => outcomes.push(error),
  });
  assert.equal(line.length, 1);
  assert.equal(line[0]!.tenant, "a");
  line[0]!.resolve("worker");
  assert.equal(await waiting, "worker");
  assert.deepEqual(outcomes, [null]);
  assert.equal(line.length, 0);
});

Deno.test("waitInLine() fails with timedOut's error after timeoutMs, and at once on an aborted signal", async () => {
  const line: Waiter<string>[] = [];
  const outcomes: (Error | null)[] = [];
  const settled = (error: Error | null) => outcomes.push(error);
  await assert.rejects(
    waitInLine(line, {
      tenant: "a",
      timeoutMs: 20,
      timedOut: () => new Error("no worker"),
      settled,
    }),
    /no worker/,
  );
  await assert.rejects(
    waitInLine(line, {
      tenant: "a",
      signal: AbortSignal.abort(),
      timeoutMs: 10_000,
      timedOut: never,
      settled,
    }),
    /cancelled while waiting for a worker/,
  );
  const controller = new AbortController();
  const waiting = waitInLine(line, {
    tenant: "a",
    signal: controller.signal,
    timeoutMs: 10_000,
    timedOut: never,
    settled,
  });
  controller.abort();
  await assert.rejects(waiting, /cancelled/);
  assert.equal(line.length, 0);
  assert.deepEqual(outcomes.map((error) => error?.message.slice(0, 9)), [
    "no worker",
    "The call ",
    "The call ",
  ]);
});

Deno.test("GrowthHoldBack holds a tenant's growth into a new process once, then lets it go", async () => {
  let rechecks = 0;
  let waiting = true;
  const holdBack = new GrowthHoldBack({ recheck: () => rechecks++, waiting: () => waiting });
  assert.equal(holdBack.holds("a", () => false), false, "no hold when no process is needed");
  const started = performance.now();
  assert.equal(holdBack.holds("a", () => true), true);
  assert.equal(holdBack.holds("a", () => true), true, "held while the hold runs");
  await pollWhile(() => rechecks === 0, Date.now() + 5_000);
  assert.ok(performance.now() - started >= GROWTH_HOLD_BACK_MS - 5);
  assert.equal(rechecks, 1);
  assert.equal(holdBack.holds("a", () => true), false, "after the hold, growth goes ahead");
  assert.equal(holdBack.holds("a", () => true), true, "and a later need holds again");
  waiting = false;
  holdBack.clear();
  await new Promise((r) => setTimeout(r, GROWTH_HOLD_BACK_MS + 50));
  assert.equal(rechecks, 1, "clear() ends holds without a recheck");
});
