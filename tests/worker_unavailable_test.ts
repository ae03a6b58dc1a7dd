/**
 * The call path shared by both transports (`lib/mcp.ts`) answers a runner that can lend no worker
 * as unavailable, whatever the runner: it knows `WorkerUnavailableError`, not the HTTP pool.
 */
import assert from "node:assert/strict";
import { loadSettings } from "../lib/config.ts";
import { WorkerUnavailableError } from "../lib/errors.ts";
import { callTool, type ToolRunner } from "../lib/call.ts";
import { toolOf } from "./support/descriptors.ts";

const principal = { name: "local", scheme: null, scopes: [], roles: [] };

Deno.test("callTool() answers a runner's WorkerUnavailableError as unavailable, with its Retry-After", async () => {
  const empty = await Deno.makeTempDir();
  const { shell } = await loadSettings({}, { env: {}, cwd: empty }).finally(() =>
    Deno.remove(empty)
  );
  const tool = toolOf("test_tool", []);
  let lent = 0;
  const runner: ToolRunner = {
    tools: () => Promise.resolve([tool]),
    withWorker: () => {
      lent++;
      return Promise.reject(new WorkerUnavailableError("No worker is free for the call", 7));
    },
  };
  const outcome = await callTool({ runner, shell }, "test_tool", {}, {
    signal: new AbortController().signal,
    principal,
  });
  assert.equal(lent, 1);
  assert.deepEqual(outcome, {
    kind: "unavailable",
    message: "No worker is free for the call",
    retryAfterSeconds: 7,
    result: {
      content: [{ type: "text", text: "No worker is free for the call" }],
      structuredContent: { notes: ["No worker is free for the call"] },
      isError: true,
    },
  });
});
