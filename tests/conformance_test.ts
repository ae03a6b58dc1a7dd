/**
 * The official MCP conformance suite (prerelease line with the 2026-07-28 scenarios) against svc over
 * HTTP, at both protocol versions svc serves: 2026-07-28 against a Stateless server (the default),
 * 2025-11-25 against a Stateful one, whose sessions its session scenarios need. The fixture module
 * provides the tools the suite calls by name (Test-SimpleText → test_simple_text, Test-ImageContent →
 * test_image_content). Failures must match the committed baseline of each version exactly, its
 * `server` list (scenarios that cannot apply to svc) and its `pending` list (features not served
 * yet) together: an unexpected failure or a stale entry fails this test.
 */
import assert from "node:assert/strict";
import { parse, stringify } from "yaml";
import { fixtureConfig, startHttpSvc } from "./support/harness.ts";
import { outputWithin } from "./support/deadline.ts";

// The package has no main module; its CLI (package.json "bin") sits in dist/ beside the resolved path.
const cli =
  new URL("./dist/index.js", import.meta.resolve("@modelcontextprotocol/conformance")).pathname;

/** One run of the suite: the version, the server's mode, and what must pass whatever the baseline. */
interface Run {
  version: "2026-07-28" | "2025-11-25";
  mode: "Stateless" | "Stateful";
  mustPass: string[];
}

const CONTENT = [
  "tools-call-simple-text",
  "tools-call-image",
  "tools-call-audio",
  "tools-call-embedded-resource",
  "tools-call-mixed-content",
  "tools-call-error",
  "tools-call-with-progress",
];

const RUNS: Run[] = [
  {
    version: "2026-07-28",
    mode: "Stateless",
    mustPass: [
      "tools-list",
      ...CONTENT,
      "http-header-validation",
      "dns-rebinding-protection",
      "input-required-result-basic-elicitation",
      // The answer comes with the retry's requestState: the user's, under svc's default policy.
      "input-required-result-non-tool-request",
    ],
  },
  {
    version: "2025-11-25",
    mode: "Stateful",
    mustPass: [
      "server-initialize",
      "server-session-lifecycle",
      "ping",
      "logging-set-level",
      "tools-list",
      ...CONTENT,
      "tools-call-with-logging",
      "tools-call-elicitation",
      "server-sse-multiple-streams",
      "dns-rebinding-protection",
    ],
  },
];

/** The baseline the CLI reads: the version's `server` and `pending` lists as one. */
async function baselineOf(version: string, dir: string): Promise<string> {
  const file = new URL(`./conformance/expected-failures.${version}.yml`, import.meta.url);
  const lists = parse(await Deno.readTextFile(file)) as { server?: string[]; pending?: string[] };
  const path = `${dir}/expected-failures.${version}.yml`;
  await Deno.writeTextFile(
    path,
    stringify({ server: [...(lists.server ?? []), ...(lists.pending ?? [])] }),
  );
  return path;
}

Deno.test("the MCP conformance suite passes every scenario that applies, at 2026-07-28 and 2025-11-25 (baseline: what cannot apply, and pending features)", async (t) => {
  // ignore-extra-params sends the answer with the call's first request: under svc's default only an
  // answer to a question svc asked counts (docs/security.md, "The human decides"), so the fixture
  // tool it calls lets its caller answer, as an operator's unattended automation would.
  const shell = {
    PromptCommands: [
      "Test-SimplePrompt",
      "Test-PromptWithArguments",
      "Test-PromptWithEmbeddedResource",
      "Test-PromptWithImage",
      "Test-InputRequiredResultPrompt",
    ],
    Resources: {
      "static-text": {
        Uri: "test://static-text",
        Command: "Get-FixtureStaticText",
        Description: "A static text",
      },
      "static-binary": {
        Uri: "test://static-binary",
        Command: "Get-FixtureStaticBinary",
        Description: "A PNG image",
        MimeType: "image/png",
      },
      template: {
        Uri: "test://template/{id}/data",
        Command: "Get-FixtureTemplateData",
        Description: "Data by id",
      },
    },
    CommandOverrides: {
      "Test-InputRequiredResultElicitation": { PromptsAnsweredBy: "Caller" },
    },
  };
  const servers = await Promise.all(RUNS.map(({ mode }) => {
    const config = fixtureConfig(shell);
    return startHttpSvc({
      config: { ...config, McpServer: { ...config.McpServer as object, HttpTransportMode: mode } },
    });
  }));
  const out = await Deno.makeTempDir({ prefix: "svc-conformance-" });
  try {
    for (const [index, run] of RUNS.entries()) {
      await t.step(`${run.version} against a ${run.mode} server`, async () => {
        const result = await outputWithin(
          Deno.execPath(),
          {
            args: [
              "run",
              "--allow-all",
              cli,
              "server",
              "--url",
              `${servers[index]!.url}/mcp`,
              "--suite",
              "all",
              "--spec-version",
              run.version,
              "--expected-failures",
              await baselineOf(run.version, out),
              "-o",
              `${out}/${run.version}`,
            ],
            stdout: "piped",
            stderr: "piped",
          },
          `the MCP conformance suite at ${run.version}`,
          300_000,
        );
        const text = new TextDecoder().decode(result.stdout) +
          new TextDecoder().decode(result.stderr);
        const summary = text.slice(text.indexOf("=== SUMMARY ==="));
        assert.equal(result.code, 0, summary);
        assert.match(text, /Baseline check passed: all failures are expected/);
        for (const scenario of run.mustPass) {
          assert.match(
            summary,
            new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed`),
            `${scenario} must pass`,
          );
        }
      });
    }
  } finally {
    await Promise.all(servers.map((svc) => svc[Symbol.asyncDispose]()));
    await Deno.remove(out, { recursive: true });
  }
});
