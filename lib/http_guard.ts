/**
 * What the HTTP front checks before anything else, against web pages and networks it does not
 * trust: who may reach svc without credentials (loopback only unless `AllowAnonymous`), which `Host`
 * names it answers to (DNS rebinding), which `Origin`s may call it, and which get CORS headers.
 * {@linkcode RequestGuard.admit} checks a request, Host before Origin; {@linkcode RequestGuard.addCors}
 * decorates every answer, refusals included.
 *
 * @module
 */
import type { AuthSettings } from "./config_auth.ts";
import type { HttpSettings } from "./config_http.ts";
import { ConfigError } from "./errors.ts";
import { HttpError } from "./http_errors.ts";
import { logger } from "./log.ts";

const log = logger("http");

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];
const WILDCARDS = new Set(["0.0.0.0", "::", "[::]"]);

/** Whether `host` (a bind address or Host name, IPv6 with or without brackets) is loopback. */
function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  return h === "localhost" || h.endsWith(".localhost") || h === "::1" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || /^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * Refuses to serve callers without credentials on an address other than loopback unless the user
 * said so (`--allow-anonymous`, `SVC_ALLOW_ANONYMOUS`, `McpServer:AllowAnonymous`); when they did,
 * says at Warning that anyone who reaches the port may call every tool.
 *
 * @throws {ConfigError} `ANONYMOUS_EXPOSED` naming the address and the ways out.
 */
export function checkAnonymousExposure(http: HttpSettings, auth: AuthSettings): void {
  const anonymous = !auth.enabled || !auth.requireAuthentication;
  if (!anonymous || isLoopback(http.host)) return;
  const why = auth.enabled
    ? "Authentication:DefaultPolicy:RequireAuthentication is false"
    : "authentication is off (Authentication:Enabled is false)";
  if (http.allowAnonymous) {
    // The opt-in is right to honour, and loud: it is the whole of this server's access control.
    log.warning(
      "Serving callers without credentials on {Host} because {Why} and anonymous access was allowed (--allow-anonymous, SVC_ALLOW_ANONYMOUS or McpServer:AllowAnonymous): anyone who can reach the port can call every tool.",
      { Host: http.host, Why: why },
    );
    return;
  }
  throw new ConfigError(
    "ANONYMOUS_EXPOSED",
    `Refusing to listen on '${http.host}' because ${why}, so anyone who can reach the port could call the tools without credentials; turn authentication on, bind to 127.0.0.1, or accept the risk with --allow-anonymous (SVC_ALLOW_ANONYMOUS=true, McpServer:AllowAnonymous)`,
  );
}

/** A parsed Host header: the lowercased hostname (IPv6 in brackets) and the port, if any. */
interface HostName {
  hostname: string;
  port: string | null;
}

/** Parses a Host header strictly (name or address, optional port); null when it is anything else. */
function parseHost(value: string | null): HostName | null {
  if (value === null) return null;
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::(\d{1,5}))?$/
    .exec(value);
  if (!match) return null;
  return { hostname: match[1]!.toLowerCase(), port: match[2] ?? null };
}

/** scheme://host:port of an origin or URL, with default ports made explicit; null when not http(s). */
function normalizeOrigin(value: string): string | null {
  try {
    const url = new URL(value);
    if (url.protocol !== "http:" && url.protocol !== "https:") return null;
    const port = url.port || (url.protocol === "https:" ? "443" : "80");
    return `${url.protocol}//${url.hostname.toLowerCase()}:${port}`;
  } catch {
    return null;
  }
}

/** Addresses of this machine's interfaces, as Host names (IPv6 in brackets, without a zone). */
function interfaceAddresses(): string[] {
  try {
    return Deno.networkInterfaces().map((i) => {
      const address = i.address.replace(/%.*$/, "").toLowerCase();
      return i.family === "IPv6" ? `[${address}]` : address;
    });
  } catch (error) {
    // Without --allow-sys the wildcard bind answers only to loopback names and AllowedHosts.
    log.warning("Cannot list this machine's addresses for the Host check: {Error}", {
      Error: error instanceof Error ? error.message : String(error),
    });
    return [];
  }
}

/**
 * The URL of `req`, the first thing the front reads of a request.
 *
 * @throws {HttpError} 400 when its Host makes no URL (spaces, `@`, quotes …): it names nothing svc
 * serves. (svc's own listener never hands on such a request; another caller of the front might.)
 */
export function requestUrl(req: Request): URL {
  const url = URL.parse(req.url);
  if (url === null) throw new HttpError(400, "Bad Request: the Host header is malformed");
  return url;
}

/** The Host, Origin and CORS rules of one HTTP front (see the module documentation). */
export class RequestGuard {
  readonly #any: boolean;
  readonly #hosts: Set<string>;
  readonly #suffixes: string[];
  readonly #origins: Set<string>;

  /** Computes the accepted names once: loopback, the bound address(es), `AllowedHosts`. */
  constructor(http: HttpSettings) {
    const bound = http.host.toLowerCase();
    const own = WILDCARDS.has(bound)
      ? interfaceAddresses()
      : [bound.includes(":") && !bound.startsWith("[") ? `[${bound}]` : bound];
    const configured = http.allowedHosts.map((h) => h.trim().toLowerCase());
    this.#any = configured.includes("*");
    this.#suffixes = configured.filter((h) => h.startsWith("*.")).map((h) => h.slice(1));
    this.#hosts = new Set([
      ...LOOPBACK_NAMES,
      ...own.filter((h) => !WILDCARDS.has(h)),
      ...configured.filter((h) => !h.startsWith("*")).map((h) => parseHost(h)?.hostname ?? h),
    ]);
    this.#origins = new Set(
      http.allowedOrigins.map(normalizeOrigin).filter((o): o is string => o !== null),
    );
  }

  /**
   * Checks `req` against DNS rebinding and foreign pages, Host before Origin, and returns its Host,
   * lowercased: the only Host fit to build a URL from.
   *
   * @throws {HttpError} 403 naming `McpServer:AllowedHosts` for a Host svc does not answer to; 403
   * naming `Authentication:Cors:AllowedOrigins` for an Origin that is neither svc's own nor allowed.
   */
  admit(req: Request): string {
    const host = this.acceptedHost(req);
    if (host === null) {
      const given = req.headers.get("host");
      log.warning("Refused request with Host {Host}.", { Host: given ?? "(none)" });
      throw new HttpError(
        403,
        `Forbidden: Host '${given ?? ""}' is not served here (McpServer:AllowedHosts)`,
      );
    }
    const origin = req.headers.get("origin");
    if (origin !== null && !this.originAllowed(req, origin)) {
      log.warning("Refused request from Origin {Origin}.", { Origin: origin });
      throw new HttpError(
        403,
        `Forbidden: Origin '${origin}' is not allowed (Authentication:Cors:AllowedOrigins)`,
      );
    }
    return host;
  }

  /**
   * The request's Host when svc answers to it, else null. Only a Host that passed here may be used
   * to build a URL: it is a plain name or address with an optional port, nothing to escape.
   */
  acceptedHost(req: Request): string | null {
    const value = req.headers.get("host");
    const parsed = parseHost(value);
    if (!parsed) return null;
    const { hostname } = parsed;
    if (this.#any || this.#hosts.has(hostname) || isLoopback(hostname)) return value!.toLowerCase();
    if (this.#suffixes.some((s) => hostname.endsWith(s))) return value!.toLowerCase();
    return null;
  }

  /** Whether `origin` is the request's own (scheme, accepted Host, port) or an allowed one. */
  originAllowed(req: Request, origin: string): boolean {
    const normalized = normalizeOrigin(origin);
    if (normalized === null) return false;
    if (this.#origins.has(normalized)) return true;
    const host = this.acceptedHost(req);
    return host !== null && normalized === normalizeOrigin(`${new URL(req.url).protocol}//${host}`);
  }

  /**
   * CORS headers for `response`: only for an allowed Origin (never an arbitrary one echoed), and
   * for a preflight the methods and headers a client of svc sends.
   */
  addCors(req: Request, headers: Headers): void {
    const origin = req.headers.get("origin");
    headers.append("vary", "Origin");
    if (origin === null || !this.originAllowed(req, origin)) return;
    headers.set("access-control-allow-origin", origin);
    headers.set(
      "access-control-expose-headers",
      "Mcp-Session-Id, MCP-Protocol-Version, X-Correlation-ID, WWW-Authenticate",
    );
    if (req.method === "OPTIONS") {
      headers.set("access-control-allow-methods", "GET, POST, DELETE, OPTIONS");
      headers.set(
        "access-control-allow-headers",
        req.headers.get("access-control-request-headers") ??
          "content-type, accept, authorization, mcp-session-id, mcp-protocol-version",
      );
    }
  }
}
