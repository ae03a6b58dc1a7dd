/**
 * Authentication and authorization for the HTTP transport (stdio has none). Authenticates a request
 * with the default scheme (API key, or an OAuth 2.1 bearer token from an external identity provider),
 * applies the `McpAccess` policy, and decides per tool whether a caller may see and call it.
 *
 * Rules:
 * - no, malformed or invalid credentials: 401 with `WWW-Authenticate` (when authentication is
 *   required, or whenever credentials were sent but are not valid);
 * - authenticated, but lacking a `DefaultPolicy:RequiredScopes` scope (all are required), or holding
 *   neither a `DefaultPolicy:RequiredRoles` role nor the roles of any `CommandOverrides` entry: 403;
 * - per tool, `ShellConfiguration:CommandOverrides:<command>:RequiredRoles` replaces the default roles
 *   (any one suffices). Matching: the exact tool name first, then the command name, case-insensitively.
 *   A caller sees, and may call, only the tools it passes.
 *
 * Tokens and keys are never logged, echoed or passed on.
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { errors as JoseErrors, JWTPayload } from "jose";
import type { ToolDescriptor } from "./tool_descriptor.ts";
import type {
  ApiKeySchemeSettings,
  AuthSettings,
  JwtSchemeSettings,
  ShellSettings,
} from "./config.ts";
import { overrideOf } from "./config_overrides.ts";
import { IdentityProvider, jose } from "./identity_provider.ts";
import { logger } from "./log.ts";

const log = logger("auth");

/** Who is calling: the name used in audit lines, and what they were granted. */
export interface Principal {
  /** UPN (or other name claim) for tokens, key id for API keys, `anonymous` otherwise. */
  name: string;
  /** The scheme that authenticated the caller, or null when anonymous. */
  scheme: string | null;
  /** Granted scopes. */
  scopes: string[];
  /** Granted roles. */
  roles: string[];
  /** The token's `iss`, when a bearer token authenticated the caller. @default null */
  issuer?: string | null;
  /**
   * Who the caller is, as the scheme knows it: the token's `sub`, or the API key's id. Null when
   * anonymous or when the token has no `sub` (such a caller owns nothing: {@linkcode ownerOf}).
   * @default null
   */
  subject?: string | null;
}

/**
 * Who `principal` is, as svc tells callers apart: the one key of whatever a caller owns (a session,
 * a held call, event-stream slots) and of the tenant its calls run for. It is the scheme, issuer and
 * subject (never a display name, which another subject may share), or `anonymous` when
 * authentication let the caller in without credentials.
 *
 * Null when a token names no subject (no `sub` claim): such a caller is nobody svc could know again
 * in a later request, so it keeps nothing past the request it makes. It opens no session (403), no
 * call of its is held for a retry (its prompts fail at once, as a client's that cannot answer), and
 * each of its calls is a tenant of its own.
 */
export function ownerOf(principal: Principal): string | null {
  if (principal.scheme === null) return "anonymous";
  if (!principal.subject) return null;
  return JSON.stringify([principal.scheme, principal.issuer ?? null, principal.subject]);
}

/** The anonymous caller (authentication disabled, or not required and no credentials sent). */
export const ANONYMOUS: Principal = { name: "anonymous", scheme: null, scopes: [], roles: [] };

/** Outcome of {@linkcode Authenticator.authenticate}. */
export type AuthOutcome =
  | { ok: true; principal: Principal }
  | { ok: false; status: 401 | 403; reason: string; headers: Record<string, string> };

/** Codes of {@linkcode AuthError}. */
type AuthErrorCode = "MISSING" | "INVALID" | "FORBIDDEN";

/** A request was refused by authentication or authorization. */
class AuthError extends Error {
  override name = "AuthError";
  /** Why the request was refused. */
  readonly code: AuthErrorCode;
  /** Builds the error. */
  constructor(code: AuthErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** Options of {@linkcode Authenticator}. */
export interface AuthenticatorOptions {
  /** The Authentication section. */
  auth: AuthSettings;
  /** Shell settings, for `CommandOverrides:<command>:RequiredRoles`. */
  shell: ShellSettings;
}

/** Authenticates requests and authorizes tool calls (see the module documentation). */
export class Authenticator {
  readonly #auth: AuthSettings;
  readonly #shell: ShellSettings;
  readonly #providers = new Map<string, IdentityProvider>();
  readonly #overrideRoles: string[][];

  /** Builds the authenticator; work that does not depend on a request is done here once. */
  constructor(options: AuthenticatorOptions) {
    this.#auth = options.auth;
    this.#shell = options.shell;
    this.#overrideRoles = Object.values(options.shell.commandOverrides)
      .map((o) => o.requiredRoles ?? [])
      .filter((roles) => roles.length > 0);
  }

  /** Whether authentication is on. */
  get enabled(): boolean {
    return this.#auth.enabled;
  }

  /**
   * RFC 9728 protected resource metadata for the MCP endpoint at `endpointUrl`, or null when
   * clients have no authorization server to find: authentication is off, or the default scheme is
   * not JwtBearer and no `ProtectedResource:Resource` is configured. Unset fields are derived:
   * `resource` from the scheme's `Audience` when it is one https URL, else `endpointUrl` (never a
   * `ValidAudiences` entry, which may name another, internal resource);
   * `authorization_servers` from its Authority (else ValidIssuers); `scopes_supported` from
   * `DefaultPolicy:RequiredScopes`.
   */
  protectedResourceMetadata(endpointUrl: string): Record<string, unknown> | null {
    const prm = this.#auth.protectedResource;
    const scheme = this.#defaultBearerScheme();
    if (!this.#auth.enabled || (!scheme && prm.resource === null)) return null;
    const audience = scheme?.resourceAudience ?? null;
    const servers = prm.authorizationServers.length > 0
      ? prm.authorizationServers
      : scheme?.authority
      ? [scheme.authority]
      : scheme?.issuers ?? [];
    const scopes = prm.scopesSupported.length > 0 ? prm.scopesSupported : this.#auth.requiredScopes;
    const body: Record<string, unknown> = {
      resource: prm.resource ?? audience ?? endpointUrl,
      "authorization_servers": servers,
      "bearer_methods_supported": ["header"],
    };
    if (prm.resourceName) body.resource_name = prm.resourceName;
    if (scopes.length > 0) body.scopes_supported = scopes;
    return body;
  }

  #defaultBearerScheme(): JwtSchemeSettings | null {
    const scheme = this.#auth.defaultScheme ? this.#auth.schemes[this.#auth.defaultScheme] : null;
    return scheme?.type === "JwtBearer" ? scheme : null;
  }

  /**
   * Authenticates a request and applies the McpAccess policy. `metadataUrl` (where this server's
   * protected resource metadata is served, on the request's own host after the Host check) goes
   * into the `resource_metadata` parameter of a Bearer challenge.
   */
  async authenticate(req: Request, metadataUrl: string): Promise<AuthOutcome> {
    if (!this.#auth.enabled) return { ok: true, principal: ANONYMOUS };
    const name = this.#auth.defaultScheme!;
    const scheme = this.#auth.schemes[name]!;
    const context = { scheme, metadataUrl };
    let principal: Principal | null;
    try {
      principal = scheme.type === "ApiKey"
        ? this.#apiKey(req, name, scheme)
        : await this.#bearer(req, name, scheme);
    } catch (error) {
      const reason = error instanceof AuthError
        ? error.message
        : "Credentials could not be validated";
      if (!(error instanceof AuthError)) {
        log.warning("Credential validation failed: {Error}", {
          Error: error instanceof Error ? error.message : String(error),
        });
      }
      return this.#refuse(401, reason, context);
    }
    if (!principal) {
      if (!this.#auth.requireAuthentication) return { ok: true, principal: ANONYMOUS };
      return this.#refuse(
        401,
        "Authentication is required: send credentials for this server",
        context,
      );
    }
    const missingScope = this.#auth.requiredScopes.find((s) => !principal.scopes.includes(s));
    if (missingScope !== undefined) {
      return this.#refuse(403, `The caller lacks the required scope '${missingScope}'`, {
        ...context,
        insufficientScope: true,
      });
    }
    const anyRole = (roles: string[]) =>
      roles.length === 0 || roles.some((r) => principal.roles.includes(r));
    if (!anyRole(this.#auth.requiredRoles) && !this.#overrideRoles.some(anyRole)) {
      return this.#refuse(
        403,
        `The caller holds none of the required roles (${this.#auth.requiredRoles.join(", ")})`,
        context,
      );
    }
    return { ok: true, principal };
  }

  /**
   * Whether `principal` may see and call `tool`: the `RequiredRoles` of its override (see
   * `overrideOf`), else the default policy's. A tool covering a whole command may be called when
   * one of its parameter sets may.
   */
  mayCall(principal: Principal, tool: ToolDescriptor): boolean {
    if (!this.#auth.enabled) return true;
    if (tool.parameterSetTools) {
      return tool.parameterSetTools.some((s) => this.mayCall(principal, s));
    }
    const roles = this.#rolesFor(tool);
    return roles.length === 0 || roles.some((r) => principal.roles.includes(r));
  }

  #rolesFor(tool: ToolDescriptor): string[] {
    return overrideOf(this.#shell, tool)?.requiredRoles ?? this.#auth.requiredRoles;
  }

  #refuse(
    status: 401 | 403,
    reason: string,
    context: {
      scheme: ApiKeySchemeSettings | JwtSchemeSettings;
      metadataUrl: string;
      insufficientScope?: boolean;
    },
  ): AuthOutcome {
    const { scheme, metadataUrl, insufficientScope = false } = context;
    const headers: Record<string, string> = {};
    const bearer = scheme.type === "JwtBearer" || this.#auth.protectedResource.resource !== null;
    const scopes = this.#auth.requiredScopes.join(" ");
    // RFC 6750 §3 and RFC 9728 §5.1: where to find the authorization server and which scopes to
    // ask it for; a 403 for a missing scope says so, so that a client can ask for more (step-up).
    const challenge = [
      ...(insufficientScope ? ['error="insufficient_scope"'] : []),
      ...(scopes ? [`scope=${quoted(scopes)}`] : []),
      `resource_metadata=${quoted(metadataUrl)}`,
    ].join(", ");
    if (bearer && (status === 401 || insufficientScope)) {
      headers["www-authenticate"] = `Bearer ${challenge}`;
    } else if (status === 401 && scheme.type === "ApiKey") {
      headers["www-authenticate"] = `ApiKey header=${quoted(scheme.headerName)}`;
    }
    return { ok: false, status, reason, headers };
  }

  #apiKey(req: Request, name: string, scheme: ApiKeySchemeSettings): Principal | null {
    const presented = req.headers.get(scheme.headerName);
    if (presented === null) return null;
    if (presented.trim() === "") {
      throw new AuthError("MISSING", `The ${scheme.headerName} header is empty`);
    }
    const digest = createHash("sha256").update(presented).digest();
    // Every key is compared, in constant time, so timing does not reveal which one nearly matched.
    let found: ApiKeySchemeSettings["keys"][number] | null = null;
    for (const key of scheme.keys) {
      if (timingSafeEqual(digest, key.sha256) && found === null) found = key;
    }
    if (!found) {
      log.warning("Invalid API key presented in {Header}.", { Header: scheme.headerName });
      throw new AuthError("INVALID", `The API key in ${scheme.headerName} is not valid`);
    }
    return {
      name: found.id,
      scheme: name,
      scopes: [...found.scopes],
      roles: [...found.roles],
      issuer: null,
      subject: found.id,
    };
  }

  async #bearer(req: Request, name: string, scheme: JwtSchemeSettings): Promise<Principal | null> {
    const header = req.headers.get("authorization");
    if (header === null) return null;
    const match = /^Bearer\s+([A-Za-z0-9_\-.~+/]+=*)$/i.exec(header.trim());
    if (!match) throw new AuthError("MISSING", "The Authorization header must be 'Bearer <token>'");
    let provider = this.#providers.get(name);
    if (!provider) this.#providers.set(name, provider = new IdentityProvider(scheme));
    const { issuer, jwks } = await provider.discovery();
    const { errors, jwtVerify } = await jose();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(match[1]!, jwks, {
        audience: scheme.audiences,
        issuer: scheme.issuers.length > 0 ? scheme.issuers : issuer,
        clockTolerance: scheme.clockSkewSeconds,
        requiredClaims: ["exp"],
      }));
    } catch (error) {
      // The key set could not be fetched: not the token's fault, and logged as such by the caller.
      if (!(error instanceof errors.JOSEError)) throw error;
      throw new AuthError(
        "INVALID",
        `The bearer token is not valid: ${describeJoseError(error, errors)}`,
      );
    }
    return {
      name: claimName(payload, scheme.nameClaim),
      scheme: name,
      scopes: claimList(payload, scheme.scopeClaim ? [scheme.scopeClaim] : ["scp", "scope"], true),
      roles: claimList(payload, [scheme.roleClaim], false),
      issuer: typeof payload.iss === "string" ? payload.iss : null,
      subject: typeof payload.sub === "string" && payload.sub !== "" ? payload.sub : null,
    };
  }
}

/** An RFC 9110 quoted-string: nothing a value holds can end it or add a parameter. */
function quoted(value: string): string {
  const printable = [...value].filter((c) => c >= " " && c !== "\x7f").join("");
  return `"${printable.replace(/[\\"]/g, "\\$&")}"`;
}

function describeJoseError(error: unknown, errors: typeof JoseErrors): string {
  if (error instanceof errors.JWTExpired) return "it has expired";
  if (error instanceof errors.JWTClaimValidationFailed) {
    return `claim '${error.claim}' is not accepted`;
  }
  if (error instanceof errors.JWKSNoMatchingKey) return "no signing key matches its 'kid'";
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return "its signature does not verify";
  }
  if (error instanceof errors.JOSEError) return error.code;
  return "it could not be parsed";
}

function claimName(payload: JWTPayload, configured: string | null): string {
  for (const claim of configured ? [configured] : ["preferred_username", "upn", "email", "sub"]) {
    const value = payload[claim];
    if (typeof value === "string" && value !== "") return value;
  }
  return "unknown";
}

/** Reads a claim as a list; space-separated strings are split for scope claims. */
function claimList(payload: JWTPayload, claims: string[], split: boolean): string[] {
  const out: string[] = [];
  for (const claim of claims) {
    const value = payload[claim];
    if (typeof value === "string") out.push(...(split ? value.split(/\s+/) : [value]));
    else if (Array.isArray(value)) {
      out.push(...value.filter((v): v is string => typeof v === "string"));
    }
  }
  return [...new Set(out.filter(Boolean))];
}
