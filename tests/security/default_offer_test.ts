/**
 * What the default configuration offers (`appsettings.json`, which svc also embeds): `Get-Process`,
 * but not the command lines of the machine's processes, which often hold other programs' secrets
 * (tokens and passwords given as arguments). `CommandOverrides:Get-Process:AllowedProperties` lists
 * what a caller may ask for; a request for `CommandLine` is refused, and `_AllProperties` or a
 * wildcard never reaches it. A configuration without that entry offers every property.
 */
import assert from "node:assert/strict";
import { fixtureConfig, startSvc } from "../support/harness.ts";

const root = new URL("../../", import.meta.url).pathname;

type Result = {
  isError?: boolean;
  content: { type: string; text?: string }[];
  structuredContent?: unknown;
};

const text = (result: Result) => result.content.map((c) => c.text ?? "").join("\n");
const output = (result: Result) =>
  ((result.structuredContent ?? {}) as { output?: Record<string, unknown>[] }).output ?? [];

Deno.test("security: the default configuration gives no process's command line", async () => {
  const defaults = JSON.parse(await Deno.readTextFile(`${root}appsettings.json`));
  await using svc = await startSvc({ config: defaults });
  const asked = await svc.callTool("get_process_name", {
    Name: ["*"],
    _RequestedProperties: ["Id", "CommandLine"],
  }) as Result;
  assert.equal(asked.isError, true);
  assert.match(
    text(asked),
    /asks for 'CommandLine', which the configuration does not offer for 'Get-Process' \(CommandOverrides AllowedProperties\): it offers NPM\(K\), PM\(M\), WS\(M\), CPU\(s\), Id, Name,/,
  );
  for (
    const shaping of [{ _AllProperties: true }, { _RequestedProperties: ["*"] }, {
      _RequestedProperties: ["C*"],
    }]
  ) {
    const result = await svc.callTool("get_process_name", { Name: ["*"], ...shaping }) as Result;
    assert.notEqual(result.isError, true, text(result));
    const items = output(result);
    assert.ok(items.length > 0, JSON.stringify(shaping));
    assert.ok(items.every((item) => !("CommandLine" in item)), JSON.stringify(shaping));
    assert.ok(!text(result).includes("-NoProfile -NonInteractive -File"), JSON.stringify(shaping));
  }
  // What PowerShell shows stays shown.
  const shown = output(await svc.callTool("get_process_name", { Name: ["*"] }) as Result);
  assert.ok(shown.length > 0 && "ProcessName" in shown[0]!);
});

Deno.test("security: a configuration without AllowedProperties offers the command line it asks for", async () => {
  await using svc = await startSvc({ config: fixtureConfig({ Commands: ["Get-Process"] }) });
  const result = await svc.callTool("get_process_name", {
    Name: ["pwsh"],
    _RequestedProperties: ["CommandLine"],
  }) as Result;
  assert.notEqual(result.isError, true, text(result));
  assert.ok(output(result).some((item) => typeof item.CommandLine === "string"));
});
