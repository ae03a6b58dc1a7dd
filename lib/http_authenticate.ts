/**
 * The authentication step of the HTTP front: who is calling, or the refusal (401 with a challenge,
 * 403), and the caller's identity on every log line of the request. What a credential is worth is
 * the authenticator's decision (`lib/auth.ts`); this step turns it into the front's terms.
 *
 * @module
 */
import { withContext } from "@logtape/logtape";
import { type Authenticator, ownerOf, type Principal } from "./auth.ts";
import { HttpError } from "./http_errors.ts";
import { logger } from "./log.ts";

const log = logger("http");

/**
 * The caller of `req`, authenticated and admitted by the `McpAccess` policy. `metadataUrl` goes
 * into a Bearer challenge's `resource_metadata`; `path` names the request in the log line of a
 * refusal.
 *
 * @throws {HttpError} 401 with `WWW-Authenticate`, or 403, saying why in one sentence.
 */
export async function authenticateRequest(
  auth: Pick<Authenticator, "authenticate">,
  req: Request,
  where: { path: string; metadataUrl: string },
): Promise<Principal> {
  const outcome = await auth.authenticate(req, where.metadataUrl);
  if (outcome.ok) return outcome.principal;
  log.info("Refused {Method} {Path}: {Reason}", {
    Method: req.method,
    Path: where.path,
    Reason: outcome.reason,
  });
  throw new HttpError(outcome.status, outcome.reason, { headers: outcome.headers });
}

/** Runs `fn` with `principal`'s name and subject on every log line it writes (audit lines too). */
export function asCaller<T>(principal: Principal, fn: () => T): T {
  return withContext({ Principal: principal.name, Subject: principal.subject ?? "(none)" }, fn);
}

/**
 * Who owns a session `principal` opens or uses (`ownerOf`).
 *
 * @throws {HttpError} 403 when the token has no `sub`: such a caller names nobody in particular,
 * so cannot own a session (the rule of `ownerOf`).
 */
export function sessionOwnerOf(principal: Principal): string {
  const owner = ownerOf(principal);
  if (owner !== null) return owner;
  throw new HttpError(
    403,
    "Forbidden: a session needs a caller identity, and the token has no 'sub' claim",
  );
}
