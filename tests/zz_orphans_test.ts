/**
 * Runs last (test files run in name order): after every other suite, no worker process may be left,
 * no pwsh started by svc, and the catalog cache the run's servers shared goes with the run.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { eventually, orphanedWorkers, SHARED_CATALOG_CACHE } from "./support/harness.ts";

Deno.test("no worker process outlives the test suite, nor the run's shared catalog cache", async () => {
  // A worker's command line names svc's private host script: ".../svc-XXXX/host.ps1 -Endpoint".
  const clean = await eventually(() => orphanedWorkers().length === 0, 10_000);
  assert.ok(clean, `orphaned workers: ${orphanedWorkers().join(", ")}`);
  await Deno.remove(SHARED_CATALOG_CACHE, { recursive: true }).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
  assert.ok(!existsSync(SHARED_CATALOG_CACHE), SHARED_CATALOG_CACHE);
});
