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

/** The reader's API key in {@linkcode twoKeyConfig}: roles `reader`. */
export const READER_KEY = "reader-key-51c0e2";

/** The admin's API key in {@linkcode twoKeyConfig}: roles `admin` and `reader`. */
export const ADMIN_KEY = "admin-key-8d7f3a";

/**
 * An HTTP configuration with `shell` as its ShellConfiguration and an ApiKey scheme of two keys,
 * {@linkcode READER_KEY} and {@linkcode ADMIN_KEY}; every tool requires `reader` by default.
 */
export function twoKeyConfig(shell: Record<string, unknown>): Record<string, unknown> {
  return {
    ShellConfiguration: shell,
    Authentication: {
      Enabled: true,
      DefaultPolicy: { RequiredRoles: ["reader"] },
      Schemes: {
        keys: {
          Type: "ApiKey",
          Keys: {
            reader: { Value: READER_KEY, Roles: ["reader"] },
            admin: { Value: ADMIN_KEY, Roles: ["admin", "reader"] },
          },
        },
      },
    },
  };
}
