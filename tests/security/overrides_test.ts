/**
 * One override rule, per field: a tool-name key and a command-name key in `CommandOverrides` both
 * apply, the tool-name key winning field by field; with `ToolGranularity: Command` each parameter
 * set is authorized with its own set's overrides, in `tools/list` (the schema offers only the sets
 * a caller may use) and in calls. PoshMcp's `FunctionOverrides` and `FunctionNames` mean what they
 * mean in PoshMcp, with a deprecation warning naming svc's key.
 */
import assert from "node:assert/strict";
import { post, startHttpSvc, TEST_PWSH } from "../support/harness.ts";
import { ADMIN_KEY, READER_KEY, twoKeyConfig } from "./support.ts";

const READER = READER_KEY;
const ADMIN = ADMIN_KEY;
const config = twoKeyConfig;

interface ListedTool {
  name: string;
  inputSchema: { properties: Record<string, { enum?: string[] }> };
}

async function toolsOf(url: string, key: string): Promise<Map<string, ListedTool>> {
  const response = await fetch(`${url}/tools`, { headers: { "x-api-key": key } });
  assert.equal(response.status, 200);
  const body = await response.json() as { tools: ListedTool[] };
  return new Map(body.tools.map((t) => [t.name, t]));
}

async function call(url: string, key: string, tool: string, args: Record<string, unknown>) {
  return await post(`${url}/call`, { tool, arguments: args }, { "x-api-key": key });
}

Deno.test(
  "security: a tool-name override without RequiredRoles keeps the command's roles",
  async () => {
    await using svc = await startHttpSvc({
      pwsh: TEST_PWSH,
      config: config({
        Commands: ["Get-Process", "Get-Date"],
        CommandOverrides: {
          "Get-Process": { RequiredRoles: ["admin"] },
          "get_process_id": { ToolCallTimeout: "00:00:30" },
        },
      }),
    });
    const reader = await toolsOf(svc.url, READER);
    assert.ok(reader.has("get_date_date_and_format"), [...reader.keys()].join(", "));
    assert.ok(!reader.has("get_process_id"), "the reader sees the admin-only set");
    assert.ok(!reader.has("get_process_name"));
    assert.notEqual(
      (await call(svc.url, READER, "get_process_id", { Id: [Deno.pid] })).status,
      200,
    );
    assert.ok((await toolsOf(svc.url, ADMIN)).has("get_process_id"));
    assert.equal((await call(svc.url, ADMIN, "get_process_id", { Id: [Deno.pid] })).status, 200);
  },
);

Deno.test(
  "security: in Command granularity each parameter set is authorized with its own overrides",
  async () => {
    await using svc = await startHttpSvc({
      pwsh: TEST_PWSH,
      config: config({
        Commands: ["Get-Process", "Get-Date"],
        ToolGranularity: "Command",
        CommandOverrides: {
          // The form docs/security.md documents: a parameter set's tool name.
          "get_process_id": { RequiredRoles: ["admin"] },
          "Get-Date": { RequiredRoles: ["admin"] },
        },
      }),
    });
    const reader = await toolsOf(svc.url, READER);
    assert.ok(!reader.has("get_date"), "every set of Get-Date is admin-only");
    const sets = reader.get("get_process")?.inputSchema.properties["_ParameterSet"]?.enum ?? [];
    assert.ok(sets.includes("Name"), sets.join(", "));
    assert.ok(!sets.includes("Id"), "the schema offers the reader the admin-only set");
    const forced = await call(svc.url, READER, "get_process", {
      Id: [Deno.pid],
      _ParameterSet: "Id",
    });
    assert.notEqual(forced.status, 200, JSON.stringify(forced.body));
    const guessed = await call(svc.url, READER, "get_process", { Id: [Deno.pid] });
    assert.notEqual(guessed.status, 200, JSON.stringify(guessed.body));
    const byName = await call(svc.url, READER, "get_process", { Name: ["deno"] });
    assert.equal(byName.status, 200, JSON.stringify(byName.body));

    const admin = await toolsOf(svc.url, ADMIN);
    assert.ok(
      admin.get("get_process")?.inputSchema.properties["_ParameterSet"]?.enum?.includes("Id"),
    );
    const allowed = await call(svc.url, ADMIN, "get_process", {
      Id: [Deno.pid],
      _ParameterSet: "Id",
    });
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
  },
);

Deno.test(
  "security: PoshMcp's FunctionOverrides and FunctionNames apply, with a warning",
  async () => {
    await using svc = await startHttpSvc({
      pwsh: TEST_PWSH,
      config: config({
        FunctionNames: ["Get-Date", "Get-Process"],
        FunctionOverrides: { "Get-Process": { RequiredRoles: ["admin"] } },
      }),
    });
    const reader = await toolsOf(svc.url, READER);
    assert.ok(reader.has("get_date_date_and_format"), "FunctionNames offers its commands");
    assert.ok(!reader.has("get_process_id"), "FunctionOverrides' roles apply");
    assert.ok((await toolsOf(svc.url, ADMIN)).has("get_process_id"));
    assert.match(
      svc.stderr(),
      /'ShellConfiguration:FunctionOverrides' is deprecated.*'ShellConfiguration:CommandOverrides'/,
    );
    assert.match(
      svc.stderr(),
      /'ShellConfiguration:FunctionNames' is deprecated.*'ShellConfiguration:Commands'/,
    );
  },
);
