/**
 * Exclusion applies to what will run: every way of naming a command in `Commands` (an alias, an
 * alias of an alias, a module-qualified name, another case, an alias set by the startup script) is
 * resolved to the command before `ExcludePatterns` are tested, against the command's name and its
 * module-qualified name.
 */
import assert from "node:assert/strict";
import { startSvc, TEST_PWSH } from "../support/harness.ts";

const STARTUP = [
  "Set-Alias -Name safe -Value Invoke-Expression -Scope Global",
  "Set-Alias -Name chain -Value safe -Scope Global",
  "Set-Alias -Name tidy -Value Remove-Item -Scope Global",
].join("\n");

async function toolNames(shell: Record<string, unknown>): Promise<string[]> {
  await using svc = await startSvc({
    pwsh: TEST_PWSH,
    config: { ShellConfiguration: { Environment: { StartupScript: STARTUP }, ...shell } },
  });
  return (await svc.listTools()).tools.map((t) => t.name);
}

const ROUTES: Record<string, string> = {
  "a built-in alias (iex)": "iex",
  "a built-in alias (ri)": "ri",
  "a module-qualified name": "Microsoft.PowerShell.Utility\\Invoke-Expression",
  "a module-qualified name (Remove-Item)": "Microsoft.PowerShell.Management\\Remove-Item",
  "another case": "INVOKE-EXPRESSION",
  "an alias set by the startup script": "safe",
  "an alias of an alias": "chain",
  "a startup alias of Remove-Item": "tidy",
};

Deno.test(
  "security: ExcludePatterns apply to the command each naming route resolves to",
  async (t) => {
    for (const [route, name] of Object.entries(ROUTES)) {
      await t.step(route, async () => {
        const names = await toolNames({
          Commands: ["Get-Date", name],
          ExcludePatterns: ["Invoke-Expression", "Remove-*"],
        });
        assert.ok(names.some((n) => n.startsWith("get_date")), names.join(", "));
        assert.deepEqual(
          names.filter((n) => /invoke_expression|remove_item|^iex|^ri$|safe|chain|tidy/.test(n)),
          [],
          `${name} got past the exclusion`,
        );
      });
    }
  },
);

Deno.test(
  "security: ExcludePatterns match a command's module-qualified name",
  async () => {
    const names = await toolNames({
      Commands: ["Get-Date", "iex", "Write-Output", "Get-Location"],
      ExcludePatterns: ["Microsoft.PowerShell.Utility\\*"],
    });
    assert.deepEqual(names.filter((n) => !n.startsWith("get_location")), [], names.join(", "));
    assert.ok(names.some((n) => n.startsWith("get_location")), names.join(", "));
  },
);
