/**
 * A `CommandOverrides` key applies whatever name it gives the command: a module-qualified name
 * (also when `Commands` names the command the same way), a built-in alias, or an alias the startup
 * script set. On the first review such keys were ignored without a word, and the reader called the
 * admin-only command. A key that names nothing offered is said in a warning.
 */
import assert from "node:assert/strict";
import { post, startHttpSvc, TEST_PWSH } from "../support/harness.ts";
import { ADMIN_KEY, READER_KEY, twoKeyConfig } from "./support.ts";

const READER = READER_KEY;
const ADMIN = ADMIN_KEY;
const config = twoKeyConfig;

async function toolNames(url: string, key: string): Promise<string[]> {
  const response = await fetch(`${url}/tools`, { headers: { "x-api-key": key } });
  assert.equal(response.status, 200);
  return ((await response.json()) as { tools: { name: string }[] }).tools.map((t) => t.name);
}

const ROUTES: [string, Record<string, unknown>][] = [
  ["a module-qualified key", {
    Commands: ["Get-Process", "Get-Date"],
    CommandOverrides: {
      "Microsoft.PowerShell.Management\\Get-Process": { RequiredRoles: ["admin"] },
    },
  }],
  ["a module-qualified key, as Commands names it", {
    Commands: ["Microsoft.PowerShell.Management\\Get-Process", "Get-Date"],
    CommandOverrides: {
      "microsoft.powershell.management\\get-process": { RequiredRoles: ["admin"] },
    },
  }],
  ["a built-in alias as key", {
    Commands: ["Get-Process", "Get-Date"],
    CommandOverrides: { "GPS": { RequiredRoles: ["admin"] } },
  }],
  ["an alias of the startup script as key", {
    Commands: ["gps", "Get-Date"],
    Environment: { StartupScript: "Set-Alias -Name procs -Value gps -Scope Global" },
    CommandOverrides: { "procs": { RequiredRoles: ["admin"] } },
  }],
];

for (const [route, shell] of ROUTES) {
  Deno.test(`security: ${route} in CommandOverrides keeps its RequiredRoles`, async () => {
    await using svc = await startHttpSvc({ pwsh: TEST_PWSH, config: config(shell) });
    const reader = await toolNames(svc.url, READER);
    assert.ok(reader.includes("get_date_date_and_format"), reader.join(", "));
    assert.deepEqual(reader.filter((t) => t.startsWith("get_process")), []);
    const refused = await post(`${svc.url}/call`, {
      tool: "get_process_id",
      arguments: { Id: [Deno.pid] },
    }, { "x-api-key": READER });
    assert.notEqual(refused.status, 200, JSON.stringify(refused.body));
    assert.ok((await toolNames(svc.url, ADMIN)).includes("get_process_id"));
    const allowed = await post(`${svc.url}/call`, {
      tool: "get_process_id",
      arguments: { Id: [Deno.pid] },
    }, { "x-api-key": ADMIN });
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
  });
}

Deno.test("security: a CommandOverrides key that names nothing offered is warned about", async () => {
  await using svc = await startHttpSvc({
    pwsh: TEST_PWSH,
    config: config({
      Commands: ["Get-Date"],
      CommandOverrides: { "Get-Proces": { RequiredRoles: ["admin"] } },
    }),
  });
  assert.ok((await toolNames(svc.url, READER)).includes("get_date_date_and_format"));
  assert.match(
    svc.stderr(),
    /WARNING.*CommandOverrides key 'Get-Proces' names no offered tool or command/,
  );
});
