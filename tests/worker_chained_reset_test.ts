/**
 * The reset chained to a call (`thenReset`, docs/worker-protocol.md §4.4), as the HTTP transport
 * asks for it: the worker resets itself once it has answered, and `reset()` takes that answer.
 */
import assert from "node:assert/strict";
import { RemoteError } from "../lib/errors.ts";
import { RunspaceWorker } from "../lib/worker.ts";
import { TEST_PWSH } from "./support/harness.ts";

async function startWorker(): Promise<RunspaceWorker> {
  const worker = await RunspaceWorker.start({ pwsh: TEST_PWSH, stopTimeoutMs: 3_000 });
  await worker.startup({ modules: [], scriptPath: null, script: null }, 60_000);
  return worker;
}

function run(
  worker: RunspaceWorker,
  command: string,
  parameters: Record<string, unknown>,
  thenReset = false,
) {
  return worker.invoke({ command, parameters, credentials: [], depth: 2 }, {
    timeoutMs: 30_000,
    thenReset,
  });
}

/** What the global `$planted` holds for the next call: `[]` once a reset has removed it. */
async function planted(worker: RunspaceWorker): Promise<unknown[]> {
  const { result } = await run(worker, "Get-Variable", {
    Name: "planted",
    ValueOnly: true,
    ErrorAction: "SilentlyContinue",
  });
  return result.output;
}

Deno.test("chained reset: the next call starts from the snapshot, and reset() answers for it", async () => {
  await using worker = await startWorker();
  await run(worker, "Set-Variable", { Name: "planted", Value: 7, Scope: "Global" }, true);
  const reset = await worker.reset();
  assert.equal(reset.path, "full", "a new global variable takes the full path");
  assert.ok(typeof reset.workingSetBytes === "number" && reset.workingSetBytes > 10_000_000);
  assert.deepEqual(await planted(worker), []);
  assert.equal((await worker.reset()).path, "fast");
});

Deno.test("chained reset: a call that cannot start is answered, then reset", async () => {
  await using worker = await startWorker();
  const failed = await worker.invoke({
    command: "Get-Date",
    parameters: {},
    credentials: [],
    depth: 500,
  }, { thenReset: true })
    .then(() => null, (error) => error);
  assert.ok(failed instanceof RemoteError, `not a RemoteError: ${failed}`);
  assert.match(failed.message, /Depth 500/);
  assert.equal((await worker.reset()).path, "fast");
  const { result } = await run(worker, "Get-Date", { Date: "2026-11-26", Format: "yyyy" });
  assert.deepEqual(result.output, ["2026"]);
});

Deno.test("chained reset: a request after an untaken chained reset waits for its answer", async () => {
  await using worker = await startWorker();
  await run(worker, "Set-Variable", { Name: "planted", Value: 1, Scope: "Global" }, true);
  // No reset() in between: the next call is sent only once the chained reset has answered.
  assert.deepEqual(await planted(worker), []);
  // Without chaining, reset() sends a reset request of its own.
  assert.equal((await worker.reset()).path, "fast");
});
