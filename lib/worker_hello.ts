/**
 * The worker's handshake (protocol §3): its first frame must be a `hello` carrying the secret token
 * svc gave it, the protocol version svc speaks, a PowerShell version svc supports, and the engine
 * members a reset reads that this PowerShell lacks. What svc then warns of, in its start log and in
 * `svc doctor`, is decided here too: a PowerShell without the fixes of the advisories svc knows of,
 * and missing engine members.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { StartupError, WorkerError } from "./errors.ts";
import type { WorkerInfo } from "./worker_protocol.ts";

const PROTOCOL_VERSION = 1;
const MIN_PS_VERSION = [7, 4] as const;

/**
 * Checks a worker's hello frame and returns what it says of the worker. Throws a `BAD_HELLO`
 * WorkerError for a wrong frame, token or protocol, and a `PWSH_TOO_OLD` StartupError below 7.4.
 */
export function acceptHello(
  frame: Record<string, unknown>,
  token: string,
  fallbackPid: number,
): WorkerInfo {
  if (
    frame.type !== "hello" || typeof frame.token !== "string" || !sameSecret(frame.token, token)
  ) {
    throw new WorkerError("BAD_HELLO", "PowerShell worker's first frame was not a valid hello");
  }
  if (frame.protocol !== PROTOCOL_VERSION) {
    throw new WorkerError(
      "BAD_HELLO",
      `PowerShell worker speaks protocol ${
        JSON.stringify(frame.protocol)
      }, expected ${PROTOCOL_VERSION}`,
    );
  }
  const psVersion = String(frame.psVersion ?? "");
  if (!versionAtLeast(psVersion, MIN_PS_VERSION)) {
    throw new StartupError(
      "PWSH_TOO_OLD",
      `PowerShell ${
        psVersion || "(unknown version)"
      } is too old: svc needs PowerShell 7.4 or later (install it from https://aka.ms/powershell or point svc at it with --pwsh)`,
    );
  }
  const missing = frame.missingMembers;
  if (!Array.isArray(missing) || !missing.every((name) => typeof name === "string")) {
    // svc's own host always sends the list: without it, svc could not know what a reset misses.
    throw new WorkerError("BAD_HELLO", "PowerShell worker's hello has no list of missing members");
  }
  return {
    pid: Number(frame.pid ?? fallbackPid),
    psVersion,
    edition: String(frame.edition ?? ""),
    os: String(frame.os ?? ""),
    missingMembers: missing,
  };
}

/**
 * The first release of each PowerShell 7 line with the fixes of every advisory svc knows of: those of
 * August 2026 (CVE-2026-50523 and others, PowerShell/Announcements#86: 7.4.19, 7.5.10, 7.6.5) and
 * September (CVE-2026-69806, PowerShell/Announcements#101: 7.4.20, 7.5.11, 7.6.6). A line not listed
 * has none known.
 */
const SECURITY_FIXES: Readonly<Record<string, string>> = {
  "7.4": "7.4.20",
  "7.5": "7.5.11",
  "7.6": "7.6.6",
};

/**
 * The release of `psVersion`'s line that has the security fixes svc knows of, when `psVersion` is
 * older than it (a preview or release candidate counts as older than its release); else null.
 */
export function missingSecurityFixes(psVersion: string): string | null {
  const match = /^(\d+)\.(\d+)\.(\d+)(-\S+)?$/.exec(psVersion);
  if (!match) return null;
  const fixed = SECURITY_FIXES[`${match[1]}.${match[2]}`];
  if (fixed === undefined) return null;
  const patch = Number(match[3]);
  const fixedPatch = Number(fixed.split(".")[2]);
  return patch < fixedPatch || (patch === fixedPatch && match[4] !== undefined) ? fixed : null;
}

/**
 * What svc warns of a worker's PowerShell, one sentence each: a release without the security fixes
 * svc knows of, and engine members a reset reads that it lacks (with what svc does instead). Logged
 * once per svc run when a worker process says hello, and listed by `svc doctor`.
 */
export function helloWarnings(info: WorkerInfo): string[] {
  const warnings: string[] = [];
  const fixed = missingSecurityFixes(info.psVersion);
  if (fixed !== null) {
    warnings.push(
      `PowerShell ${info.psVersion} lacks the security fixes of PowerShell ${fixed} (advisories of August and September 2026, such as CVE-2026-50523 and CVE-2026-69806): update it (https://aka.ms/powershell)`,
    );
  }
  if (info.missingMembers.length > 0) {
    warnings.push(
      `PowerShell ${info.psVersion} lacks engine members a reset reads to put a worker back after a call (${
        info.missingMembers.join(", ")
      }): every worker process runs one worker, serves one call and is retired, so over HTTP no state passes between calls at the cost of a process start per call`,
    );
  }
  return warnings;
}

// Constant time: the token is a secret, and comparing digests hides its length too.
function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** True when a version string like "7.4.6" or "7.5.0-preview.2" is at least `min`. */
export function versionAtLeast(version: string, min: readonly [number, number]): boolean {
  const match = /^(\d+)\.(\d+)/.exec(version);
  if (!match) return false;
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return major > min[0] || (major === min[0] && minor >= min[1]);
}
