import assert from "node:assert/strict";
import type { ToolDescriptor } from "../lib/tool_descriptor.ts";
import { chooseParameterSet } from "../lib/parameter_set.ts";
import { arg, toolOf } from "./support/descriptors.ts";

const maxResults = arg("_MaxResults", { type: "integer" }, { kind: "shaping" });
const byPath = toolOf("get_thing", [
  arg("Path", { type: "string" }, { required: true }),
  arg("Recurse", { type: "boolean" }, { kind: "switch" }),
  maxResults,
], { parameterSet: "ByPath" });
const byId = toolOf("get_thing", [
  arg("Id", { type: "integer" }, { required: true }),
  arg("Recurse", { type: "boolean" }, { kind: "switch" }),
  maxResults,
], { parameterSet: "ById" });
const all = toolOf("get_thing", [
  arg("Path"),
  arg("Recurse", { type: "boolean" }, { kind: "switch" }),
  arg("Id", { type: "integer" }),
  arg("_ParameterSet", { type: "string" }, { kind: "set" }),
  maxResults,
], { parameterSet: "ByPath, ById", parameterSetTools: [byPath, byId] });

function chosen(args: unknown): string {
  const choice = chooseParameterSet(all, args);
  return choice.ok ? choice.tool.parameterSet : `refused: ${choice.message}`;
}

Deno.test("chooseParameterSet() leaves a tool of one parameter set and its arguments alone", () => {
  const single = toolOf("get_date", [arg("Format")]);
  const args = { Format: "o", _ParameterSet: "Whatever" };
  const choice = chooseParameterSet(single, args);
  assert.deepEqual(choice, { ok: true, tool: single, args });
  const empty: ToolDescriptor = { ...single, parameterSetTools: [] };
  assert.equal((chooseParameterSet(empty, {}) as { tool: ToolDescriptor }).tool, empty);
});

Deno.test("chooseParameterSet() hands arguments that are not an object to the default set, for bindArguments to refuse", () => {
  for (const args of [[1], "text", 3]) {
    const choice = chooseParameterSet(all, args);
    assert.deepEqual(choice, { ok: true, tool: byPath, args });
  }
});

Deno.test("chooseParameterSet() takes the first set, default first, whose required arguments are given", () => {
  assert.equal(chosen({ Path: "/tmp" }), "ByPath");
  assert.equal(chosen({ Id: 3 }), "ById");
  assert.equal(chosen({ path: "/tmp", RECURSE: true }), "ByPath", "names in any letter case");
  // Recurse is in both sets; only ById is complete.
  assert.equal(chosen({ Id: 3, Recurse: true }), "ById");
});

Deno.test("chooseParameterSet() ignores null arguments and output-shaping arguments when choosing, and passes them on", () => {
  assert.equal(chosen({ Id: 3, Path: null }), "ById");
  const choice = chooseParameterSet(all, { Id: 3, _MaxResults: 5, Path: undefined });
  assert.ok(choice.ok);
  assert.equal(choice.tool, byId);
  assert.deepEqual(choice.args, { Id: 3, _MaxResults: 5, Path: undefined });
});

Deno.test("chooseParameterSet() reads _ParameterSet in any letter case, removes it, and lets null mean absent", () => {
  const choice = chooseParameterSet(all, { _parameterset: "byid", Id: 1 });
  assert.ok(choice.ok);
  assert.equal(choice.tool, byId);
  assert.deepEqual(choice.args, { Id: 1 });
  assert.equal(chosen({ _ParameterSet: null, Id: 1 }), "ById");
  // A named set is taken even when incomplete: bindArguments then names what is missing.
  assert.equal(chosen({ _ParameterSet: "ById" }), "ById");
});

Deno.test("chooseParameterSet() quotes a _ParameterSet that names no set, and lists the sets", () => {
  assert.equal(
    chosen({ _ParameterSet: 2 }),
    "refused: Invalid argument '_ParameterSet' for tool 'get_thing': 2 is not one of ByPath, ById",
  );
  assert.equal(
    chosen({ _ParameterSet: "ByName" }),
    `refused: Invalid argument '_ParameterSet' for tool 'get_thing': "ByName" is not one of ByPath, ById`,
  );
});

Deno.test("chooseParameterSet() names an unknown argument before anything else, with the tool's arguments", () => {
  assert.equal(
    chosen({ _ParameterSet: "Nope", Colour: "red" }),
    "refused: Unknown argument 'Colour' for tool 'get_thing' (accepted arguments: Path, Recurse, Id, _ParameterSet, _MaxResults)",
  );
});

Deno.test("chooseParameterSet() says which sets hold an argument that does not fit the named set", () => {
  assert.equal(
    chosen({ _ParameterSet: "ById", Path: "/tmp" }),
    "refused: Argument 'Path' of tool 'get_thing' is not in parameter set 'ById'; it is in ByPath",
  );
});

Deno.test("chooseParameterSet() explains arguments no set takes together, and what incomplete sets require", () => {
  assert.equal(
    chosen({ Path: "/tmp", Id: 1 }),
    "refused: No parameter set of tool 'get_thing' takes Path, Id together: Path is in ByPath; Id is in ById",
  );
  assert.equal(
    chosen({ Recurse: true }),
    "refused: Tool 'get_thing' needs more arguments: parameter set 'ByPath' requires Path; parameter set 'ById' requires Id (_ParameterSet names the set)",
  );
  assert.equal(
    chosen({}),
    "refused: Tool 'get_thing' needs more arguments: parameter set 'ByPath' requires Path; parameter set 'ById' requires Id (_ParameterSet names the set)",
  );
});
