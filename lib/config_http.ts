/**
 * The settings of the HTTP transport (`McpServer`, besides the pool and the stream and connection
 * limits, which have modules of their own): where svc listens, over what (HTTP or HTTPS), in which
 * session mode, and whom it serves without credentials.
 *
 * @module
 */
import { resolve } from "node:path";
import type { Reader } from "./config_reader.ts";
import { FLAGS, flagVariable, flagWords, type GivenFlag } from "./config_flags.ts";
import { type HttpLimits, readHttpLimits } from "./config_http_limits.ts";
import { HTTP_MODES } from "./config_schema.ts";
import { ConfigError } from "./errors.ts";

/** HTTP session mode (`McpServer:HttpTransportMode`). */
export type HttpTransportMode = (typeof HTTP_MODES)[number];

/** Settings of the HTTP transport. */
export interface HttpSettings {
  /** Interface to bind; `0.0.0.0` binds all (containers). @default "127.0.0.1" (flag `--host`, env `SVC_HOST`) */
  host: string;
  /** TCP port; 0 picks a free one. @default 8080 (flag `--port`, env `SVC_PORT`) */
  port: number;
  /** Dedicated MCP path; null serves `/` and `/mcp`. @default null (flag `--mcp-path`, env `SVC_MCP_PATH`) */
  mcpPath: string | null;
  /** Session mode. @default "Stateless" (`McpServer:HttpTransportMode`) */
  mode: HttpTransportMode;
  /** Idle time after which a Stateful session expires, in ms. @default 600000 (`McpServer:IdleSessionTimeoutSeconds`, 600) */
  idleSessionTimeoutMs: number;
  /**
   * Start of every Stateful session id (`<prefix>.<uuid>`), naming this replica so that a load
   * balancer can send a session's requests to the replica that holds it. @default null (`McpServer:SessionIdPrefix`)
   */
  sessionIdPrefix: string | null;
  /** Serve the deprecated HTTP+SSE transport at `/sse` and `/messages`. @default false (`McpServer:EnableLegacySse`) */
  enableLegacySse: boolean;
  /** Largest request body accepted, in bytes; larger ones get 413. @default 4194304 (`McpServer:MaxRequestBodyBytes`) */
  maxRequestBodyBytes: number;
  /** Bounds on streams and connections (`McpServer:Max…`; docs/security.md, "Resource limits"). */
  limits: HttpLimits;
  /** Exact origins accepted besides same-origin. @default [] (`Authentication:Cors:AllowedOrigins`) */
  allowedOrigins: string[];
  /**
   * Host header values accepted besides the loopback names and the addresses svc listens on (all of
   * this machine's when bound to a wildcard address); `*` accepts any Host, `*.example.com` any
   * subdomain. @default [] (`McpServer:AllowedHosts`)
   */
  allowedHosts: string[];
  /**
   * Serve callers without credentials on an address other than loopback (authentication off, or
   * `RequireAuthentication` false): anyone who can reach the port can then call every tool the
   * default policy allows. Without it, such a configuration is refused at start.
   * @default false (flag `--allow-anonymous`, env `SVC_ALLOW_ANONYMOUS`, `McpServer:AllowAnonymous`)
   */
  allowAnonymous: boolean;
  /**
   * HTTPS on svc's own port: absolute paths of the PEM certificate chain and private key, or null
   * for plain HTTP. @default null (flags `--tls-certificate`, `--tls-key`; env `SVC_TLS_CERTIFICATE`,
   * `SVC_TLS_KEY`; `McpServer:TlsCertificatePath`, `McpServer:TlsKeyPath`)
   */
  tls: TlsFiles | null;
  /**
   * svc is reached only through a proxy that terminates TLS and sets `X-Forwarded-Proto`: a request
   * whose one `X-Forwarded-Proto` is `http` or `https` is taken to have come with that scheme.
   * @default false (`McpServer:TrustForwardedProto`)
   */
  trustForwardedProto: boolean;
}

/** The files of HTTPS on svc's own port (`McpServer:TlsCertificatePath`, `McpServer:TlsKeyPath`). */
export interface TlsFiles {
  /** The certificate chain, PEM, the server's certificate first. */
  certificatePath: string;
  /** Its private key, PEM. */
  keyPath: string;
}

/** The HTTP transport's settings: flags and their variables first, then the configuration. */
export function readHttp(read: Reader, given: GivenFlag, cwd: string): HttpSettings {
  const portText = given("port") ?? FLAGS.port.default;
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid port '${portText}': expected an integer from 0 to 65535 (${flagWords("port")})`,
    );
  }
  const mode = read.choice("McpServer:HttpTransportMode", HTTP_MODES);
  let mcpPath = given("mcpPath") ?? null;
  if (mcpPath !== null) {
    mcpPath = `/${mcpPath.replace(/^\/+/, "")}`.replace(/\/+$/, "") || "/";
  }
  return {
    host: given("host") ?? FLAGS.host.default,
    port,
    mcpPath,
    mode,
    idleSessionTimeoutMs: read.integer("McpServer:IdleSessionTimeoutSeconds") * 1000,
    sessionIdPrefix: readSessionIdPrefix(read),
    enableLegacySse: read.boolean("McpServer:EnableLegacySse"),
    maxRequestBodyBytes: read.integer("McpServer:MaxRequestBodyBytes"),
    limits: readHttpLimits(read),
    allowedOrigins: read.strings("Authentication:Cors:AllowedOrigins"),
    allowedHosts: read.strings("McpServer:AllowedHosts"),
    allowAnonymous: readAllowAnonymous(read, given),
    tls: readTlsFiles(read, given, cwd),
    trustForwardedProto: read.boolean("McpServer:TrustForwardedProto"),
  };
}

/**
 * The TLS files: each from its flag, else its `SVC_*` variable (relative to the current directory),
 * else its key (relative by the rule of `Reader.path`). Both or neither: one alone is refused, since
 * svc would otherwise serve plain HTTP where HTTPS was meant.
 */
function readTlsFiles(read: Reader, given: GivenFlag, cwd: string): TlsFiles | null {
  const path = (name: "tlsCertificate" | "tlsKey", key: string) => {
    const value = given(name);
    if (value !== undefined && value.trim() !== "") return resolve(cwd, value);
    return read.path(key, cwd);
  };
  const certificatePath = path("tlsCertificate", "McpServer:TlsCertificatePath");
  const keyPath = path("tlsKey", "McpServer:TlsKeyPath");
  if (certificatePath !== null && keyPath !== null) return { certificatePath, keyPath };
  if (certificatePath === null && keyPath === null) return null;
  const [set, unset] = certificatePath === null
    ? ["tlsKey", "tlsCertificate"] as const
    : ["tlsCertificate", "tlsKey"] as const;
  throw new ConfigError(
    "INVALID_VALUE",
    `HTTPS needs both a certificate and its key: ${FLAGS[set].key} is set but ${
      FLAGS[unset].key
    } is not (${flagWords(unset)})`,
  );
}

function readAllowAnonymous(read: Reader, given: GivenFlag): boolean {
  const value = given("allowAnonymous");
  if (value === undefined || value === "") return read.boolean("McpServer:AllowAnonymous");
  if (/^(true|1)$/i.test(value)) return true;
  if (/^(false|0)$/i.test(value)) return false;
  throw new ConfigError(
    "INVALID_VALUE",
    `Invalid value '${value}' of ${flagVariable(FLAGS.allowAnonymous)}: expected true or false`,
  );
}

function readSessionIdPrefix(read: Reader): string | null {
  const prefix = read.optionalString("McpServer:SessionIdPrefix");
  if (prefix !== null && !/^[A-Za-z0-9-]{1,40}$/.test(prefix)) {
    throw read.invalid(
      "McpServer:SessionIdPrefix",
      `expected 1 to 40 letters, digits or '-', got "${prefix}"`,
    );
  }
  return prefix;
}
