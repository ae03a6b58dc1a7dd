/**
 * Runs last (test files run in name order): after every other suite, no worker process may be left,
 * no pwsh started by svc.
 */
import assert from "node:assert/strict";
import { eventually, orphanedWorkers } from "./support/harness.ts";

Deno.test("no worker process outlives the test suite", async () => {
  // A worker's command line names svc's private host script: ".../svc-XXXX/host.ps1 -Endpoint".
  const clean = await eventually(() => orphanedWorkers().length === 0, 10_000);
  assert.ok(clean, `orphaned workers: ${orphanedWorkers().join(", ")}`);
});
