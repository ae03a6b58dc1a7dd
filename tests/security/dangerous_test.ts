/**
 * Dangerous commands are named: every exposed command that can run code or write files as svc's
 * account is named at start (a Warning) and by doctor, with who can call it.
 */
import assert from "node:assert/strict";
import { eventually, runSvc, startHttpSvc, TEST_PWSH } from "../support/harness.ts";
import { SECURITY_FIXTURE } from "./support.ts";

const DANGEROUS = [
  "Invoke-Expression",
  "Invoke-Command",
  "Add-Type",
  "New-Object",
  "Start-Process",
  "Import-Module",
  "Set-Content",
  "Add-Content",
  "Out-File",
  "Invoke-Item",
  "Remove-Item",
  "Invoke-Snippet",
];
const HARMLESS = ["Get-Date", "Get-ChildItem", "Set-Location", "Get-EnvironmentTable"];

const config = {
  ShellConfiguration: {
    Commands: [...DANGEROUS, ...HARMLESS].filter((c) => !/Snippet|EnvironmentTable/.test(c)),
    Modules: [SECURITY_FIXTURE],
    CommandOverrides: { "Invoke-Expression": { RequiredRoles: ["admin"] } },
  },
  Authentication: {
    Enabled: true,
    DefaultPolicy: { RequiredRoles: ["reader"] },
    Schemes: {
      keys: { Type: "ApiKey", Keys: { reader: { Value: "reader-key-6a0f2c", Roles: ["reader"] } } },
    },
  },
};

function checkNamed(text: string, where: string): void {
  for (const command of DANGEROUS) {
    assert.match(text, new RegExp(`Exposed command '${command}' can`), `${where}: ${command}`);
  }
  for (const command of HARMLESS) {
    assert.doesNotMatch(text, new RegExp(`Exposed command '${command}'`), `${where}: ${command}`);
  }
  assert.match(
    text,
    /Exposed command 'Invoke-Expression' can run arbitrary code .*callers with role admin can call it/,
  );
  assert.match(text, /Exposed command 'Set-Content' can write .*callers with role reader/);
  assert.match(text, /Exposed command 'Invoke-Snippet' can run arbitrary code/);
}

Deno.test(
  "security: start and doctor name every exposed command that runs code or writes files",
  async () => {
    await using svc = await startHttpSvc({ pwsh: TEST_PWSH, config });
    // The catalog is built once a worker is up; its warnings follow.
    const response = await fetch(`${svc.url}/tools`, {
      headers: { "x-api-key": "reader-key-6a0f2c" },
    });
    assert.equal(response.status, 200, await response.clone().text() + svc.stderr());
    await response.body?.cancel();
    // The warnings are written as the catalog is built; the answer can reach the test first.
    await eventually(() =>
      DANGEROUS.every((c) => svc.stderr().includes(`Exposed command '${c}' can`))
    );
    const warnings = svc.stderr().split("\n").filter((l) => /WARN/.test(l)).join("\n");
    checkNamed(warnings, "start");

    const dir = await Deno.makeTempDir({ prefix: "svc-danger-" });
    try {
      await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config));
      const doctor = await runSvc([
        "doctor",
        "--config",
        `${dir}/appsettings.json`,
        "--pwsh",
        TEST_PWSH,
      ]);
      checkNamed(doctor.stdout, "doctor");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
