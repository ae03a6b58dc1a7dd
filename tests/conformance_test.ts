/**
 * The official MCP conformance suite (prerelease line with the 2026-07-28 scenarios) against svc over
 * HTTP. The fixture module provides the tools it calls by name (Test-SimpleText → test_simple_text,
 * Test-ErrorHandling → test_error_handling). Failures must match the committed baseline exactly:
 * an unexpected failure or a stale baseline entry fails this test.
 */
import assert from "node:assert/strict";
import { fixtureConfig, startHttpSvc } from "./support/harness.ts";
import { outputWithin } from "./support/deadline.ts";

const baseline =
  new URL("./conformance/expected-failures.2026-07-28.yml", import.meta.url).pathname;
// The package has no main module; its CLI (package.json "bin") sits in dist/ beside the resolved path.
const cli =
  new URL("./dist/index.js", import.meta.resolve("@modelcontextprotocol/conformance")).pathname;

Deno.test("the MCP conformance suite passes every protocol scenario (baseline: missing features only)", async () => {
  // ignore-extra-params sends the answer with the call's first request: under svc's default only an
  // answer to a question svc asked counts (docs/security.md, "The human decides"), so the fixture
  // tool it calls lets its caller answer, as an operator's unattended automation would.
  await using svc = await startHttpSvc({
    config: fixtureConfig({
      CommandOverrides: {
        "Test-InputRequiredResultElicitation": { PromptsAnsweredBy: "Caller" },
      },
    }),
  });
  const out = await Deno.makeTempDir({ prefix: "svc-conformance-" });
  try {
    const run = await outputWithin(
      Deno.execPath(),
      {
        args: [
          "run",
          "--allow-all",
          cli,
          "server",
          "--url",
          `${svc.url}/mcp`,
          "--suite",
          "all",
          "--spec-version",
          "2026-07-28",
          "--expected-failures",
          baseline,
          "-o",
          out,
        ],
        stdout: "piped",
        stderr: "piped",
      },
      "the MCP conformance suite",
      300_000,
    );
    const text = new TextDecoder().decode(run.stdout) + new TextDecoder().decode(run.stderr);
    const summary = text.slice(text.indexOf("=== SUMMARY ==="));
    assert.equal(run.code, 0, summary);
    assert.match(text, /Baseline check passed: all failures are expected/);
    for (
      const scenario of [
        "tools-list",
        "tools-call-simple-text",
        "tools-call-error",
        "http-header-validation",
        "dns-rebinding-protection",
      ]
    ) {
      assert.match(
        summary,
        new RegExp(`✓ ${scenario}: \\d+ passed, 0 failed`),
        `${scenario} must pass`,
      );
    }
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
