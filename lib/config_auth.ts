/**
 * The `Authentication` section: API-key and JWT bearer schemes, the default policy, protected
 * resource metadata and audit options, read and checked once at startup.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { isTree, lookup, type Reader } from "./config_reader.ts";

/** One API key: its id (used in logs), its SHA-256 digest, and what it grants. */
export interface ApiKeySettings {
  /** Name in logs and audit lines; for PoshMcp-style entries (the entry name is the key) a digest prefix. */
  id: string;
  /** SHA-256 of the key; the plaintext is not kept. */
  sha256: Uint8Array;
  /** Scopes the key grants. @default [] */
  scopes: string[];
  /** Roles the key grants. @default [] */
  roles: string[];
}

/** An API-key scheme (`Type: ApiKey`). */
export interface ApiKeySchemeSettings {
  type: "ApiKey";
  /** Header carrying the key. @default "X-API-Key" */
  headerName: string;
  /** The configured keys (at least one). */
  keys: ApiKeySettings[];
}

/** An OAuth 2.1 bearer scheme (`Type: JwtBearer`) for an external identity provider. */
export interface JwtSchemeSettings {
  type: "JwtBearer";
  /** Issuer URL used for OIDC discovery (`<Authority>/.well-known/openid-configuration`). */
  authority: string | null;
  /** JWKS URL, when no discovery is wanted. */
  jwksUri: string | null;
  /** Accepted `aud` values (`Audience` plus `ValidAudiences`; at least one). */
  audiences: string[];
  /**
   * The `Audience` setting when it is one https URL: then it names this resource in RFC 9728
   * metadata. `ValidAudiences` never does (they may be other, internal names). @default null
   */
  resourceAudience: string | null;
  /** Accepted `iss` values; empty means the issuer that discovery reports. */
  issuers: string[];
  /** Clock skew allowed on exp/nbf, in seconds. @default 60 (`ClockSkewSeconds`) */
  clockSkewSeconds: number;
  /** Claim with scopes (space-separated string or array). @default "scp", then "scope" (`ClaimsMapping:ScopeClaim`) */
  scopeClaim: string | null;
  /** Claim with roles. @default "roles" (`ClaimsMapping:RoleClaim`) */
  roleClaim: string;
  /** Claim naming the caller. @default "preferred_username", "upn", "email", then "sub" (`ClaimsMapping:NameClaim`) */
  nameClaim: string | null;
  /** Allow an http:// Authority or JwksUri (tests and labs only). @default true unless the URL is loopback (`RequireHttpsMetadata`) */
  requireHttpsMetadata: boolean;
}

/** The Authentication section (HTTP only). */
export interface AuthSettings {
  /** Whether the MCP endpoints, /tools and /call require the McpAccess policy. @default false (`Authentication:Enabled`) */
  enabled: boolean;
  /** The scheme that authenticates requests. @default the only scheme, if there is one (`Authentication:DefaultScheme`) */
  defaultScheme: string | null;
  /** Callers must authenticate. @default true (`Authentication:DefaultPolicy:RequireAuthentication`) */
  requireAuthentication: boolean;
  /** Scopes a caller needs, all of them. @default [] (`Authentication:DefaultPolicy:RequiredScopes`) */
  requiredScopes: string[];
  /** Roles of which a caller needs one. @default [] (`Authentication:DefaultPolicy:RequiredRoles`) */
  requiredRoles: string[];
  /** Schemes by name. */
  schemes: Record<string, ApiKeySchemeSettings | JwtSchemeSettings>;
  /**
   * Overrides of the RFC 9728 metadata svc serves at `/.well-known/oauth-protected-resource` when
   * the default scheme is JwtBearer (or `Resource` is set); each empty value is derived instead.
   */
  protectedResource: {
    /** @default the scheme's Audience when it is one https URL, else the MCP endpoint's URL (`ProtectedResource:Resource`) */
    resource: string | null;
    /** @default null (`ProtectedResource:ResourceName`) */
    resourceName: string | null;
    /** @default the scheme's Authority, else its ValidIssuers (`ProtectedResource:AuthorizationServers`) */
    authorizationServers: string[];
    /** @default `DefaultPolicy:RequiredScopes` (`ProtectedResource:ScopesSupported`) */
    scopesSupported: string[];
  };
  /** Log argument values (secrets redacted) in audit lines. @default false (`Authentication:Audit:LogArguments`) */
  logArguments: boolean;
}

/** Reads and checks the `Authentication` section. */
export function readAuth(read: Reader): AuthSettings {
  const key = (name: string) => `Authentication:${name}`;
  const schemesNode = lookup(read.tree, key("Schemes"));
  const schemes: AuthSettings["schemes"] = {};
  for (const name of isTree(schemesNode) ? Object.keys(schemesNode) : []) {
    schemes[name] = readScheme(read, `${key("Schemes")}:${name}`);
  }
  const names = Object.keys(schemes);
  const enabled = read.boolean(key("Enabled"));
  let defaultScheme = read.optionalString(key("DefaultScheme"));
  if (defaultScheme === null && names.length === 1) defaultScheme = names[0]!;
  if (defaultScheme !== null) {
    const match = names.find((n) => n.toLowerCase() === defaultScheme!.toLowerCase());
    if (match === undefined && enabled) {
      throw read.invalid(
        key("DefaultScheme"),
        `no scheme named '${defaultScheme}' under '${key("Schemes")}' (found: ${
          names.join(", ") || "none"
        })`,
      );
    }
    defaultScheme = match ?? defaultScheme;
  }
  if (enabled && names.length === 0) {
    throw read.invalid(key("Enabled"), `true, but '${key("Schemes")}' configures no scheme`);
  }
  if (enabled && defaultScheme === null) {
    throw read.invalid(
      key("DefaultScheme"),
      `is not set; it must name one of the schemes (${names.join(", ")})`,
    );
  }
  return {
    enabled,
    defaultScheme,
    requireAuthentication: read.boolean(key("DefaultPolicy:RequireAuthentication")),
    requiredScopes: read.strings(key("DefaultPolicy:RequiredScopes")),
    requiredRoles: read.strings(key("DefaultPolicy:RequiredRoles")),
    schemes,
    protectedResource: {
      resource: refusePlaceholder(
        read,
        key("ProtectedResource:Resource"),
        read.optionalString(key("ProtectedResource:Resource")),
      ),
      resourceName: read.optionalString(key("ProtectedResource:ResourceName")),
      authorizationServers: read.strings(key("ProtectedResource:AuthorizationServers")).map((
        v,
        i,
      ) => refusePlaceholder(read, key(`ProtectedResource:AuthorizationServers:${i}`), v)!),
      scopesSupported: read.strings(key("ProtectedResource:ScopesSupported")),
    },
    logArguments: read.boolean(key("Audit:LogArguments")),
  };
}

/**
 * Variable references that a template or shell was meant to replace and did not: `${NAME}` (shells,
 * compose files, envsubst), `$(NAME)` (Kubernetes leaves it as is when the variable is undefined),
 * `{{ name }}` (Helm and other templates); as a whole value also `%NAME%` (cmd.exe) and `#{name}#`
 * (Azure DevOps), which a URL's percent-encoding could look like.
 */
const REFERENCE = String.raw`\$\{[^{}]*\}|\$\([A-Za-z_][A-Za-z0-9_]*\)|\{\{.*\}\}`;
const WHOLE_REFERENCE = String.raw`${REFERENCE}|%[A-Za-z_][A-Za-z0-9_]*%|#\{[^{}]*\}#?`;

/**
 * True for text left from a template: `<hex digest of the key>` or an unreplaced variable reference
 * (`${ADMIN_KEY}`, `$(ADMIN_KEY)`, `{{ .Values.key }}`) as the whole value, or, with `inside` (for
 * URLs and other names that can never hold them), one anywhere in it.
 */
function isPlaceholder(value: string, inside = false): boolean {
  return inside
    ? new RegExp(`<[^<>]*>|${REFERENCE}`, "s").test(value)
    : new RegExp(`^\\s*(<.*>|${WHOLE_REFERENCE})\\s*$`, "s").test(value);
}

/** Refuses a placeholder in `key`: it would be taken for a real value (for a key, as the key). */
function refusePlaceholder(read: Reader, key: string, value: string | null): string | null {
  const inside = !key.endsWith(":Value");
  if (value !== null && isPlaceholder(value, inside)) {
    throw read.invalid(
      key,
      `holds the placeholder ${JSON.stringify(value)}; replace it with the real value${
        key.endsWith(":Value") || key.endsWith(":Sha256") ? " (never a key by accident)" : ""
      }`,
    );
  }
  return value;
}

/** An entry's name in a message: in full unless it may be the key itself (PoshMcp's form). */
function entryWords(keysKey: string, id: string, index: number, nameMayBeKey: boolean): string {
  return nameMayBeKey
    ? `entry ${index + 1} under '${keysKey}' (its name is not shown: it may be a key)`
    : `'${keysKey}:${id}'`;
}

function readApiKeys(read: Reader, key: string): ApiKeySettings[] {
  const keysKey = `${key}:Keys`;
  const keysNode = lookup(read.tree, keysKey);
  // PoshMcp's form, the entry name being the key, only where the scheme says so.
  const entryNameIsKey = read.boolean(`${key}:EntryNameIsKey`);
  const keys: ApiKeySettings[] = [];
  const ids = isTree(keysNode) ? Object.keys(keysNode) : [];
  const fromNames: number[] = [];
  ids.forEach((id, index) => {
    const entry = `${keysKey}:${id}`;
    const node = lookup(read.tree, entry);
    const has = (field: string) => isTree(node) && lookup(node, field) !== undefined;
    const written = has("Value") || has("Sha256");
    const value = refusePlaceholder(read, `${entry}:Value`, read.optionalString(`${entry}:Value`));
    const digest = refusePlaceholder(
      read,
      `${entry}:Sha256`,
      read.optionalString(`${entry}:Sha256`),
    );
    let sha256: Uint8Array;
    let name = id;
    if (digest !== null) {
      if (!/^[0-9a-fA-F]{64}$/.test(digest.trim())) {
        throw read.invalid(`${entry}:Sha256`, "expected 64 hexadecimal characters");
      }
      sha256 = Uint8Array.from(digest.trim().match(/../g)!.map((h) => parseInt(h, 16)));
    } else if (value !== null && value.trim() !== "") {
      sha256 = new Uint8Array(createHash("sha256").update(value).digest());
    } else if (!written && entryNameIsKey) {
      if (isPlaceholder(id) || id.trim() === "") {
        throw read.invalid(
          keysKey,
          `${entryWords(keysKey, id, index, true)} is a placeholder, not a key`,
        );
      }
      sha256 = new Uint8Array(createHash("sha256").update(id).digest());
      // The name is the key: logs and audit lines get a digest prefix instead.
      name = `api-key-${Buffer.from(sha256).toString("hex").slice(0, 8)}`;
      fromNames.push(index);
    } else {
      const where = entryWords(keysKey, id, index, !written);
      const field = written ? `${entry}:${has("Sha256") ? "Sha256" : "Value"}` : null;
      throw read.invalid(
        field ?? keysKey,
        `${where} has no secret${written ? " (it is empty)" : ""}: give the key in '${keysKey}:${
          written ? id : "<entry>"
        }:Value' (best from a secret store, as the environment variable ${
          keysKey.replaceAll(":", "__")
        }__${
          written ? id : "<entry>"
        }__Value) or its digest in ':Sha256'; a name that is itself the key (PoshMcp's form) needs '${key}:EntryNameIsKey': true`,
      );
    }
    keys.push({
      id: name,
      sha256,
      scopes: read.strings(`${entry}:Scopes`),
      roles: read.strings(`${entry}:Roles`),
    });
  });
  if (fromNames.length > 0) {
    read.warnings.push(
      `${fromNames.length} API key(s) of '${key}' are their entry's name ('${key}:EntryNameIsKey'): anyone who reads the configuration knows them; give each as ':Sha256' (or ':Value' from a secret store) instead`,
    );
  }
  return keys;
}

function readScheme(read: Reader, key: string): ApiKeySchemeSettings | JwtSchemeSettings {
  const type = read.text(`${key}:Type`);
  if (type.toLowerCase() === "apikey") {
    const keys = readApiKeys(read, key);
    if (keys.length === 0) {
      throw read.invalid(key, `an ApiKey scheme needs at least one entry under '${key}:Keys'`);
    }
    return {
      type: "ApiKey",
      headerName: read.text(`${key}:HeaderName`),
      keys,
    };
  }
  if (type.toLowerCase() !== "jwtbearer") {
    throw read.invalid(`${key}:Type`, `expected "ApiKey" or "JwtBearer", got "${type}"`);
  }
  const text = (name: string) =>
    refusePlaceholder(read, `${key}:${name}`, read.optionalString(`${key}:${name}`));
  const list = (name: string) =>
    read.strings(`${key}:${name}`).map((v, i) =>
      refusePlaceholder(read, `${key}:${name}:${i}`, v)!
    );
  const authority = text("Authority");
  const jwksUri = text("JwksUri");
  if (authority === null && jwksUri === null) {
    throw read.invalid(key, `a JwtBearer scheme needs '${key}:Authority' or '${key}:JwksUri'`);
  }
  const audience = (text("Audience") ?? "").split(/\s+/).filter(Boolean);
  const audiences = [...audience, ...list("ValidAudiences")];
  if (audiences.length === 0) {
    throw read.invalid(
      key,
      `a JwtBearer scheme needs '${key}:Audience' or '${key}:ValidAudiences' (tokens for other resources must be refused)`,
    );
  }
  const issuers = list("ValidIssuers");
  if (authority === null && issuers.length === 0) {
    throw read.invalid(
      key,
      `a JwtBearer scheme with only '${key}:JwksUri' needs '${key}:ValidIssuers'`,
    );
  }
  const loopback = (url: string | null) =>
    url !== null && /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:|\/|$)/.test(url);
  return {
    type: "JwtBearer",
    authority,
    jwksUri,
    audiences,
    resourceAudience: audience.length === 1 && /^https:\/\//i.test(audience[0]!)
      ? audience[0]!
      : null,
    issuers,
    clockSkewSeconds: read.integer(`${key}:ClockSkewSeconds`),
    scopeClaim: text("ClaimsMapping:ScopeClaim"),
    roleClaim: refusePlaceholder(
      read,
      `${key}:ClaimsMapping:RoleClaim`,
      read.text(`${key}:ClaimsMapping:RoleClaim`),
    )!,
    nameClaim: text("ClaimsMapping:NameClaim"),
    requireHttpsMetadata: read.boolean(
      `${key}:RequireHttpsMetadata`,
      !(loopback(authority) || loopback(jwksUri)),
    ),
  };
}
