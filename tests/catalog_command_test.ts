import assert from "node:assert/strict";
import type { JsonSchema } from "../lib/tool_descriptor.ts";
import { commandTool, PARAMETER_SET_ARGUMENT } from "../lib/catalog_command.ts";
import { arg, commandMeta, paramMeta, toolOf } from "./support/descriptors.ts";

const maxResults = arg("_MaxResults", { type: "integer" }, { kind: "shaping" });
// PowerShell reports ByName first, but ById is the default set.
const command = commandMeta("Stop-Thing", [
  ["ByName", [paramMeta("Name", "System.String"), paramMeta("Force", "System.Boolean")]],
  ["ById", [paramMeta("Id", "System.Int32"), paramMeta("Force", "System.Boolean")]],
  ["ByBoth", [paramMeta("Name", "System.String"), paramMeta("Id", "System.Int32")]],
], { defaultParameterSet: "ById", module: "Things" });
const byName = toolOf("stop_thing_by_name", [
  arg("Name", { type: "string" }, { required: true }),
  arg("Force", { type: "boolean" }, { kind: "switch", required: true }),
  maxResults,
], { parameterSet: "ByName", command: "Stop-Thing" });
const byId = toolOf("stop_thing_by_id", [
  arg("Id", { type: "integer" }, { required: true }),
  arg("Force", { type: "boolean" }, { kind: "switch", required: true }),
  maxResults,
], { parameterSet: "ById", command: "Stop-Thing" });
const byBoth = toolOf("stop_thing_by_both", [
  arg("Name", { type: "string" }, { required: true }),
  arg("Id", { type: "integer" }),
  maxResults,
], { parameterSet: "ByBoth", command: "Stop-Thing" });

const tool = commandTool(command, "stop_thing", [byName, byId, byBoth]);

Deno.test("commandTool() puts the default set first, then PowerShell's order, each renamed to the tool", () => {
  assert.deepEqual(tool.parameterSetTools?.map((set) => set.parameterSet), [
    "ById",
    "ByName",
    "ByBoth",
  ]);
  assert.ok(tool.parameterSetTools?.every((set) => set.name === "stop_thing"));
  assert.equal(byId.name, "stop_thing_by_id", "the set tools given are not changed");
  assert.equal(tool.parameterSet, "ById, ByName, ByBoth");
  assert.equal(tool.name, "stop_thing");
  assert.equal(tool.command, "Stop-Thing");
  assert.equal(tool.module, "Things");
});

Deno.test("commandTool() takes every set's arguments once, then _ParameterSet, then the shaping ones", () => {
  assert.deepEqual(tool.parameters.map((p) => p.name), [
    "Id",
    "Force",
    "Name",
    PARAMETER_SET_ARGUMENT,
    "_MaxResults",
  ]);
  // No argument is required by all three sets, so none is required by the tool.
  assert.ok(tool.parameters.every((p) => !p.required));
  assert.equal(tool.inputSchema.required, undefined);
  assert.equal(tool.inputSchema.additionalProperties, false);
  assert.deepEqual(Object.keys(tool.inputSchema.properties as object), [
    "Id",
    "Force",
    "Name",
    "_ParameterSet",
    "_MaxResults",
  ]);
});

Deno.test("commandTool() requires an argument every set requires", () => {
  const both = commandTool(command, "stop_thing", [byName, byId]);
  assert.deepEqual(both.inputSchema.required, ["Force"]);
  assert.equal(both.parameters.find((p) => p.name === "Force")?.required, true);
});

Deno.test("commandTool() describes _ParameterSet as an enum of the sets, with what only each takes", () => {
  const selector = (tool.inputSchema.properties as Record<string, JsonSchema>)._ParameterSet!;
  assert.deepEqual(selector.enum, ["ById", "ByName", "ByBoth"]);
  assert.equal(selector.type, "string");
  assert.equal(
    selector.description,
    "Parameter set of Stop-Thing whose arguments this call uses; without it, svc picks the set the arguments fit. Sets, with what only they take: ById (requires Id, Force); ByName (requires Name, Force); ByBoth (requires Name; also Id).",
  );
  assert.equal(tool.parameters.find((p) => p.name === "_ParameterSet")?.kind, "set");
});

Deno.test("commandTool() says in the description how many sets there are and how to name one", () => {
  assert.equal(tool.descriptionSource, "generated");
  assert.match(
    tool.description,
    / Its arguments come in 3 parameter sets \(ById, ByName, ByBoth\); _ParameterSet names one\.$/,
  );
  // A description already at the cap is not cut to make room.
  const wordy = commandTool(
    { ...command, help: { synopsis: "x ".repeat(600), description: null, parameters: {} } },
    "stop_thing",
    [byName, byId],
  );
  assert.ok(wordy.description.length <= 1024);
  assert.doesNotMatch(wordy.description, /parameter sets/);
  assert.equal(wordy.descriptionSource, "synopsis");
});

Deno.test("commandTool() annotates from the command's verb", () => {
  assert.equal(tool.annotations.title, "Stop-Thing");
  assert.equal(tool.annotations.destructiveHint, true);
  assert.equal(tool.annotations.readOnlyHint, false);
});
