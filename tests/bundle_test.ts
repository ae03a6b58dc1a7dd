/**
 * `deno task bundle` builds one JS file that runs with just `deno`, the host script and the default
 * configuration embedded (ARCHITECTURE Decision 10; `deno compile` needs a download this machine
 * cannot make). The bundle is run from an empty directory, far from the sources.
 */
import assert from "node:assert/strict";
import { TEST_PWSH } from "./support/harness.ts";
import { outputWithin } from "./support/deadline.ts";

const root = new URL("../", import.meta.url).pathname;

Deno.test("the bundle runs on its own: --version, and doctor starts a worker from the embedded host script", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-bundle-" });
  try {
    const bundle = await outputWithin(
      Deno.execPath(),
      {
        args: ["bundle", "--platform", "deno", "-o", `${dir}/svc.js`, `${root}main.ts`],
        cwd: root,
        stdout: "null",
        stderr: "piped",
      },
      "deno bundle",
      120_000,
    );
    assert.equal(bundle.code, 0, new TextDecoder().decode(bundle.stderr));
    const run = (args: string[]) =>
      outputWithin(Deno.execPath(), {
        args: ["run", "--allow-all", "--no-config", `${dir}/svc.js`, ...args],
        cwd: dir,
        env: { ...Deno.env.toObject(), SVC_INVOCATION_DIR: "", SVC_CACHE_DIR: `${dir}/cache` },
        stdout: "piped",
        stderr: "piped",
      }, `the bundle run with ${args.join(" ")}`);
    const version = await run(["--version"]);
    assert.equal(version.code, 0);
    assert.match(new TextDecoder().decode(version.stdout), /^\d+\.\d+\.\d+/);
    const doctor = await run(["doctor", "--format", "json", "--pwsh", TEST_PWSH]);
    const report = JSON.parse(new TextDecoder().decode(doctor.stdout));
    assert.equal(report.configuration.path, null, "the embedded default configuration is used");
    assert.ok(
      report.pool.workers.length > 0 && report.pool.workers.every((w: { ok: boolean }) => w.ok),
    );
    assert.ok(report.tools.some((t: { command: string }) => t.command === "Get-Date"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
