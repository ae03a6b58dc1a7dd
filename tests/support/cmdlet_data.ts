/**
 * Test support: metadata of PowerShell 7.4 built-in cmdlets as the worker's `describe` reports it,
 * from the reference data (tests/fixtures/cmdlets-7.4.json) through the stand-in's own
 * conversion, so catalog tests run on realistic commands (Get-Process has six parameter sets).
 *
 * @module
 */
import type { CommandMeta } from "../../lib/worker_protocol.ts";
import { cmdletFromData, describeCommand, loadCmdletData } from "./fake_pwsh_metadata.ts";

const data = loadCmdletData();

/** Metadata of a PowerShell 7.4 built-in cmdlet, without help. */
export function cmdletMeta(name: string): CommandMeta {
  const def = cmdletFromData(data, name, {
    implementingType: `Microsoft.PowerShell.Commands.${name.replace("-", "")}Command`,
    moduleVersion: "7.0.0.0",
    synopsis: "",
    outputTypes: [],
  });
  return describeCommand(def, false);
}
