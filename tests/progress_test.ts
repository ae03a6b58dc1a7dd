/**
 * Progress (issue 13): when the client sends a progressToken, each `Write-Progress` record becomes
 * a `notifications/progress`, over stdio and HTTP (Stateless and Stateful, both eras), through the
 * SDK clients, on real pwsh. Log messages (issue 32) on the same servers: when the client asks for a
 * level (`logging/setLevel`, or the 2026-07-28 `_meta` level), warning, information, verbose and
 * debug records become `notifications/message` at that level and above, rate-limited; without one,
 * none.
 */
import assert from "node:assert/strict";
import {
  Client,
  LOG_LEVEL_META_KEY,
  type LoggingLevel,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { LOG_BURST, LOG_RATE } from "../lib/client_log.ts";
import { progressNotifier } from "../lib/mcp.ts";
import {
  answerElicitations,
  type Era,
  fixtureConfig,
  outputOf,
  type ProgressInfo,
  startHttpSvc,
  startSvc,
} from "./support/harness.ts";
import { outputWithin } from "./support/deadline.ts";

const ARGS = { Steps: 3, DelayMilliseconds: 300 };
// The conformance suite's CLI (its package has no main module; package.json "bin" is in dist/).
const CONFORMANCE =
  new URL("./dist/index.js", import.meta.resolve("@modelcontextprotocol/conformance")).pathname;

function checkProgress(seen: ProgressInfo[]): void {
  assert.ok(seen.length >= 2, `${seen.length} progress notification(s): ${JSON.stringify(seen)}`);
  for (let i = 1; i < seen.length; i++) {
    assert.ok(seen[i]!.progress > seen[i - 1]!.progress, `progress rises: ${JSON.stringify(seen)}`);
  }
  assert.ok(seen.every((p) => p.total === 100), JSON.stringify(seen));
  assert.match(seen[0]!.message ?? "", /^Fixture work: step \d of 3 \(\d+%\)$/);
  assert.equal(seen.at(-1)!.progress, 100, JSON.stringify(seen));
}

/** The log messages test_logging_tool sends at "debug", as [level, logger, data]. */
const LOGGING_TOOL_MESSAGES = [
  ["warning", "test_logging_tool/warning", "logging tool warning"],
  ["info", "test_logging_tool/information", "logging tool info"],
  ["debug", "test_logging_tool/verbose", "logging tool verbose"],
  ["debug", "test_logging_tool/debug", "logging tool debug"],
];

/** Where a client's `notifications/message` are kept, as [level, logger, data]. */
function collectLogs(client: Client): string[][] {
  const seen: string[][] = [];
  client.setNotificationHandler("notifications/message", (notification) => {
    const { level, logger, data } = notification.params;
    seen.push([level, logger ?? "", String(data)]);
  });
  return seen;
}

/**
 * Calls `tool` asking for `level` (the 2026-07-28 `_meta` level; the session's, set before, for
 * older clients), checks its output, and returns the log messages it brought.
 */
async function logsOf(
  client: Client,
  seen: string[][],
  level: LoggingLevel | undefined,
  tool = "test_logging_tool",
  args: Record<string, unknown> = {},
): Promise<string[][]> {
  seen.length = 0;
  const modern = client.getNegotiatedProtocolVersion() === "2026-07-28";
  const meta = modern && level ? { _meta: { [LOG_LEVEL_META_KEY]: level } } : {};
  const result = await client.callTool({ name: tool, arguments: args, ...meta });
  assert.notEqual(result.isError, true, JSON.stringify(result));
  return [...seen];
}

/** Messages at each level asked, from none to "debug"; `setLevel` sends the 2025-era request. */
async function checkLevels(client: Client, setLevel: boolean): Promise<void> {
  const seen = collectLogs(client);
  assert.deepEqual(await logsOf(client, seen, undefined), [], "no level: no log message");
  const expected: [LoggingLevel, number][] = [["warning", 1], ["notice", 1], ["info", 2], [
    "debug",
    4,
  ]];
  for (const [level, count] of expected) {
    if (setLevel) assert.deepEqual(await client.setLoggingLevel(level), {});
    assert.deepEqual(
      await logsOf(client, seen, level),
      LOGGING_TOOL_MESSAGES.slice(0, count),
      `at ${level}`,
    );
  }
}

for (const era of ["2025-11-25", "2026-07-28"] as Era[]) {
  Deno.test(`stdio ${era}: Write-Progress records arrive as notifications/progress; streams as log messages at the level asked`, async () => {
    await using svc = await startSvc({ config: fixtureConfig(), era });
    const client = svc.client!;
    await checkLevels(client, era === "2025-11-25");
    // Progress is unchanged while log messages are on (the 2025-era session's level stays "debug").
    const seen: ProgressInfo[] = [];
    const meta = era === "2026-07-28" ? { _meta: { [LOG_LEVEL_META_KEY]: "debug" } } : {};
    const result = await client.callTool(
      { name: "write_fixture_progress", arguments: ARGS, ...meta },
      { onprogress: (p: ProgressInfo) => seen.push(p) },
    );
    assert.deepEqual(outputOf(result as Parameters<typeof outputOf>[0]), ["done"]);
    checkProgress(seen);
    // Without a token the call is unchanged.
    const quiet = await svc.callTool("write_fixture_progress", { Steps: 1, DelayMilliseconds: 0 });
    assert.deepEqual(outputOf(quiet), ["done"]);
    // A burst shorter than the worker's 100 ms look, ending in -Completed, still reports its last
    // progress, before the result. Seen as notifications, not through callTool's onprogress: the SDK
    // client handles a notification a microtask after a response read with it, and by then the
    // response has removed the call's progress handler.
    const quickly: ProgressInfo[] = [];
    client.setNotificationHandler("notifications/progress", (n) => {
      quickly.push(n.params as ProgressInfo);
    });
    const quick = await client.callTool(
      { name: "write_fixture_progress", arguments: { Steps: 3, DelayMilliseconds: 0 } },
      { onprogress: () => {} },
    );
    assert.deepEqual(outputOf(quick as Parameters<typeof outputOf>[0]), ["done"]);
    assert.ok(quickly.length >= 1, "no progress at all for a burst");
    assert.match(quickly.at(-1)!.message ?? "", /step 3 of 3/);
    if (era !== "2025-11-25") return;
    // The rate limit: 300 warnings at once; what was left out is counted in one last message.
    const logs = collectLogs(client);
    const started = performance.now();
    const burst = await logsOf(client, logs, "debug", "write_fixture_warnings", { Count: 300 });
    const seconds = (performance.now() - started) / 1000;
    const sent = burst.filter(([, logger]) => logger === "write_fixture_warnings/warning");
    const last = burst.at(-1)!;
    assert.equal(last[1], "write_fixture_warnings/svc", JSON.stringify(last));
    const left = Number(/^svc left out (\d+) of this call's log messages/.exec(last[2] ?? "")?.[1]);
    assert.equal(sent.length + left, 300, `${sent.length} sent, ${left} left out`);
    assert.ok(sent.length <= LOG_BURST + Math.ceil(seconds * LOG_RATE), `${sent.length} sent`);
    assert.deepEqual(sent[0], ["warning", "write_fixture_warnings/warning", "fixture warning 1"]);
  });
}

Deno.test("http: progress and log messages reach Stateless and Stateful clients of both eras; Stateless carries no prompt", async (t) => {
  for (const mode of ["Stateless", "Stateful"]) {
    await using svc = await startHttpSvc({
      config: { ...fixtureConfig(), McpServer: { HttpTransportMode: mode } },
    });
    for (const era of ["2025-11-25", "2026-07-28"]) {
      await t.step(`${mode}, ${era}`, async () => {
        const client = new Client(
          { name: "progress", version: "1" },
          era === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {},
        );
        await client.connect(new StreamableHTTPClientTransport(new URL(svc.url)));
        try {
          if (era === "2026-07-28" || mode === "Stateful") {
            await checkLevels(client, era !== "2026-07-28");
          } else {
            // Stateless 2025-11-25: no session remembers the level, so no call gets log messages.
            assert.deepEqual(await client.setLoggingLevel("debug"), {});
            assert.deepEqual(await logsOf(client, collectLogs(client), "debug"), []);
          }
          const seen: ProgressInfo[] = [];
          const result = await client.callTool(
            { name: "write_fixture_progress", arguments: ARGS },
            { onprogress: (p: ProgressInfo) => seen.push(p) },
          );
          assert.deepEqual(outputOf(result as Parameters<typeof outputOf>[0]), ["done"]);
          checkProgress(seen);
        } finally {
          await client.close();
        }
      });
    }
    if (mode === "Stateless") {
      // Here rather than in prompts_2025_test.ts: this server is the suite's Stateless one.
      await t.step(
        "Stateless, 2025-11-25: a prompt stops the command at once though the client declares elicitation",
        async () => {
          const client = new Client({ name: "prompts", version: "1" }, {
            capabilities: { elicitation: { form: {} } },
          });
          let asked = 0;
          answerElicitations(client, () => {
            asked++;
            return Promise.resolve({ action: "decline" });
          });
          await client.connect(new StreamableHTTPClientTransport(new URL(svc.url)));
          try {
            const started = Date.now();
            const result = await client.callTool({ name: "read_fixture_prompt", arguments: {} });
            const text = (result.content as { text: string }[]).map((c) => c.text).join("\n");
            assert.equal(result.isError, true);
            assert.match(
              text,
              /^The command asked its user: Read-FixturePrompt: Favourite colour; this client cannot ask its user, so the command was stopped/,
            );
            assert.equal(asked, 0, "no elicitation/create was sent");
            assert.ok(Date.now() - started < 5_000, `${Date.now() - started} ms`);
          } finally {
            await client.close();
          }
        },
      );
      continue;
    }
    if (mode !== "Stateful") continue;
    // The conformance suite's 2025-era logging scenario (gone from 2026-07-28, so not in
    // conformance_test.ts's run) needs a session: Stateless forgets logging/setLevel. (Its
    // logging-set-level only checks the {} that checkLevels checks.)
    await t.step(
      "Stateful: the conformance suite's 2025-11-25 tools-call-with-logging passes",
      async () => {
        const args = ["run", "--allow-all", CONFORMANCE, "server", "--url", `${svc.url}/mcp`];
        const run = await outputWithin(
          Deno.execPath(),
          {
            args: [
              ...args,
              "--scenario",
              "tools-call-with-logging",
              "--spec-version",
              "2025-11-25",
            ],
            stdout: "piped",
            stderr: "piped",
          },
          "the conformance scenario tools-call-with-logging",
          60_000,
        );
        const text = new TextDecoder().decode(run.stdout) + new TextDecoder().decode(run.stderr);
        assert.equal(run.code, 0, text);
        assert.match(text, /Passed: 2\/2, 0 failed, 0 warnings/, text);
      },
    );
  }
});

Deno.test("progressNotifier(): progress always rises; no percent counts up; -Completed is not sent", () => {
  const sent: { progress: number; total?: number; message: string }[] = [];
  const notify = progressNotifier((params) => {
    sent.push(params);
    return Promise.resolve();
  });
  const record = (percent: number, status: string, completed = false) => ({
    activity: "Copy",
    status,
    operation: null,
    percent,
    completed,
  });
  notify(record(10, "a"));
  notify(record(10, "b"));
  notify(record(5, "c"));
  notify(record(50, "d"));
  notify(record(-1, "done", true));
  assert.deepEqual(sent.map((s) => s.progress), [10, 10.01, 10.02, 50]);
  assert.deepEqual(sent[0], { progress: 10, total: 100, message: "Copy: a (10%)" });
  const counted: number[] = [];
  const count = progressNotifier((params) => {
    counted.push(params.progress);
    assert.equal(params.total, undefined);
    return Promise.resolve();
  });
  count(record(-1, "x"));
  count(record(-1, "y"));
  assert.deepEqual(counted, [1, 2]);
});
