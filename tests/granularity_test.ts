/**
 * `ShellConfiguration:ToolGranularity: Command` (issue 13): one tool per command whose flat schema
 * covers every parameter set, the set chosen from the arguments or `_ParameterSet`, end to end
 * through the SDK client on real pwsh.
 */
import assert from "node:assert/strict";
import { type CallResult, fixtureConfig, outputOf, startSvc } from "./support/harness.ts";

const textOf = (result: CallResult) => result.content.map((c) => c.text ?? "").join("\n");

Deno.test("ToolGranularity Command: one tool per command, its parameter set chosen per call", async (t) => {
  await using svc = await startSvc({ config: fixtureConfig({ ToolGranularity: "Command" }) });
  const { tools } = await svc.listTools();

  await t.step("one flat tool per command, every set's arguments in it", () => {
    const names = tools.map((tool) => tool.name);
    assert.ok(names.includes("get_fixture_item"), names.join(", "));
    assert.ok(names.includes("get_date"), names.join(", "));
    assert.ok(!names.some((name) => name.startsWith("get_fixture_item_")), names.join(", "));
    const commands = new Set(tools.map((tool) => tool.title));
    assert.equal(commands.size, tools.length, "no command has two tools");
    for (const tool of tools) {
      for (const keyword of ["oneOf", "anyOf", "allOf"]) {
        assert.ok(!(keyword in tool.inputSchema), `${tool.name} has no top-level ${keyword}`);
      }
    }
    const item = tools.find((tool) => tool.name === "get_fixture_item")!;
    const properties = item.inputSchema.properties as Record<string, { enum?: string[] }>;
    assert.deepEqual(
      Object.keys(properties).slice(0, 4),
      ["Name", "Kind", "Id", "_ParameterSet"],
    );
    assert.deepEqual(properties["_ParameterSet"]?.enum, ["ByName", "ById"]);
    assert.equal(item.inputSchema.required, undefined);
  });

  await t.step("the arguments choose the set, as they would at a prompt", async () => {
    const byName = await svc.callTool("get_fixture_item", { Name: ["a", "b"] });
    assert.equal(byName.isError, undefined, textOf(byName));
    assert.deepEqual(outputOf(byName), [
      { Name: "a", Id: 1, Kind: "File" },
      { Name: "b", Id: 2, Kind: "File" },
    ]);
    const byId = await svc.callTool("get_fixture_item", { Id: [7], Kind: "Folder" });
    assert.deepEqual(outputOf(byId), [{ Name: "item7", Id: 7, Kind: "Folder" }]);
    const named = await svc.callTool("get_fixture_item", { _ParameterSet: "ById", Id: [3] });
    assert.deepEqual(outputOf(named), [{ Name: "item3", Id: 3, Kind: "File" }]);
    const date = await svc.callTool("get_date", { UnixTimeSeconds: 0, AsUTC: true });
    assert.equal(date.isError, undefined, textOf(date));
  });

  await t.step("arguments that fit no set are refused before PowerShell runs", async () => {
    const incomplete = await svc.callTool("get_fixture_item", { Kind: "File" });
    assert.equal(incomplete.isError, true);
    assert.match(
      textOf(incomplete),
      /needs more arguments: parameter set 'ByName' requires Name; parameter set 'ById' requires Id/,
    );
    const mixed = await svc.callTool("get_fixture_item", { Name: ["a"], Id: [1] });
    assert.equal(mixed.isError, true);
    assert.match(textOf(mixed), /No parameter set of tool 'get_fixture_item' takes Name, Id/);
    const wrongSet = await svc.callTool("get_fixture_item", { _ParameterSet: "ById", Name: ["a"] });
    assert.equal(wrongSet.isError, true);
    assert.match(
      textOf(wrongSet),
      /'Name' of tool 'get_fixture_item' is not in parameter set 'ById'/,
    );
    const missing = await svc.callTool("get_fixture_item", { _ParameterSet: "ById" });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /Missing required argument 'Id' for tool 'get_fixture_item'/);
  });
});
