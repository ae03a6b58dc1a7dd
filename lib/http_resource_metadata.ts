/**
 * RFC 9728 protected resource metadata, the way an MCP client finds where to sign in: served at
 * `/.well-known/oauth-protected-resource` plus the MCP endpoint's path, and named by the
 * `resource_metadata` parameter of every Bearer challenge. What the metadata says is the
 * authenticator's decision (`Authenticator.protectedResourceMetadata`); where it lives is this
 * module's.
 *
 * @module
 */
import type { Authenticator } from "./auth.ts";
import { HttpError } from "./http_errors.ts";
import { jsonResponse } from "./http_responses.ts";

/** RFC 9728 §3: where protected resource metadata is served (plus the resource's path). */
const WELL_KNOWN_RESOURCE = "/.well-known/oauth-protected-resource";

/** True when `path` (as routed: `routePath`) asks for protected resource metadata. */
export function isResourceMetadataPath(path: string): boolean {
  return path === WELL_KNOWN_RESOURCE || path.startsWith(`${WELL_KNOWN_RESOURCE}/`);
}

/**
 * Where the metadata of the MCP endpoint at `endpointPath` is served, on `base` (scheme and a Host
 * that passed the guard). A client of the endpoint at `/mcp` looks for
 * `/.well-known/oauth-protected-resource/mcp`; the endpoint at `/`, and any other path, for the
 * bare one.
 */
export function metadataUrl(base: string, endpointPath: string | null): string {
  const suffix = endpointPath !== null && endpointPath !== "/" ? endpointPath : "";
  return `${base}${WELL_KNOWN_RESOURCE}${suffix}`;
}

/**
 * The answer to a request for `path` (one {@linkcode isResourceMetadataPath} accepts): the metadata
 * of the MCP endpoint the path names, or of the default one for the bare path (`/` when served,
 * else the first of `mcpPaths`).
 *
 * @throws {HttpError} 404 when the path names no MCP endpoint, authentication is off, or the
 * default scheme is not JwtBearer (and no `ProtectedResource:Resource` is set).
 */
export function resourceMetadata(
  auth: Pick<Authenticator, "protectedResourceMetadata">,
  mcpPaths: ReadonlySet<string>,
  base: string,
  path: string,
): Response {
  const suffix = path.slice(WELL_KNOWN_RESOURCE.length);
  const endpoint = suffix || (mcpPaths.has("/") ? "/" : [...mcpPaths][0]!);
  const metadata = mcpPaths.has(endpoint)
    ? auth.protectedResourceMetadata(`${base}${endpoint}`)
    : null;
  if (metadata) return jsonResponse(200, metadata);
  throw new HttpError(
    404,
    `No protected resource metadata for '${endpoint}': not an MCP endpoint, authentication is off, or its scheme is not JwtBearer`,
  );
}
