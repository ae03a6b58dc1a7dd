/**
 * A call's log messages (lib/client_log.ts), without a worker: which records reach which client
 * level, the per-call rate limit on a fake clock, and the one last message counting what it left
 * out. End to end on real PowerShell: tests/progress_test.ts.
 */
import assert from "node:assert/strict";
import type { LoggingMessageNotificationParams } from "@modelcontextprotocol/server";
import { CallLog, LOG_BURST, LOG_RATE } from "../lib/client_log.ts";

function recorder(): {
  sent: LoggingMessageNotificationParams[];
  send: (params: LoggingMessageNotificationParams) => Promise<void>;
} {
  const sent: LoggingMessageNotificationParams[] = [];
  return { sent, send: (params) => (sent.push(params), Promise.resolve()) };
}

Deno.test("CallLog: no level, or one above warning, sends nothing; notice asks the worker for warnings", () => {
  const { send } = recorder();
  assert.equal(CallLog.for("t", undefined, send), null);
  assert.equal(CallLog.for("t", "error", send), null);
  assert.equal(CallLog.for("t", "emergency", send), null);
  assert.equal(CallLog.for("t", "notice", send)!.level, "warning");
  assert.equal(CallLog.for("t", "warning", send)!.level, "warning");
  assert.equal(CallLog.for("t", "info", send)!.level, "info");
  assert.equal(CallLog.for("t", "debug", send)!.level, "debug");
});

Deno.test("CallLog: records at the client's level and above, each at its stream's level", async () => {
  const { sent, send } = recorder();
  const log = CallLog.for("get_thing", "info", send)!;
  log.onLog({
    records: [
      { stream: "debug", message: "d" },
      { stream: "verbose", message: "v" },
      { stream: "information", message: "i" },
      { stream: "warning", message: "w" },
    ],
  });
  assert.deepEqual(sent, [
    { level: "info", logger: "get_thing/information", data: "i" },
    { level: "warning", logger: "get_thing/warning", data: "w" },
  ]);
  await log.finish();
  assert.equal(sent.length, 2, "nothing left out: no last message");
});

Deno.test("CallLog: LOG_BURST at once, then LOG_RATE a second; one last message counts the rest", async () => {
  const { sent, send } = recorder();
  let now = 0;
  const log = CallLog.for("t", "debug", send, () => now)!;
  const warnings = (count: number) =>
    Array.from({ length: count }, (_, i) => ({ stream: "warning" as const, message: `w${i}` }));
  log.onLog({ records: warnings(LOG_BURST + 50), dropped: 5 });
  assert.equal(sent.length, LOG_BURST);
  now += 1000;
  log.onLog({ records: warnings(LOG_RATE + 10) });
  assert.equal(sent.length, LOG_BURST + LOG_RATE);
  now += 200;
  log.onLog({ records: warnings(3) });
  assert.equal(sent.length, LOG_BURST + LOG_RATE + 2, "refilled at LOG_RATE a second");
  await log.finish();
  const last = sent.at(-1)!;
  assert.equal(last.level, "warning");
  assert.equal(last.logger, "t/svc");
  // 50 past the burst, 5 the worker left out, 10 past the rate, 1 past the refill.
  assert.match(String(last.data), /^svc left out 66 of this call's log messages/);
  await log.finish();
  assert.equal(sent.length, LOG_BURST + LOG_RATE + 3, "said once");
});
