import assert from "node:assert/strict";
import { bindArguments } from "../lib/arguments.ts";
import type { ToolDescriptor, ToolParameter } from "../lib/tool_descriptor.ts";
import { toCallToolResult } from "../lib/result.ts";
import { toolOf } from "./support/descriptors.ts";

function tool(parameters: ToolParameter[]): ToolDescriptor {
  return toolOf("test_tool", parameters);
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
  // A single value for a list is one value, not "item 0".
  assert.match(
    refused({ Name: "a", Ids: "abc" }),
    /'Ids' .*: expected an integer, got a string \(or an array of such values\)$/,
  );
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

Deno.test("bindArguments() refuses text with an unpaired surrogate, in a string, an array item or an object key", () => {
  const unpaired = /it holds text with an unpaired UTF-16 surrogate, which PowerShell cannot/;
  assert.match(
    refused({ Name: "a\ud800b" }),
    new RegExp(`^Invalid argument 'Name' .*${unpaired.source}`),
  );
  assert.match(refused({ Name: "a", Options: { ["k\udc00"]: 1 } }), unpaired);
  assert.match(refused({ Name: "a", Options: { k: ["x", "\ud83d"] } }), unpaired);
  // A pair is text like any other.
  assert.equal(bindArguments(t, { Name: "\ud83d\ude00" }).ok, true);
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

Deno.test("bindArguments() takes no arguments, null or undefined alike, when none is required", () => {
  const none = tool([]);
  for (const args of [undefined, null, {}]) {
    assert.deepEqual(bindArguments(none, args), {
      ok: true,
      value: { parameters: {}, credentials: [], shaping: {} },
    });
  }
  assert.equal(
    (bindArguments(none, { X: 1 }) as { message: string }).message,
    "Unknown argument 'X' for tool 'test_tool' (accepted arguments: none)",
  );
  for (const args of ["text", 3, true]) {
    assert.equal(
      (bindArguments(none, args) as { message: string }).message,
      "Arguments for tool 'test_tool' must be a JSON object",
    );
  }
});

Deno.test("bindArguments() counts a required argument given as null as missing", () => {
  assert.equal(refused({ Name: null }), "Missing required argument 'Name' for tool 'test_tool'");
});

Deno.test("bindArguments() keeps output-shaping arguments apart from PowerShell's", () => {
  const shaped = tool([
    { name: "Name", schema: { type: "string" }, required: false, kind: "value" },
    {
      name: "_MaxResults",
      schema: { type: "integer", minimum: 1 },
      required: false,
      kind: "shaping",
    },
    {
      name: "_RequestedProperties",
      schema: { type: "array", items: { type: "string" } },
      required: false,
      kind: "shaping",
    },
  ]);
  const result = bindArguments(shaped, {
    name: "x",
    _maxresults: "2",
    _RequestedProperties: "Id",
  });
  assert.deepEqual(result, {
    ok: true,
    value: {
      parameters: { Name: "x" },
      credentials: [],
      shaping: { _MaxResults: 2, _RequestedProperties: ["Id"] },
    },
  });
  assert.equal(
    (bindArguments(shaped, { _MaxResults: 0 }) as { message: string }).message,
    "Invalid argument '_MaxResults' for tool 'test_tool': the value is less than the minimum 1",
  );
});

Deno.test("bindArguments() tells integers from numbers and refuses what is not a finite number", () => {
  const numbers = tool([
    { name: "Int", schema: { type: "integer" }, required: false, kind: "value" },
    { name: "Real", schema: { type: "number", minimum: -1 }, required: false, kind: "value" },
  ]);
  const bind = (args: unknown) => {
    const result = bindArguments(numbers, args);
    return result.ok ? result.value.parameters : result.message;
  };
  assert.deepEqual(bind({ Int: " 7 ", Real: "1.5" }), { Int: 7, Real: 1.5 });
  assert.deepEqual(bind({ Real: -1 }), { Real: -1 });
  assert.equal(
    bind({ Int: 1.5 }),
    "Invalid argument 'Int' for tool 'test_tool': expected an integer, got a number",
  );
  assert.equal(
    bind({ Int: "1.5" }),
    "Invalid argument 'Int' for tool 'test_tool': expected an integer, got a string",
  );
  assert.equal(
    bind({ Real: "  " }),
    "Invalid argument 'Real' for tool 'test_tool': expected a number, got a string",
  );
  assert.equal(
    bind({ Real: "Infinity" }),
    "Invalid argument 'Real' for tool 'test_tool': expected a number, got a string",
  );
  assert.equal(
    bind({ Real: true }),
    "Invalid argument 'Real' for tool 'test_tool': expected a number, got true or false",
  );
  assert.equal(
    bind({ Real: -2 }),
    "Invalid argument 'Real' for tool 'test_tool': the value is less than the minimum -1",
  );
});

Deno.test("bindArguments() checks strings: numbers and booleans become text, lengths are checked, patterns ignore case", () => {
  const strings = tool([
    {
      name: "Text",
      schema: { type: "string", minLength: 2, maxLength: 4 },
      required: false,
      kind: "value",
    },
    { name: "Code", schema: { type: "string", pattern: "^ab+$" }, required: false, kind: "value" },
    {
      name: "DotNet",
      schema: { type: "string", pattern: "(?i)^x$" },
      required: false,
      kind: "value",
    },
  ]);
  const bind = (args: unknown) => {
    const result = bindArguments(strings, args);
    return result.ok ? result.value.parameters : result.message;
  };
  assert.deepEqual(bind({ Text: 12 }), { Text: "12" });
  assert.deepEqual(bind({ Text: true }), { Text: "true" });
  assert.equal(
    bind({ Text: "a" }),
    "Invalid argument 'Text' for tool 'test_tool': the value is shorter than 2 character(s)",
  );
  assert.equal(
    bind({ Text: "abcde" }),
    "Invalid argument 'Text' for tool 'test_tool': the value is longer than 4 character(s)",
  );
  assert.equal(
    bind({ Text: ["ab"] }),
    "Invalid argument 'Text' for tool 'test_tool': expected a string, got an array",
  );
  assert.deepEqual(bind({ Code: "ABB" }), { Code: "ABB" }, "ValidatePattern ignores case");
  assert.equal(
    bind({ Code: "ba" }),
    "Invalid argument 'Code' for tool 'test_tool': the value does not match the pattern ^ab+$",
  );
  // A pattern only .NET understands is left for PowerShell to check.
  assert.deepEqual(bind({ DotNet: "anything" }), { DotNet: "anything" });
});

Deno.test("bindArguments() never quotes a refused value: it may be a secret", () => {
  const message = refused({ Name: "a", Count: "9".repeat(100) + "x" });
  assert.equal(
    message,
    "Invalid argument 'Count' for tool 'test_tool': expected an integer, got a string",
  );
  assert.doesNotMatch(message, /999/);
});

Deno.test("bindArguments() checks nested values and says where: item index, property name", () => {
  const nested = tool([
    {
      name: "Levels",
      schema: { type: "array", items: { type: "string", enum: ["Low", "High"] }, minItems: 1 },
      required: false,
      kind: "value",
    },
    {
      name: "Point",
      schema: {
        type: "object",
        properties: { X: { type: "integer" }, Tags: { type: "array", items: { type: "string" } } },
        additionalProperties: false,
      },
      required: false,
      kind: "value",
    },
    {
      name: "Loose",
      schema: { type: "object", properties: { X: { type: "integer" } } },
      required: false,
      kind: "value",
    },
  ]);
  const bind = (args: unknown) => {
    const result = bindArguments(nested, args);
    return result.ok ? result.value.parameters : result.message;
  };
  assert.deepEqual(bind({ Levels: ["low", "HIGH"] }), { Levels: ["Low", "High"] });
  assert.equal(
    bind({ Levels: ["Low", "Mid"] }),
    "Invalid argument 'Levels' for tool 'test_tool': item 1: the value is not one of Low, High",
  );
  assert.equal(
    bind({ Levels: [] }),
    "Invalid argument 'Levels' for tool 'test_tool': expected at least 1 item(s), got 0",
  );
  assert.deepEqual(bind({ Point: { x: "3", tags: "a" } }), { Point: { X: 3, Tags: ["a"] } });
  assert.equal(
    bind({ Point: { X: "three" } }),
    "Invalid argument 'Point' for tool 'test_tool': property 'X': expected an integer, got a string",
  );
  assert.equal(
    bind({ Point: { Z: 1 } }),
    "Invalid argument 'Point' for tool 'test_tool': unknown property 'Z'",
  );
  assert.deepEqual(bind({ Loose: { Z: 1, x: 2 } }), { Loose: { Z: 1, X: 2 } });
});
