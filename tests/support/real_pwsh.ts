/**
 * What the PowerShell suites (`tests/pwsh_*_test.ts`) share: the real pwsh they run on, and why
 * they are skipped when there is none. Their tests ask questions only PowerShell can answer, so the
 * stand-in never stands in for them.
 *
 * @module
 */
import { findRealPwsh } from "./harness.ts";

/** The real pwsh of the PowerShell suites, or null when the machine has none. */
export const REAL_PWSH: string | null = findRealPwsh();

/** True when `SVC_REQUIRE_PWSH=1`: a missing pwsh is then a failure, not a skip. */
export const PWSH_REQUIRED = Deno.env.get("SVC_REQUIRE_PWSH") === "1";

/** Why a PowerShell suite test is skipped here. */
export const NO_PWSH_REASON =
  "no real pwsh on this machine (set SVC_TEST_PWSH or put pwsh on PATH)";

/** Name and `ignore` of a test that needs a real pwsh: skipped, with the reason, without one. */
export function needsRealPwsh(name: string): { name: string; ignore: boolean } {
  return REAL_PWSH
    ? { name: `pwsh: ${name}`, ignore: false }
    : { name: `pwsh: ${name} [skipped: ${NO_PWSH_REASON}]`, ignore: true };
}
