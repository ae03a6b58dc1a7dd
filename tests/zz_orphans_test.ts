/**
 * Runs last (test files run in name order): after every other suite, no worker process may be left,
 * whether stand-in or real pwsh started by svc.
 */
import assert from "node:assert/strict";
import { eventually, processesMatching } from "./support/harness.ts";

Deno.test({
  name: "no worker process outlives the test suite",
  ignore: Deno.build.os === "windows",
  async fn() {
    // A worker's command line names svc's private host script: ".../svc-XXXX/host.ps1 -Endpoint".
    const gone = await eventually(
      () => processesMatching("host.ps1 -Endpoint").length === 0,
      10_000,
    );
    assert.ok(gone, `orphaned workers: ${processesMatching("host.ps1 -Endpoint").join(", ")}`);
    assert.deepEqual(processesMatching("fake_pwsh.ts"), []);
  },
});
