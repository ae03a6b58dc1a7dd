/**
 * What the security tests share: the fixture module a caller uses to read what a command can reach,
 * and the text of a call's result. Every test runs on real pwsh.
 *
 * @module
 */
import type { CallResult } from "../support/harness.ts";

/** Absolute path of the security fixture module (`tests/security/fixtures/SecurityFixture.psm1`). */
export const SECURITY_FIXTURE = new URL("./fixtures/SecurityFixture.psm1", import.meta.url)
  .pathname;

/** Every text block of a call's result, joined: what the caller receives. */
export function textOf(result: CallResult): string {
  return result.content.map((c) => c.text ?? "").join("\n");
}
