/**
 * Tool lists every client accepts: tools sorted by name, every schema in the portable subset
 * (`lib/tool_portability.ts`, `docs/tool-schemas.md`), and enums without noise. The rules are
 * unit-tested here; the default configuration's catalog is checked through a real MCP client on
 * real PowerShell, as a user's first `tools/list` gets it.
 */
import assert from "node:assert/strict";
import { bindArguments } from "../lib/arguments.ts";
import { buildTools, toolName } from "../lib/catalog.ts";
import { toMcpTool } from "../lib/mcp.ts";
import { ENUM_CAP, portabilityFindings, PORTABLE_TOOL_NAME } from "../lib/tool_portability.ts";
import type { JsonSchema } from "../lib/tool_descriptor.ts";
import { cmdletMeta } from "./support/cmdlet_data.ts";
import { commandMeta, paramMeta } from "./support/descriptors.ts";
import { type CallResult, startSvc } from "./support/harness.ts";

/** What `toMcpTool` reads of the shell settings: the default result cap. */
const SHELL = {
  maxResultBytes: 24_576,
  commandOverrides: {},
  promptsAnsweredBy: "User",
  confirmPreference: "High",
  userInputTimeoutMs: 120_000,
} as const;

Deno.test("portabilityFindings() names each schema construct some client refuses, and nothing in a portable list", () => {
  const portable = {
    name: "get_a",
    inputSchema: {
      type: "object",
      properties: {
        When: { type: "string", format: "date-time" },
        Names: { type: "array", items: { type: "string", enum: ["x", "y"] } },
        Any: { anyOf: [{ type: "string" }, { type: "object", properties: {} }] },
      },
    },
    // Output schemas only validate structuredContent: free-form arrays and objects are fine there.
    outputSchema: {
      type: "object",
      properties: { output: { type: "array" }, notes: { type: "object" } },
    },
  };
  assert.deepEqual(portabilityFindings([portable]), []);
  const findings = portabilityFindings([
    {
      name: "z_last",
      inputSchema: { type: "object", properties: {} },
      outputSchema: { type: "object", properties: { output: { type: "array", items: {} } } },
    },
    {
      name: "a-tool.with.dots",
      inputSchema: {
        type: "object",
        anyOf: [],
        properties: {
          Ref: { $ref: "#/$defs/x" },
          Untyped: { description: "anything" },
          List: { type: "array" },
          Map: { type: "object" },
          Both: { type: "string", anyOf: [{ type: "string" }] },
          Id: { type: "string", format: "uuid" },
          Culture: { type: "string", enum: ["", ...Array.from({ length: 70 }, (_, i) => `c${i}`)] },
        },
      },
    },
    { name: "x".repeat(65), inputSchema: { type: "string" } },
  ]);
  const expected = [
    /not listed in name order: 'z_last' comes before 'a-tool.with.dots'/,
    /z_last output\.output\[\]: says no type/,
    /Tool name 'a-tool\.with\.dots' does not match/,
    /Input schema of tool 'a-tool\.with\.dots' has 'anyOf' at its top/,
    /a-tool\.with\.dots input: has 'type' beside 'anyOf'/,
    /a-tool\.with\.dots input\.Ref: has '\$ref'/,
    /input\.Untyped: says no type/,
    /input\.List: is an array without 'items'/,
    /input\.Map: is an object without 'properties'/,
    /input\.Both: has 'type' beside 'anyOf'/,
    /input\.Id: has format 'uuid'/,
    /input\.Culture: has an enum member that is not a non-empty string/,
    new RegExp(`input\\.Culture: has an enum of 71 members \\(at most ${ENUM_CAP}\\)`),
    /Tool name 'x{65}' does not match/,
    /Input schema of tool 'x{65}' is not of type object/,
  ];
  for (const pattern of expected) {
    assert.ok(findings.some((f) => pattern.test(f)), `${pattern} in:\n${findings.join("\n")}`);
  }
  assert.equal(findings.length, expected.length, findings.join("\n"));
});

Deno.test("tool names are cut to 64 characters with a digest of the whole, so two long names stay apart", () => {
  const long = "Get-" + "VeryLong".repeat(6);
  const a = toolName(long, "ByIdentifierWithDetails");
  const b = toolName(long, "ByIdentifierWithSummary");
  for (const name of [a, b]) assert.match(name, PORTABLE_TOOL_NAME);
  assert.equal(a.length, 64);
  assert.notEqual(a, b);
  assert.equal(toolName("Get-Date", null), "get_date", "short names are untouched");
});

Deno.test("a huge enum or one with an empty member is not listed in the schema, yet svc still checks the value", () => {
  const cultures = ["", ...Array.from({ length: 200 }, (_, i) => `c${i}`)];
  const meta = commandMeta("Get-Culture", [["Name", [
    paramMeta("Name", "System.String[]", { validateSet: cultures }),
    paramMeta("Mode", "System.String", { validateSet: ["", "Fast", "Slow"] }),
  ]]]);
  const [tool] = buildTools([meta], { psVersion: "7.6.9" }).tools;
  const properties = tool!.inputSchema.properties as Record<string, JsonSchema>;
  assert.deepEqual(properties.Name!.items, { type: "string" }, "no 201-member enum");
  assert.equal(
    properties.Name!.description,
    "Each item is one of 200 values (or an empty string), such as c0, c1, c2, c3, c4, c5, c6, c7",
  );
  assert.deepEqual(properties.Mode!.enum, ["Fast", "Slow"], "no empty member");
  assert.deepEqual(portabilityFindings([toMcpTool(tool!, SHELL)]), []);
  // The generated tool description lists no values of a parameter whose schema lists none.
  assert.doesNotMatch(tool!.description, /Name is one of/);

  const bind = (args: Record<string, unknown>) => bindArguments(tool!, args);
  assert.deepEqual(bind({ Name: ["C150", ""], Mode: "" }), {
    ok: true,
    value: { parameters: { Name: ["c150", ""], Mode: "" }, credentials: [], shaping: {} },
  });
  const refused = bind({ Name: ["nope"] });
  assert.ok(!refused.ok);
  assert.equal(
    refused.message,
    "Invalid argument 'Name' for tool 'get_culture_name': item 0: the value is not one of the 201 accepted values (c0, c1, c2, c3, c4, c5, c6, c7, …)",
  );
});

Deno.test("the catalog of recorded Get-Date and Get-Process metadata is portable in either granularity", () => {
  for (const granularity of ["ParameterSet", "Command"] as const) {
    const { tools } = buildTools([cmdletMeta("Get-Process"), cmdletMeta("Get-Date")], {
      psVersion: "7.6.9",
      granularity,
    });
    assert.deepEqual(portabilityFindings(tools.map((t) => toMcpTool(t, SHELL))), [], granularity);
  }
});

function textOf(result: CallResult): string {
  return result.content.map((c) => c.text ?? "").join("\n");
}

Deno.test("the default configuration's tools/list, through an MCP client on real PowerShell: sorted, portable, small", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("../appsettings.json", import.meta.url)),
  );
  delete config.$schema;
  await using svc = await startSvc({ config });
  const listed = await svc.listTools();
  const names = listed.tools.map((tool) => tool.name);
  assert.deepEqual(names, [...names].sort(), "sorted by name");
  assert.deepEqual(portabilityFindings(listed.tools), []);
  // Measured on pwsh 7.6.9: 18 tools, 46,653 bytes before (Get-Culture's 806 names alone 7.5 KB),
  // 40,020 after (docs/tool-schemas.md).
  const bytes = new TextEncoder().encode(JSON.stringify(listed)).length;
  assert.ok(bytes < 42_000, `tools/list is ${bytes} bytes`);
  const culture = listed.tools.find((tool) => tool.name === "get_culture_name");
  assert.ok(culture, names.join(", "));
  const size = JSON.stringify(culture.inputSchema).length;
  assert.ok(size < 1_500, `get_culture_name's input schema is ${size} bytes`);
  assert.doesNotMatch(culture.description ?? "", /one of ,/);

  // Names the schema no longer lists are still accepted, and checked by svc before any worker runs.
  const german = await svc.callTool("get_culture_name", { Name: ["de-DE"] });
  assert.ok(!german.isError, textOf(german));
  assert.equal((german.structuredContent?.output as { Name: string }[])[0]?.Name, "de-DE");
  const wrong = await svc.callTool("get_culture_name", { Name: ["xx-NOPE"] });
  assert.ok(wrong.isError);
  assert.match(textOf(wrong), /is not one of the \d+ accepted values \(af, af-NA/);
});
