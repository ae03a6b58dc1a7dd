/**
 * Settings of svc: the one home of every default. Layers, highest first: CLI flags, environment
 * variables (`SVC_*` and `Section__Sub__Key`), the configuration file (JSONC), coded defaults. Keys are
 * matched case-insensitively, as .NET configuration binders do, so PoshMcp files work unchanged
 * (`PowerShellConfiguration` is read as `ShellConfiguration`, `CommandNames` as `Commands`).
 *
 * @module
 */
import { parse as parseJsonc, type ParseError, printParseErrorCode } from "jsonc-parser";
import { z } from "zod";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { checkConfigShape } from "./config_schema.ts";
import { ConfigError } from "./errors.ts";
import type { LogFormat, LogLevel } from "./log.ts";
import embeddedDefaults from "../appsettings.json" with { type: "json" };

/** Transport served by `svc serve`. */
export type Transport = "stdio" | "http";

/** Per-command settings from `ShellConfiguration:CommandOverrides:<command>`. */
export interface CommandOverride {
  /** Time limit for one call of this command in ms; replaces `ToolCallTimeout`. */
  toolCallTimeoutMs?: number;
  /** Roles of which a caller needs one to call this command (HTTP with authentication). */
  requiredRoles?: string[];
}

/** The shell section: which commands become tools and how calls run. */
export interface ShellSettings {
  /** PowerShell executable. @default "pwsh" on PATH (flag `--pwsh`, env `SVC_PWSH`, key `ShellConfiguration:PwshPath`) */
  pwshPath: string | null;
  /** Explicit command names. @default [] (`ShellConfiguration:Commands`, also PoshMcp's `CommandNames`) */
  commands: string[];
  /** Wildcards selecting commands. @default [] (`ShellConfiguration:IncludePatterns`) */
  includePatterns: string[];
  /** Wildcards hiding commands; always wins. @default [] (`ShellConfiguration:ExcludePatterns`) */
  excludePatterns: string[];
  /** Modules imported in every worker whose commands are offered. @default [] (`ShellConfiguration:Modules`) */
  modules: string[];
  /** Inline startup script. @default null (`ShellConfiguration:Environment:StartupScript`) */
  startupScript: string | null;
  /** Startup script file, run before the inline one. @default null (`ShellConfiguration:Environment:StartupScriptPath`) */
  startupScriptPath: string | null;
  /** Time limit of one call in ms. @default 300000 (`ShellConfiguration:ToolCallTimeout`, "00:05:00") */
  toolCallTimeoutMs: number;
  /** Largest result text in bytes before it is cut. @default 1048576 (`ShellConfiguration:MaxResultBytes`) */
  maxResultBytes: number;
  /** `ConvertTo-Json -Depth` for output objects. @default 4 (`ShellConfiguration:SerializationDepth`) */
  serializationDepth: number;
  /** Per-command overrides, keyed as written (matched case-insensitively). @default {} */
  commandOverrides: Record<string, CommandOverride>;
  /** Directory of the catalog cache. @default the user cache dir + "/svc" (`ShellConfiguration:CacheDirectory`, env `SVC_CACHE_DIR`) */
  cacheDirectory: string | null;
  /** Time to start a worker and run its startup script, in ms. @default 120000 (`ShellConfiguration:WorkerStartTimeout`) */
  workerStartTimeoutMs: number;
}

/** Settings of the HTTP worker pool, `McpServer:RunspacePool:*` (durations in ms). */
export interface PoolSettings {
  /** Most workers at once. @default 16 (`MaxPoolSize`) */
  maxPoolSize: number;
  /** Replenishment floor and readiness minimum. @default 2 (`MinPoolSize`) */
  minPoolSize: number;
  /** Workers warmed at startup. @default 2 (`EagerWarmCount`) */
  eagerWarmCount: number;
  /** Idle time after which a worker above the minimum is reclaimed. @default 300000 (`IdleTtl`, "00:05:00") */
  idleTtlMs: number;
  /** Interval of the idle sweep. @default 30000 (`SweepInterval`, "00:00:30") */
  sweepIntervalMs: number;
  /** Longest wait for a worker before a call is refused. @default 15000 (`AcquisitionTimeout`, "00:00:15") */
  acquisitionTimeoutMs: number;
  /** Grace period of a stopped pipeline or closing worker. @default 5000 (`StopTimeout`, "00:00:05") */
  stopTimeoutMs: number;
  /** Time in-flight calls get on shutdown. @default 30000 (`ShutdownDrainTimeout`, "00:00:30") */
  shutdownDrainTimeoutMs: number;
  /** Interval of the replenishment check. @default 5000 (`ReplenishCheckInterval`, "00:00:05") */
  replenishCheckIntervalMs: number;
}

/** HTTP session mode (`McpServer:HttpTransportMode`). */
export type HttpTransportMode = "Stateless" | "Stateful";

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
  /** Serve the deprecated HTTP+SSE transport at `/sse` and `/messages`. @default false (`McpServer:EnableLegacySse`) */
  enableLegacySse: boolean;
  /** Largest request body accepted, in bytes; larger ones get 413. @default 4194304 (`McpServer:MaxRequestBodyBytes`) */
  maxRequestBodyBytes: number;
  /** Exact origins accepted besides same-origin. @default [] (`Authentication:Cors:AllowedOrigins`) */
  allowedOrigins: string[];
  /** Host header values accepted besides the loopback names and the bound address. @default [] (`McpServer:AllowedHosts`) */
  allowedHosts: string[];
}

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
  /** RFC 9728 metadata served at `/.well-known/oauth-protected-resource`, when `Resource` is set. */
  protectedResource: {
    resource: string;
    resourceName: string | null;
    authorizationServers: string[];
    scopesSupported: string[];
  } | null;
  /** Log argument values (secrets redacted) in audit lines. @default false (`Authentication:Audit:LogArguments`) */
  logArguments: boolean;
}

/** All settings svc runs with. */
export interface Settings {
  /** The configuration file read, or null for the embedded default. */
  configPath: string | null;
  /** Transport of `svc serve`. @default "stdio" (flag `--transport`, env `SVC_TRANSPORT`) */
  transport: Transport;
  /** Shell settings. */
  shell: ShellSettings;
  /** Grace period for a stopped pipeline before its worker is killed, in ms. @default 5000 (`McpServer:RunspacePool:StopTimeout`) */
  stopTimeoutMs: number;
  /** HTTP worker pool. */
  pool: PoolSettings;
  /** HTTP transport. */
  http: HttpSettings;
  /** Authentication and authorization (HTTP). */
  auth: AuthSettings;
  /** Log level. @default "info" (`Logging:LogLevel:Default`, env `SVC_LOG_LEVEL`, flag `--log-level`) */
  logLevel: LogLevel;
  /** Log line format. @default "text" (flag `--log-format`, env `SVC_LOG_FORMAT`) */
  logFormat: LogFormat;
  /** Warnings to log at startup: unknown keys, deprecated keys (one each), ignored variables. */
  warnings: string[];
  /** Where each setting that was read came from, by key path. */
  sources: Record<string, SettingSource>;
}

/** Where a setting came from. */
export type SettingSource = "flag" | "environment" | "file" | "embedded default" | "default";

/** Command-line values that override configuration (undefined = not given). */
export interface SettingsOverrides {
  /** `--config` */
  config?: string | undefined;
  /** `--transport` */
  transport?: string | undefined;
  /** `--pwsh` */
  pwsh?: string | undefined;
  /** `--log-level` */
  logLevel?: string | undefined;
  /** `--log-format` */
  logFormat?: string | undefined;
  /** `--host` */
  host?: string | undefined;
  /** `--port` */
  port?: string | undefined;
  /** `--mcp-path` */
  mcpPath?: string | undefined;
}

/** Options of {@linkcode loadSettings}. */
export interface LoadSettingsOptions {
  /** Environment to read. @default Deno.env.toObject() */
  env?: Record<string, string>;
  /** Directory where `./appsettings.json` is looked for. @default Deno.cwd() */
  cwd?: string;
}

type Tree = Record<string, unknown>;

/** Top-level sections whose `Section__Key` environment variables are read. */
const SECTIONS = [
  "ShellConfiguration",
  "PowerShellConfiguration",
  "McpServer",
  "Logging",
  "Authentication",
];

const LOG_LEVELS: Record<string, LogLevel> = {
  trace: "trace",
  debug: "debug",
  information: "info",
  info: "info",
  warning: "warning",
  warn: "warning",
  error: "error",
  critical: "fatal",
  fatal: "fatal",
  none: "fatal",
};

/** Reads and validates the settings from flags, environment, configuration file and defaults. */
export async function loadSettings(
  overrides: SettingsOverrides = {},
  options: LoadSettingsOptions = {},
): Promise<Settings> {
  const { env = Deno.env.toObject(), cwd = Deno.cwd() } = options;
  const { tree: fileTree, path: configPath } = await readConfigFile(overrides.config, env, cwd);
  const fromEnv = envTree(env);
  const warnings: string[] = [];
  const origin = configPath ? `'${configPath}'` : "the embedded default configuration";
  for (const [tree, where] of [[fileTree, origin], [fromEnv, "environment variables"]] as const) {
    const shape = checkConfigShape(tree, where);
    if (shape.error) {
      throw new ConfigError(
        "INVALID_VALUE",
        `Invalid configuration value for '${shape.error.path}' in ${where}: ${shape.error.message}, got ${
          JSON.stringify(shape.error.value)
        }`,
      );
    }
    warnings.push(...shape.warnings);
  }
  if (env["SVC_SESSION_TIMEOUT_MINUTES"] !== undefined) {
    warnings.push(
      "SVC_SESSION_TIMEOUT_MINUTES is set but not used since version 2: sessions no longer own a worker; set McpServer:IdleSessionTimeoutSeconds for Stateful session expiry",
    );
  }
  const tree = mergeTrees(fileTree, fromEnv);
  const read = new Reader(tree, { env: fromEnv, embedded: configPath === null });
  const settings = resolveSettings(read, { configPath, overrides, env });
  settings.warnings.unshift(...warnings);
  return settings;
}

async function readConfigFile(
  flag: string | undefined,
  env: Record<string, string>,
  cwd: string,
): Promise<{ tree: Tree; path: string | null }> {
  const explicit = flag ?? env["SVC_CONFIG"];
  // Absolute, so logs and doctor name exactly the file that was read.
  const candidate = explicit === undefined ? `${cwd}/appsettings.json` : resolve(cwd, explicit);
  let text: string;
  try {
    text = await Deno.readTextFile(candidate);
  } catch (error) {
    if (explicit === undefined && error instanceof Deno.errors.NotFound) {
      return { tree: structuredClone(embeddedDefaults) as Tree, path: null };
    }
    const source = flag !== undefined ? "--config" : "SVC_CONFIG";
    throw new ConfigError(
      "UNREADABLE_FILE",
      `Cannot read configuration file '${candidate}' given by ${source}: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { cause: error },
    );
  }
  return { tree: parseConfigText(text, candidate), path: candidate };
}

/** Parses the text of a configuration file (JSON with comments and trailing commas). */
export function parseConfigText(text: string, path: string): Tree {
  const errors: ParseError[] = [];
  // Windows editors and PowerShell 5's Out-File write a UTF-8 byte-order mark.
  if (text.startsWith("\uFEFF")) text = text.slice(1);
  const tree = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first) {
    const line = text.slice(0, first.offset).split("\n").length;
    throw new ConfigError(
      "INVALID_FILE",
      `Cannot parse configuration file '${path}' at line ${line}: ${
        printParseErrorCode(first.error)
      }`,
    );
  }
  if (tree === null || typeof tree !== "object" || Array.isArray(tree)) {
    throw new ConfigError("INVALID_FILE", `Configuration file '${path}' must hold a JSON object`);
  }
  return tree as Tree;
}

/** Builds a tree from `Section__Sub__Key` variables; numeric segments (`__0`) become array items. */
function envTree(env: Record<string, string>): Tree {
  const tree: Tree = {};
  for (const [name, value] of Object.entries(env)) {
    if (!name.includes("__")) continue;
    const parts = name.split("__");
    if (!SECTIONS.some((s) => s.toLowerCase() === parts[0]!.toLowerCase())) continue;
    let node: Tree = tree;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) node[part] = value;
      else node = (node[part] ??= {}) as Tree;
    });
  }
  return arraysFromIndexes(tree) as Tree;
}

function arraysFromIndexes(node: unknown): unknown {
  if (node === null || typeof node !== "object") return node;
  const entries = Object.entries(node as Tree).map(([k, v]) => [k, arraysFromIndexes(v)] as const);
  if (entries.length > 0 && entries.every(([k]) => /^\d+$/.test(k))) {
    return entries.sort(([a], [b]) => Number(a) - Number(b)).map(([, v]) => v);
  }
  return Object.fromEntries(entries);
}

/** Merges `top` over `base`, matching keys case-insensitively; arrays and scalars replace. */
function mergeTrees(base: Tree, top: Tree): Tree {
  const out: Tree = { ...base };
  for (const [key, value] of Object.entries(top)) {
    const existing = Object.keys(out).find((k) => k.toLowerCase() === key.toLowerCase());
    const current = existing === undefined ? undefined : out[existing];
    const merged = isTree(current) && isTree(value) ? mergeTrees(current, value) : value;
    if (existing !== undefined && existing !== key) delete out[existing];
    out[existing ?? key] = merged;
  }
  return out;
}

function isTree(value: unknown): value is Tree {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Case-insensitive lookup of a `:`-separated key path. */
function lookup(tree: Tree, path: string): unknown {
  let node: unknown = tree;
  for (const part of path.split(":")) {
    if (!isTree(node)) return undefined;
    const key = Object.keys(node).find((k) => k.toLowerCase() === part.toLowerCase());
    if (key === undefined) return undefined;
    node = node[key];
  }
  return node;
}

/** Parses a .NET-style time span (`hh:mm:ss`, `d.hh:mm:ss`, `hh:mm:ss.fff`) into milliseconds. */
export function parseTimeSpan(text: string): number | null {
  const match = /^(?:(\d+)\.)?(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,7}))?$/.exec(text.trim());
  if (!match) return null;
  const [, days = "0", hours, minutes, seconds, fraction = "0"] = match;
  if (Number(minutes) > 59 || Number(seconds) > 59) return null;
  const ms = Number(`0.${fraction}`) * 1000;
  return ((Number(days) * 24 + Number(hours)) * 60 + Number(minutes)) * 60_000 +
    Number(seconds) * 1000 + Math.round(ms);
}

const stringList = z.array(z.string());

class Reader {
  /** Deprecation warnings, one per deprecated key present. */
  readonly warnings: string[] = [];
  /** Where each key read came from. */
  readonly sources: Record<string, SettingSource> = {};

  constructor(readonly tree: Tree, readonly layers: { env: Tree; embedded: boolean }) {}

  #record(name: string, value: unknown): void {
    if (value === undefined || value === null || value === "") {
      this.sources[name] ??= "default";
    } else if (lookup(this.layers.env, name) !== undefined) {
      this.sources[name] = "environment";
    } else {
      this.sources[name] = this.layers.embedded ? "embedded default" : "file";
    }
  }

  #fail(key: string, value: unknown, expected: string): never {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration value for '${key}': expected ${expected}, got ${
        JSON.stringify(value)
      }`,
    );
  }

  /** Shell keys are read from `ShellConfiguration` first, then PoshMcp's `PowerShellConfiguration`. */
  raw(key: string): [string, unknown] {
    let found: [string, unknown] = [key, lookup(this.tree, key)];
    if (found[1] === undefined && key.startsWith("ShellConfiguration:")) {
      const alias = key.replace("ShellConfiguration:", "PowerShellConfiguration:");
      const value = lookup(this.tree, alias);
      if (value !== undefined) found = [alias, value];
    }
    this.#record(found[0], found[1]);
    return found;
  }

  strings(key: string): string[] {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null) return [];
    const parsed = stringList.safeParse(typeof value === "string" ? [value] : value);
    if (!parsed.success) this.#fail(name, value, "an array of strings");
    return parsed.data.filter((s) => s.trim() !== "");
  }

  optionalString(key: string): string | null {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null || value === "") return null;
    if (typeof value !== "string") this.#fail(name, value, "a string");
    return value;
  }

  integer(key: string, fallback: number, min: number): number {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null || value === "") return fallback;
    const n = typeof value === "string" ? Number(value) : value;
    if (typeof n !== "number" || !Number.isInteger(n) || n < min) {
      this.#fail(name, value, `an integer >= ${min}`);
    }
    return n;
  }

  boolean(key: string, fallback: boolean): boolean {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null || value === "") return fallback;
    if (typeof value === "boolean") return value;
    if (typeof value === "string" && /^(true|false)$/i.test(value)) {
      return value.toLowerCase() === "true";
    }
    this.#fail(name, value, "true or false");
  }

  timeSpan(key: string, fallbackMs: number): number {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null || value === "") return fallbackMs;
    const ms = typeof value === "string" ? parseTimeSpan(value) : null;
    if (ms === null || ms <= 0) this.#fail(name, value, 'a positive time span like "00:05:00"');
    return ms;
  }
}

function resolveSettings(
  read: Reader,
  context: { configPath: string | null; overrides: SettingsOverrides; env: Record<string, string> },
): Settings {
  const { configPath, overrides, env } = context;
  const commands = [
    ...read.strings("ShellConfiguration:Commands"),
    ...read.strings("ShellConfiguration:CommandNames"),
  ];
  const shell: ShellSettings = {
    pwshPath: overrides.pwsh ?? env["SVC_PWSH"] ??
      read.optionalString("ShellConfiguration:PwshPath"),
    // PowerShell command names are case-insensitive; keep the first spelling of each.
    commands: commands.filter((c, i) =>
      commands.findIndex((d) => d.toLowerCase() === c.toLowerCase()) === i
    ),
    includePatterns: read.strings("ShellConfiguration:IncludePatterns"),
    excludePatterns: read.strings("ShellConfiguration:ExcludePatterns"),
    modules: read.strings("ShellConfiguration:Modules"),
    startupScript: read.optionalString("ShellConfiguration:Environment:StartupScript"),
    startupScriptPath: read.optionalString("ShellConfiguration:Environment:StartupScriptPath"),
    toolCallTimeoutMs: read.timeSpan("ShellConfiguration:ToolCallTimeout", 300_000),
    maxResultBytes: read.integer("ShellConfiguration:MaxResultBytes", 1_048_576, 1024),
    serializationDepth: read.integer("ShellConfiguration:SerializationDepth", 4, 1),
    commandOverrides: readOverrides(read),
    cacheDirectory: env["SVC_CACHE_DIR"] ??
      read.optionalString("ShellConfiguration:CacheDirectory"),
    workerStartTimeoutMs: read.timeSpan("ShellConfiguration:WorkerStartTimeout", 120_000),
  };
  const pool = readPool(read);
  return {
    configPath,
    pool,
    http: readHttp(read, overrides, env),
    auth: readAuth(read),
    transport: parseTransport(overrides.transport ?? env["SVC_TRANSPORT"] ?? "stdio"),
    shell,
    stopTimeoutMs: pool.stopTimeoutMs,
    logLevel: parseLogLevel(
      overrides.logLevel ?? env["SVC_LOG_LEVEL"] ??
        read.optionalString("Logging:LogLevel:Default") ??
        "Information",
    ),
    logFormat: parseLogFormat(overrides.logFormat ?? env["SVC_LOG_FORMAT"] ?? "text"),
    warnings: read.warnings,
    sources: { ...read.sources, ...flagSources(overrides, env) },
  };
}

/** Sources of the settings that flags and `SVC_*` variables decide. */
function flagSources(
  overrides: SettingsOverrides,
  env: Record<string, string>,
): Record<string, SettingSource> {
  const out: Record<string, SettingSource> = {};
  const pairs: [string, string | undefined, string][] = [
    ["transport", overrides.transport, "SVC_TRANSPORT"],
    ["pwsh", overrides.pwsh, "SVC_PWSH"],
    ["logLevel", overrides.logLevel, "SVC_LOG_LEVEL"],
    ["logFormat", overrides.logFormat, "SVC_LOG_FORMAT"],
    ["host", overrides.host, "SVC_HOST"],
    ["port", overrides.port, "SVC_PORT"],
    ["mcpPath", overrides.mcpPath, "SVC_MCP_PATH"],
    ["config", overrides.config, "SVC_CONFIG"],
  ];
  for (const [name, flag, variable] of pairs) {
    out[`--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`] = flag !== undefined
      ? "flag"
      : env[variable] !== undefined
      ? "environment"
      : "default";
  }
  return out;
}

function readHttp(
  read: Reader,
  overrides: SettingsOverrides,
  env: Record<string, string>,
): HttpSettings {
  const portText = overrides.port ?? env["SVC_PORT"];
  let port = 8080;
  if (portText !== undefined) {
    port = Number(portText);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new ConfigError(
        "INVALID_VALUE",
        `Invalid port '${portText}': expected an integer from 0 to 65535 (flag --port, env SVC_PORT)`,
      );
    }
  }
  const modeText = read.optionalString("McpServer:HttpTransportMode") ?? "Stateless";
  const mode = (["Stateless", "Stateful"] as const).find((m) =>
    m.toLowerCase() === modeText.toLowerCase()
  );
  if (!mode) {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration value for 'McpServer:HttpTransportMode': expected "Stateless" or "Stateful", got "${modeText}"`,
    );
  }
  let mcpPath = overrides.mcpPath ?? env["SVC_MCP_PATH"] ?? null;
  if (mcpPath !== null) {
    mcpPath = `/${mcpPath.replace(/^\/+/, "")}`.replace(/\/+$/, "") || "/";
  }
  return {
    host: overrides.host ?? env["SVC_HOST"] ?? "127.0.0.1",
    port,
    mcpPath,
    mode,
    idleSessionTimeoutMs: read.integer("McpServer:IdleSessionTimeoutSeconds", 600, 1) * 1000,
    enableLegacySse: read.boolean("McpServer:EnableLegacySse", false),
    maxRequestBodyBytes: read.integer("McpServer:MaxRequestBodyBytes", 4 * 1024 * 1024, 1),
    allowedOrigins: read.strings("Authentication:Cors:AllowedOrigins"),
    allowedHosts: read.strings("McpServer:AllowedHosts"),
  };
}

function readAuth(read: Reader): AuthSettings {
  const key = (name: string) => `Authentication:${name}`;
  const schemesNode = lookup(read.tree, key("Schemes"));
  const schemes: AuthSettings["schemes"] = {};
  for (const name of isTree(schemesNode) ? Object.keys(schemesNode) : []) {
    schemes[name] = readScheme(read, `${key("Schemes")}:${name}`);
  }
  const names = Object.keys(schemes);
  const enabled = read.boolean(key("Enabled"), false);
  let defaultScheme = read.optionalString(key("DefaultScheme"));
  if (defaultScheme === null && names.length === 1) defaultScheme = names[0]!;
  if (defaultScheme !== null) {
    const match = names.find((n) => n.toLowerCase() === defaultScheme!.toLowerCase());
    if (match === undefined && enabled) {
      throw new ConfigError(
        "INVALID_VALUE",
        `Invalid configuration value for '${
          key("DefaultScheme")
        }': no scheme named '${defaultScheme}' under '${key("Schemes")}' (found: ${
          names.join(", ") || "none"
        })`,
      );
    }
    defaultScheme = match ?? defaultScheme;
  }
  if (enabled && names.length === 0) {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration: '${key("Enabled")}' is true but '${
        key("Schemes")
      }' configures no scheme`,
    );
  }
  if (enabled && defaultScheme === null) {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration: '${key("DefaultScheme")}' must name one of the schemes (${
        names.join(", ")
      })`,
    );
  }
  const resource = read.optionalString(key("ProtectedResource:Resource"));
  return {
    enabled,
    defaultScheme,
    requireAuthentication: read.boolean(key("DefaultPolicy:RequireAuthentication"), true),
    requiredScopes: read.strings(key("DefaultPolicy:RequiredScopes")),
    requiredRoles: read.strings(key("DefaultPolicy:RequiredRoles")),
    schemes,
    protectedResource: resource === null ? null : {
      resource,
      resourceName: read.optionalString(key("ProtectedResource:ResourceName")),
      authorizationServers: read.strings(key("ProtectedResource:AuthorizationServers")),
      scopesSupported: read.strings(key("ProtectedResource:ScopesSupported")),
    },
    logArguments: read.boolean(key("Audit:LogArguments"), false),
  };
}

function readScheme(read: Reader, key: string): ApiKeySchemeSettings | JwtSchemeSettings {
  const type = read.optionalString(`${key}:Type`) ?? "JwtBearer";
  if (type.toLowerCase() === "apikey") {
    const keysNode = lookup(read.tree, `${key}:Keys`);
    const keys: ApiKeySettings[] = [];
    for (const id of isTree(keysNode) ? Object.keys(keysNode) : []) {
      const entry = `${key}:Keys:${id}`;
      const value = read.optionalString(`${entry}:Value`);
      const digest = read.optionalString(`${entry}:Sha256`);
      let sha256: Uint8Array;
      let name = id;
      if (digest !== null) {
        if (!/^[0-9a-fA-F]{64}$/.test(digest)) {
          throw new ConfigError(
            "INVALID_VALUE",
            `Invalid configuration value for '${entry}:Sha256': expected 64 hexadecimal characters`,
          );
        }
        sha256 = Uint8Array.from(digest.match(/../g)!.map((h) => parseInt(h, 16)));
      } else {
        // PoshMcp files use the key itself as the entry name; it must never be logged.
        const secret = value ?? id;
        sha256 = new Uint8Array(createHash("sha256").update(secret).digest());
        if (value === null) name = `api-key-${Buffer.from(sha256).toString("hex").slice(0, 8)}`;
      }
      keys.push({
        id: name,
        sha256,
        scopes: read.strings(`${entry}:Scopes`),
        roles: read.strings(`${entry}:Roles`),
      });
    }
    if (keys.length === 0) {
      throw new ConfigError(
        "INVALID_VALUE",
        `Invalid configuration: ApiKey scheme '${key}' has no entries under '${key}:Keys'`,
      );
    }
    return {
      type: "ApiKey",
      headerName: read.optionalString(`${key}:HeaderName`) ?? "X-API-Key",
      keys,
    };
  }
  if (type.toLowerCase() !== "jwtbearer") {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration value for '${key}:Type': expected "ApiKey" or "JwtBearer", got "${type}"`,
    );
  }
  const authority = read.optionalString(`${key}:Authority`);
  const jwksUri = read.optionalString(`${key}:JwksUri`);
  if (authority === null && jwksUri === null) {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration: JwtBearer scheme '${key}' needs '${key}:Authority' or '${key}:JwksUri'`,
    );
  }
  const audiences = [
    ...(read.optionalString(`${key}:Audience`) ?? "").split(/\s+/).filter(Boolean),
    ...read.strings(`${key}:ValidAudiences`),
  ];
  if (audiences.length === 0) {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration: JwtBearer scheme '${key}' needs '${key}:Audience' or '${key}:ValidAudiences' (tokens for other resources must be refused)`,
    );
  }
  const issuers = read.strings(`${key}:ValidIssuers`);
  if (authority === null && issuers.length === 0) {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration: JwtBearer scheme '${key}' with only '${key}:JwksUri' needs '${key}:ValidIssuers'`,
    );
  }
  const loopback = (url: string | null) =>
    url !== null && /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:|\/|$)/.test(url);
  return {
    type: "JwtBearer",
    authority,
    jwksUri,
    audiences,
    issuers,
    clockSkewSeconds: read.integer(`${key}:ClockSkewSeconds`, 60, 0),
    scopeClaim: read.optionalString(`${key}:ClaimsMapping:ScopeClaim`),
    roleClaim: read.optionalString(`${key}:ClaimsMapping:RoleClaim`) ?? "roles",
    nameClaim: read.optionalString(`${key}:ClaimsMapping:NameClaim`),
    requireHttpsMetadata: read.boolean(
      `${key}:RequireHttpsMetadata`,
      !(loopback(authority) || loopback(jwksUri)),
    ),
  };
}

/** Version 1 keys (SPEC §9.4): each present one warns once, and applies only when its v2 key is absent. */
const V1_KEYS: Record<string, string> = {
  SessionRunspaceCapacity: "MaxPoolSize",
  SessionRunspaceWarmStandbyCount: "MinPoolSize' and 'McpServer:RunspacePool:EagerWarmCount",
  SessionRunspaceIdleTtlSeconds: "IdleTtl",
  SessionRunspaceSweepIntervalSeconds: "SweepInterval",
  SessionRunspaceAcquisitionTimeoutSeconds: "AcquisitionTimeout",
};

function readV1(read: Reader): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, replacement] of Object.entries(V1_KEYS)) {
    const key = `McpServer:${name}`;
    if (read.raw(key)[1] === undefined) continue;
    read.warnings.push(
      `Configuration key '${key}' is deprecated and will be removed in the next major version; use 'McpServer:RunspacePool:${replacement}' instead${
        name.endsWith("Seconds") ? " (as a time span, hh:mm:ss)" : ""
      }`,
    );
    out[name] = read.integer(key, 0, 0);
  }
  return out;
}

function readPool(read: Reader): PoolSettings {
  const key = (name: string) => `McpServer:RunspacePool:${name}`;
  const v1 = readV1(read);
  const seconds = (name: string, fallback: number) =>
    v1[name] !== undefined ? v1[name]! * 1000 : fallback;
  const pool: PoolSettings = {
    maxPoolSize: read.integer(key("MaxPoolSize"), v1.SessionRunspaceCapacity ?? 16, 1),
    minPoolSize: read.integer(key("MinPoolSize"), v1.SessionRunspaceWarmStandbyCount ?? 2, 0),
    eagerWarmCount: read.integer(key("EagerWarmCount"), v1.SessionRunspaceWarmStandbyCount ?? 2, 0),
    idleTtlMs: read.timeSpan(key("IdleTtl"), seconds("SessionRunspaceIdleTtlSeconds", 300_000)),
    sweepIntervalMs: read.timeSpan(
      key("SweepInterval"),
      seconds("SessionRunspaceSweepIntervalSeconds", 30_000),
    ),
    acquisitionTimeoutMs: read.timeSpan(
      key("AcquisitionTimeout"),
      seconds("SessionRunspaceAcquisitionTimeoutSeconds", 15_000),
    ),
    stopTimeoutMs: read.timeSpan(key("StopTimeout"), 5_000),
    shutdownDrainTimeoutMs: read.timeSpan(key("ShutdownDrainTimeout"), 30_000),
    replenishCheckIntervalMs: read.timeSpan(key("ReplenishCheckInterval"), 5_000),
  };
  if (pool.minPoolSize > pool.maxPoolSize) {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration value for '${
        key("MinPoolSize")
      }': ${pool.minPoolSize} is larger than '${key("MaxPoolSize")}' (${pool.maxPoolSize})`,
    );
  }
  if (pool.eagerWarmCount > pool.maxPoolSize) {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration value for '${
        key("EagerWarmCount")
      }': ${pool.eagerWarmCount} is larger than '${key("MaxPoolSize")}' (${pool.maxPoolSize})`,
    );
  }
  return pool;
}

function readOverrides(read: Reader): Record<string, CommandOverride> {
  const [name, value] = read.raw("ShellConfiguration:CommandOverrides");
  const legacy = read.raw("ShellConfiguration:FunctionOverrides")[1];
  const merged = { ...(isTree(legacy) ? legacy : {}), ...(isTree(value) ? value : {}) };
  if (value !== undefined && value !== null && !isTree(value)) {
    throw new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration value for '${name}': expected an object`,
    );
  }
  const out: Record<string, CommandOverride> = {};
  for (const command of Object.keys(merged)) {
    const key = `${name}:${command}`;
    const override: CommandOverride = {};
    const timeout = lookup(read.tree, `${key}:ToolCallTimeout`);
    if (timeout !== undefined && timeout !== null && timeout !== "") {
      override.toolCallTimeoutMs = read.timeSpan(`${key}:ToolCallTimeout`, 0);
    }
    const roles = lookup(read.tree, `${key}:RequiredRoles`);
    if (roles !== undefined) override.requiredRoles = read.strings(`${key}:RequiredRoles`);
    out[command] = override;
  }
  return out;
}

/** Parses a transport name; anything but `stdio` or `http` is a configuration error. */
export function parseTransport(value: string): Transport {
  const t = value.trim().toLowerCase();
  if (t === "stdio" || t === "http") return t;
  throw new ConfigError(
    "INVALID_VALUE",
    `Invalid transport '${value}': expected "stdio" or "http" (flag --transport, env SVC_TRANSPORT)`,
  );
}

function parseLogLevel(value: string): LogLevel {
  const level = LOG_LEVELS[value.trim().toLowerCase()];
  if (level) return level;
  throw new ConfigError(
    "INVALID_VALUE",
    `Invalid log level '${value}': expected one of Trace, Debug, Information, Warning, Error, Critical (key Logging:LogLevel:Default, env SVC_LOG_LEVEL)`,
  );
}

function parseLogFormat(value: string): LogFormat {
  const f = value.trim().toLowerCase();
  if (f === "text" || f === "json") return f;
  throw new ConfigError(
    "INVALID_VALUE",
    `Invalid log format '${value}': expected "text" or "json" (flag --log-format, env SVC_LOG_FORMAT)`,
  );
}

/**
 * Finds the `CommandOverrides` entry of the first of `names` that has one, matching keys
 * case-insensitively (authorization passes the tool name, then the command name).
 */
export function overrideFor(shell: ShellSettings, ...names: string[]): CommandOverride | undefined {
  const keys = Object.keys(shell.commandOverrides);
  for (const name of names) {
    const key = keys.find((k) => k.toLowerCase() === name.toLowerCase());
    if (key !== undefined) return shell.commandOverrides[key];
  }
  return undefined;
}
