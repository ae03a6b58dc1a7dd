import assert from "node:assert/strict";
import { bindArguments } from "../lib/arguments.ts";
import type { ToolDescriptor, ToolParameter } from "../lib/catalog.ts";
import { toCallToolResult } from "../lib/result.ts";

function tool(parameters: ToolParameter[]): ToolDescriptor {
  return {
    name: "test_tool",
    command: "Test-Tool",
    parameterSet: "__AllParameterSets",
    module: null,
    description: "",
    descriptionSource: "name",
    inputSchema: { type: "object" },
    annotations: {
      title: "Test-Tool",
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: true,
    },
    parameters,
  };
}

const t = tool([
  { name: "Name", schema: { type: "string" }, required: true, kind: "value" },
  {
    name: "Count",
    schema: { type: "integer", minimum: 1, maximum: 10 },
    required: false,
    kind: "value",
  },
  {
    name: "Ids",
    schema: { type: "array", items: { type: "integer" }, maxItems: 2 },
    required: false,
    kind: "value",
  },
  {
    name: "Mode",
    schema: { type: "string", enum: ["Fast", "Slow"] },
    required: false,
    kind: "value",
  },
  {
    name: "Code",
    schema: { type: "string", pattern: "^[A-Z]+$", maxLength: 5 },
    required: false,
    kind: "value",
  },
  { name: "Force", schema: { type: "boolean" }, required: false, kind: "switch" },
  { name: "Options", schema: { type: "object" }, required: false, kind: "value" },
  {
    name: "Credential",
    schema: {
      type: "object",
      properties: { UserName: { type: "string" }, Password: { type: "string" } },
      required: ["UserName", "Password"],
      additionalProperties: false,
    },
    required: false,
    kind: "credential",
  },
]);

function refused(args: unknown): string {
  const result = bindArguments(t, args);
  assert.equal(result.ok, false, `expected ${JSON.stringify(args)} to be refused`);
  return (result as { message: string }).message;
}

Deno.test("bindArguments() names a missing mandatory argument", () => {
  assert.equal(refused({}), "Missing required argument 'Name' for tool 'test_tool'");
});

Deno.test("bindArguments() names the argument of a wrong type, range, set, pattern or count", () => {
  assert.match(
    refused({ Name: "a", Count: "many" }),
    /^Invalid argument 'Count' .*expected an integer, got a string/,
  );
  assert.match(refused({ Name: "a", Count: 11 }), /'Count'.*greater than the maximum 10/);
  assert.match(refused({ Name: "a", Ids: ["x"] }), /'Ids'.*item 0: expected an integer/);
  assert.match(refused({ Name: "a", Ids: [1, 2, 3] }), /'Ids'.*at most 2/);
  assert.match(refused({ Name: "a", Mode: "Medium" }), /'Mode'.*not one of Fast, Slow/);
  assert.match(refused({ Name: "a", Code: "a1" }), /'Code'.*does not match/);
  assert.match(refused({ Name: "a", Force: "yes" }), /'Force'.*true or false/);
  assert.match(refused({ Name: "a", Options: [1] }), /'Options'.*expected an object/);
  assert.match(
    refused({ Name: "a", Credential: { UserName: "u" } }),
    /'Credential'.*'Password' is required/,
  );
  assert.match(refused({ Name: "a", Bogus: 1 }), /Unknown argument 'Bogus'.*Name, Count/);
  assert.match(refused([1]), /must be a JSON object/);
});

Deno.test("bindArguments() treats a null optional argument as absent", () => {
  const result = bindArguments(t, { Name: "x", Count: null });
  assert.ok(result.ok);
  assert.deepEqual(result.value.parameters, { Name: "x" });
});

Deno.test("bindArguments() converts leniently where PowerShell would and collects credential names", () => {
  const result = bindArguments(t, {
    name: "x",
    Count: "3",
    Ids: 7,
    Mode: "fast",
    Code: "abc",
    Force: true,
    Options: { a: 1 },
    Credential: { username: "alice", Password: "pw" },
  });
  assert.ok(result.ok, JSON.stringify(result));
  assert.deepEqual(result.value, {
    parameters: {
      Name: "x",
      Count: 3,
      Ids: [7],
      Mode: "Fast",
      Code: "abc",
      Force: true,
      Options: { a: 1 },
      Credential: { UserName: "alice", Password: "pw" },
    },
    credentials: ["Credential"],
    shaping: {},
  });
});

Deno.test("toCallToolResult() caps output at MaxResultBytes with a notice and keeps whole items", () => {
  const big = "é".repeat(3000);
  const result = toCallToolResult(
    t,
    {
      result: {
        output: ["small", big],
        errors: [],
        warnings: ["careful"],
        verbose: [],
        debug: [],
        information: [],
        hadErrors: false,
        stopped: false,
        durationMs: 1,
      },
      interrupted: null,
    },
    { maxResultBytes: 2048, timeoutMs: 1000 },
  );
  assert.equal(result.isError, undefined);
  const text = (result.content[0] as { text: string }).text;
  assert.ok(new TextEncoder().encode(text).length <= 2048);
  assert.deepEqual(JSON.parse(text.split("\n[svc:")[0]!), ["small"]);
  assert.match(
    text,
    /output truncated: 6012 bytes exceed ShellConfiguration:MaxResultBytes \(2048\); the first 1 of 2 item\(s\) are kept whole, 1 dropped/,
  );
  assert.deepEqual((result.structuredContent as Record<string, unknown>).output, ["small"]);
  assert.deepEqual((result.structuredContent as Record<string, unknown>).warnings, ["careful"]);
  assert.equal((result.content[1] as { text: string }).text, "WARNING: careful");
});
