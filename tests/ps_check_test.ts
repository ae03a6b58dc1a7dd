/**
 * The PowerShell static check (`deno task ps-check`) runs from the project's own dependencies and
 * reports syntax errors and unknown cmdlet parameters with their positions.
 */
import assert from "node:assert/strict";
import { outputWithin } from "./support/deadline.ts";

const script = new URL("../scripts/ps_check.ts", import.meta.url).pathname;

async function check(files: string[]): Promise<{ code: number; stdout: string }> {
  const output = await outputWithin(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "--allow-run", script, ...files],
    stdout: "piped",
    stderr: "piped",
    // Without a pwsh, only the grammar runs: the expected lines below are the grammar's.
    env: { SVC_TEST_PWSH: "", PATH: "/usr/bin:/bin" },
  }, "ps-check");
  return { code: output.code, stdout: new TextDecoder().decode(output.stdout) };
}

Deno.test("ps-check passes the project's PowerShell files", async () => {
  const { code, stdout } = await check([]);
  assert.equal(code, 0, stdout);
  assert.match(stdout, /ps-check: \d+ file\(s\) clean/);
});

Deno.test("ps-check reports a syntax error and an unknown parameter with file, line and column", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/bad.ps1`;
    await Deno.writeTextFile(file, "function X {\n  Get-ChildItem -Pathh foo\n  if ($a { }\n}\n");
    const { code, stdout } = await check([file]);
    assert.equal(code, 1);
    assert.match(stdout, new RegExp(`${file}:2:17: Get-ChildItem -Pathh is not a parameter of it`));
    assert.match(stdout, new RegExp(`${file}:3:3: syntax: cannot parse`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
