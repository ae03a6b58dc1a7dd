/**
 * Progress (issue 13): when the client sends a progressToken, each `Write-Progress` record becomes
 * a `notifications/progress`, over stdio and HTTP (Stateless and Stateful, both eras), through the
 * SDK clients, on real pwsh.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
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

const ARGS = { Steps: 3, DelayMilliseconds: 300 };

function checkProgress(seen: ProgressInfo[]): void {
  assert.ok(seen.length >= 2, `${seen.length} progress notification(s): ${JSON.stringify(seen)}`);
  for (let i = 1; i < seen.length; i++) {
    assert.ok(seen[i]!.progress > seen[i - 1]!.progress, `progress rises: ${JSON.stringify(seen)}`);
  }
  assert.ok(seen.every((p) => p.total === 100), JSON.stringify(seen));
  assert.match(seen[0]!.message ?? "", /^Fixture work: step \d of 3 \(\d+%\)$/);
  assert.equal(seen.at(-1)!.progress, 100, JSON.stringify(seen));
}

for (const era of ["2025-11-25", "2026-07-28"] as Era[]) {
  Deno.test(`stdio ${era}: Write-Progress records arrive as notifications/progress`, async () => {
    await using svc = await startSvc({ config: fixtureConfig(), era });
    const seen: ProgressInfo[] = [];
    const result = await svc.callTool("write_fixture_progress", ARGS, {
      onprogress: (p) => seen.push(p),
    });
    assert.deepEqual(outputOf(result), ["done"]);
    checkProgress(seen);
    // Without a token the call is unchanged.
    const quiet = await svc.callTool("write_fixture_progress", { Steps: 1, DelayMilliseconds: 0 });
    assert.deepEqual(outputOf(quiet), ["done"]);
  });
}

Deno.test("http: progress reaches Stateless and Stateful clients of both eras; Stateless carries no prompt", async (t) => {
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
    if (mode !== "Stateless") continue;
    // Here rather than in prompts_2025_test.ts: this server is the suite's Stateless one.
    await t.step(
      "Stateless, 2025-11-25: a prompt fails at once though the client declares elicitation",
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
          assert.match(text, /Favourite colour/);
          assert.match(text, /non-interactive/);
          assert.equal(asked, 0, "no elicitation/create was sent");
          assert.ok(Date.now() - started < 5_000, `${Date.now() - started} ms`);
        } finally {
          await client.close();
        }
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
