/**
 * The worker's handshake (protocol §3): its first frame must be a `hello` carrying the secret token
 * svc gave it, the protocol version svc speaks, and a PowerShell version svc supports.
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
  return {
    pid: Number(frame.pid ?? fallbackPid),
    psVersion,
    edition: String(frame.edition ?? ""),
    os: String(frame.os ?? ""),
  };
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
