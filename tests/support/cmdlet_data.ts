/**
 * Test support: metadata of built-in cmdlets exactly as a real worker's `describe` reports it
 * (without help), recorded from PowerShell 7.6.9 into `tests/fixtures/describe-7.6.json`, so that
 * catalog tests run on real commands (Get-Process has six parameter sets) without a process.
 * `tests/pwsh_test.ts` checks the recording against the PowerShell the tests run on, and records it
 * again with `SVC_RECORD_DESCRIBE=1`.
 *
 * @module
 */
import type { CommandMeta } from "../../lib/worker_protocol.ts";

/** The recording. */
export const DESCRIBE_FIXTURE: URL = new URL("../fixtures/describe-7.6.json", import.meta.url);

/** The cmdlets recorded. */
export const RECORDED_CMDLETS = ["Get-Date", "Get-Process"] as const;

/** Metadata of a recorded built-in cmdlet, without help; a fresh copy each call. */
export function cmdletMeta(name: (typeof RECORDED_CMDLETS)[number]): CommandMeta {
  const recorded = JSON.parse(Deno.readTextFileSync(DESCRIBE_FIXTURE)) as CommandMeta[];
  const meta = recorded.find((command) => command.name === name);
  if (!meta) throw new Error(`${name} is not recorded in ${DESCRIBE_FIXTURE.pathname}`);
  return meta;
}
