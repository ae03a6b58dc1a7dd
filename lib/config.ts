/**
 * Settings of svc, read into typed objects. Layers, highest first: CLI flags, environment variables
 * (`SVC_*` and `Section__Sub__Key`), the configuration file (JSONC), the defaults of
 * lib/config_schema.ts (and lib/config_flags.ts), where every setting's default lives. Keys are
 * matched case-insensitively, as .NET configuration binders do, so PoshMcp files work unchanged
 * (`PowerShellConfiguration` is read as `ShellConfiguration`, `CommandNames` as `Commands`).
 *
 * @module
 */
import { type AuthSettings, readAuth } from "./config_auth.ts";
import { type HttpLimits, readHttpLimits } from "./config_http_limits.ts";
import { type PoolSettings, readPool } from "./config_pool.ts";
import { dirname, isAbsolute, resolve } from "node:path";
import { hintFor, Reader, type SettingSource } from "./config_reader.ts";
import { type CommandOverride, readOverrides } from "./config_overrides.ts";
import { FLAGS, flagVariable } from "./config_flags.ts";
import { HTTP_MODES, settingOf, TOOL_GRANULARITIES } from "./config_schema.ts";
import { checkConfigShape } from "./config_shape.ts";
import { envTree, mergeTrees, readConfigFile } from "./config_source.ts";
import { allProblems, ConfigError } from "./errors.ts";
import type { LogFormat, LogLevel } from "./log.ts";
import type { WorkerEnvironmentRules } from "./worker_env.ts";

/** Transport served by `svc serve`. */
export type Transport = "stdio" | "http";

/** Bounds on the work one call's arguments may ask for, checked before a worker is leased. */
export interface RequestLimits {
  /** Most names in `_RequestedProperties`. @default 64 (`ShellConfiguration:MaxRequestedProperties`) */
  maxRequestedProperties: number;
  /** Most wildcard names in `_RequestedProperties`. @default 8 (`ShellConfiguration:MaxRequestedPropertyWildcards`) */
  maxRequestedPropertyWildcards: number;
  /** Most items in any array in an argument, nested ones included. @default 10000 (`ShellConfiguration:MaxArgumentItems`) */
  maxArgumentItems: number;
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
  /**
   * How long one prompt of a call waits for the user's answer in ms; the wait does not count against
   * `toolCallTimeoutMs`. @default 120000 (`ShellConfiguration:UserInputTimeout`, "00:02:00")
   */
  userInputTimeoutMs: number;
  /** Largest result text in bytes before it is cut. @default 24576 (`ShellConfiguration:MaxResultBytes`) */
  maxResultBytes: number;
  /** `ConvertTo-Json -Depth` for output objects. @default 4 (`ShellConfiguration:SerializationDepth`) */
  serializationDepth: number;
  /** What one call may ask of a worker (see {@linkcode RequestLimits}). */
  requestLimits: RequestLimits;
  /**
   * Reduce output objects to what PowerShell shows for their type (DefaultDisplayPropertySet, else
   * the first table or list view). @default true (`ShellConfiguration:UseDefaultDisplayProperties`,
   * also PoshMcp's `ShellConfiguration:Performance:UseDefaultDisplayProperties`)
   */
  useDefaultDisplayProperties: boolean;
  /**
   * One tool per parameter set (`ParameterSet`) or one per command covering all its sets
   * (`Command`, for clients with a tool limit). @default "ParameterSet" (`ShellConfiguration:ToolGranularity`)
   */
  toolGranularity: ToolGranularity;
  /** Per-command overrides, keyed as written (matched case-insensitively). @default {} */
  commandOverrides: Record<string, CommandOverride>;
  /** Directory of the catalog cache. @default the user cache dir + "/svc" (`ShellConfiguration:CacheDirectory`, env `SVC_CACHE_DIR`) */
  cacheDirectory: string | null;
  /**
   * Directory of the compiled half of the worker host (`lib/host/assembly.ps1`). It depends only on
   * svc and the pwsh build, never on the configuration, so it may be shared where catalogs are not.
   * @default the catalog cache directory (`ShellConfiguration:HostCacheDirectory`, env `SVC_HOST_CACHE_DIR`)
   */
  hostCacheDirectory: string | null;
  /** Time to start a worker and run its startup script, in ms. @default 120000 (`ShellConfiguration:WorkerStartTimeout`) */
  workerStartTimeoutMs: number;
  /**
   * Keep the native processes a call started once it ends (Linux; elsewhere they are always kept).
   * @default false: they are ended with their trees (`ShellConfiguration:KeepNativeProcesses`)
   */
  keepNativeProcesses: boolean;
  /**
   * Which environment variables workers get: svc's own settings and credentials never, unless
   * passed (`lib/worker_env.ts`). @default no extra rules (`ShellConfiguration:Environment:PassVariables`, `…:RemoveVariables`)
   */
  workerEnvironment: WorkerEnvironmentRules;
}

/** How commands become tools (`ShellConfiguration:ToolGranularity`). */
export type ToolGranularity = (typeof TOOL_GRANULARITIES)[number];

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

/** All settings svc runs with. */
export interface Settings {
  /** The configuration file read, or null for the embedded default. */
  configPath: string | null;
  /** Transport of `svc serve`. @default "stdio" (flag `--transport`, env `SVC_TRANSPORT`) */
  transport: Transport;
  /** Shell settings. */
  shell: ShellSettings;
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
  /** The value each setting was given, by key path (flags by their name); undefined when unset. */
  values: Record<string, unknown>;
}

export { parseTimeSpan, type SettingSource } from "./config_reader.ts";
export { parseConfigText } from "./config_source.ts";
export type { ApiKeySchemeSettings, AuthSettings, JwtSchemeSettings } from "./config_auth.ts";

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
  /** `--tls-certificate` */
  tlsCertificate?: string | undefined;
  /** `--tls-key` */
  tlsKey?: string | undefined;
  /** `--allow-anonymous` ("true" when given) */
  allowAnonymous?: string | undefined;
}

/** Options of {@linkcode loadSettings}. */
export interface LoadSettingsOptions {
  /** Environment to read. @default Deno.env.toObject() */
  env?: Record<string, string>;
  /** Directory where `./appsettings.json` is looked for. @default Deno.cwd() */
  cwd?: string;
}

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
  const warnings: string[] = [];
  const origin = configPath ? `'${configPath}'` : "the embedded default configuration";
  const shape = checkConfigShape(fileTree, origin);
  const envShape = checkConfigShape(envTree(env), "environment variables", {
    listsFromScalars: true,
  });
  warnings.push(...shape.warnings, ...envShape.warnings);
  const fromEnv = envShape.canonical;
  if (env["SVC_SESSION_TIMEOUT_MINUTES"] !== undefined) {
    warnings.push(
      "SVC_SESSION_TIMEOUT_MINUTES is set but not used since version 2: sessions no longer own a worker; set McpServer:IdleSessionTimeoutSeconds for Stateful session expiry",
    );
  }
  const tree = mergeTrees(fileTree, fromEnv);
  const read = new Reader(tree, { env: fromEnv, file: configPath });
  // Every problem is reported at once (the shape check's first, then the reads'), one per key.
  for (const error of shape.errors) {
    read.report(
      new ConfigError(
        "INVALID_VALUE",
        `Invalid configuration value for '${error.path}' in ${origin}: ${error.message}, got ${
          JSON.stringify(error.value)
        }${hintFor(error.path, error.value)}`,
      ),
      error.path,
    );
  }
  for (const error of envShape.errors) {
    read.report(
      new ConfigError(
        "INVALID_VALUE",
        `Invalid value of environment variable ${
          error.path.replaceAll(":", "__")
        }: ${error.message}, got ${JSON.stringify(error.value)}${hintFor(error.path, error.value)}`,
      ),
      error.path,
    );
  }
  let settings: Settings | null = null;
  try {
    settings = resolveSettings(read, { configPath, overrides, env, cwd });
  } catch (error) {
    // A value the shape check already found wrong may trip a read in a way it does not foresee;
    // the problems found say why, and an error of svc's own still surfaces when there are none.
    if (error instanceof ConfigError) read.report(error);
    else if (read.problems.length === 0) throw error;
  }
  if (read.problems.length > 0 || settings === null) throw allProblems(read.problems);
  settings.warnings.unshift(...warnings);
  return settings;
}

function resolveSettings(
  read: Reader,
  context: {
    configPath: string | null;
    overrides: SettingsOverrides;
    env: Record<string, string>;
    cwd: string;
  },
): Settings {
  const { configPath, overrides, env, cwd } = context;
  // A section whose checks across keys fail is kept as a problem and the others are still read;
  // its stand-in is never used, since loadSettings throws when there is any problem.
  const later = <T>(section: () => T): T => read.attempt(section, undefined as T);
  const given: Given = (name) => overrides[name] ?? env[flagVariable(FLAGS[name])];
  // The variable named in lib/config_schema.ts that comes before a key.
  const variable = (key: string) => env[settingOf(key)!.env!];
  const named = [
    ...read.strings("ShellConfiguration:Commands"),
    ...read.strings("ShellConfiguration:CommandNames"),
  ];
  const commands = [...named, ...readFunctionNames(read, named)];
  const shell: ShellSettings = {
    // An empty SVC_PWSH (`SVC_PWSH= svc …`) means unset, as it does for bin/pwsh.
    pwshPath: overrides.pwsh ?? (variable("ShellConfiguration:PwshPath") || null) ??
      read.path("ShellConfiguration:PwshPath", cwd, { bareIsName: true }),
    // PowerShell command names are case-insensitive; keep the first spelling of each.
    commands: commands.filter((c, i) =>
      commands.findIndex((d) => d.toLowerCase() === c.toLowerCase()) === i
    ),
    includePatterns: read.strings("ShellConfiguration:IncludePatterns"),
    excludePatterns: read.strings("ShellConfiguration:ExcludePatterns"),
    modules: readModules(read, cwd),
    startupScript: read.optionalString("ShellConfiguration:Environment:StartupScript"),
    startupScriptPath: readStartupScriptPath(read, cwd),
    toolCallTimeoutMs: read.timeSpan("ShellConfiguration:ToolCallTimeout"),
    userInputTimeoutMs: read.timeSpan("ShellConfiguration:UserInputTimeout"),
    maxResultBytes: read.integer("ShellConfiguration:MaxResultBytes"),
    serializationDepth: read.integer("ShellConfiguration:SerializationDepth"),
    requestLimits: {
      maxRequestedProperties: read.integer("ShellConfiguration:MaxRequestedProperties"),
      maxRequestedPropertyWildcards: read.integer(
        "ShellConfiguration:MaxRequestedPropertyWildcards",
      ),
      maxArgumentItems: read.integer("ShellConfiguration:MaxArgumentItems"),
    },
    useDefaultDisplayProperties: read.boolean(
      "ShellConfiguration:UseDefaultDisplayProperties",
      read.boolean("ShellConfiguration:Performance:UseDefaultDisplayProperties"),
    ),
    toolGranularity: read.choice("ShellConfiguration:ToolGranularity", TOOL_GRANULARITIES),
    commandOverrides: later(() => readOverrides(read)),
    cacheDirectory: variable("ShellConfiguration:CacheDirectory") ??
      read.path("ShellConfiguration:CacheDirectory", cwd),
    hostCacheDirectory: variable("ShellConfiguration:HostCacheDirectory") ??
      read.path("ShellConfiguration:HostCacheDirectory", cwd),
    workerStartTimeoutMs: read.timeSpan("ShellConfiguration:WorkerStartTimeout"),
    keepNativeProcesses: read.boolean("ShellConfiguration:KeepNativeProcesses"),
    workerEnvironment: {
      pass: read.strings("ShellConfiguration:Environment:PassVariables"),
      remove: read.strings("ShellConfiguration:Environment:RemoveVariables"),
    },
  };
  const pool = later(() => readPool(read));
  const flags = flagSettings(overrides, env);
  return {
    configPath,
    pool,
    http: later(() => readHttp(read, given, cwd)),
    auth: later(() => readAuth(read)),
    transport: later(() => parseTransport(given("transport") ?? FLAGS.transport.default)),
    shell,
    logLevel: later(() =>
      parseLogLevel(given("logLevel") ?? read.text("Logging:LogLevel:Default"))
    ),
    logFormat: later(() => parseLogFormat(given("logFormat") ?? FLAGS.logFormat.default)),
    warnings: read.warnings,
    sources: { ...read.sources, ...flags.sources },
    values: { ...read.values, ...flags.values },
  };
}

/** A flag's value, else its variable's (lib/config_flags.ts names both); undefined when neither. */
type Given = (name: keyof typeof FLAGS) => string | undefined;

/** "flag --port, env SVC_PORT", for messages. */
function flagWords(name: keyof typeof FLAGS): string {
  return `flag ${FLAGS[name].flag}, env ${flagVariable(FLAGS[name])}`;
}

/**
 * Where each setting that a flag or its `SVC_*` variable decides came from, and its value as given
 * (undefined = the default), keyed by the flag's name (`--log-level`).
 */
function flagSettings(
  overrides: SettingsOverrides,
  env: Record<string, string>,
): { sources: Record<string, SettingSource>; values: Record<string, unknown> } {
  const sources: Record<string, SettingSource> = {};
  const values: Record<string, unknown> = {};
  for (const name of Object.keys(FLAGS) as (keyof typeof FLAGS)[]) {
    const { flag } = FLAGS[name];
    const variable = flagVariable(FLAGS[name]);
    sources[flag] = overrides[name] !== undefined
      ? "flag"
      : env[variable] !== undefined
      ? "environment"
      : "default";
    values[flag] = overrides[name] ?? env[variable];
  }
  return { sources, values };
}

function readHttp(read: Reader, given: Given, cwd: string): HttpSettings {
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
function readTlsFiles(read: Reader, given: Given, cwd: string): TlsFiles | null {
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

function readAllowAnonymous(read: Reader, given: Given): boolean {
  const value = given("allowAnonymous");
  if (value === undefined || value === "") return read.boolean("McpServer:AllowAnonymous");
  if (/^(true|1)$/i.test(value)) return true;
  if (/^(false|0)$/i.test(value)) return false;
  throw new ConfigError(
    "INVALID_VALUE",
    `Invalid value '${value}' of ${flagVariable(FLAGS.allowAnonymous)}: expected true or false`,
  );
}

/**
 * `Modules`: a name is looked up by PowerShell, a path (with a separator) is made absolute by the
 * rule of `Reader.path`, so `./MyModule` means the same wherever svc is started.
 */
function readModules(read: Reader, cwd: string): string[] {
  return read.paths("ShellConfiguration:Modules", cwd, { bareIsName: true });
}

/**
 * `StartupScriptPath`, absolute by the rule of `Reader.path`; a file that is not there is a
 * configuration problem naming the path looked at, since PowerShell would take a bare name for a
 * command and say only that no such command exists.
 */
function readStartupScriptPath(read: Reader, cwd: string): string | null {
  const key = "ShellConfiguration:Environment:StartupScriptPath";
  const path = read.path(key, cwd);
  if (path === null) return null;
  let isFile = false;
  try {
    isFile = Deno.statSync(path).isFile;
  } catch {
    isFile = false;
  }
  if (!isFile) {
    const [name, given] = read.raw(key);
    const base = read.baseFor(key, cwd);
    const rule = isAbsolute(String(given))
      ? ""
      : read.layers.file !== null && base === dirname(read.layers.file)
      ? " (a relative path is resolved against the configuration file's folder)"
      : " (a relative path is resolved against the current directory)";
    read.report(
      read.invalid(name, `no file at '${path}'${rule}, got ${JSON.stringify(given)}`),
      name,
    );
  }
  return path;
}

/**
 * PoshMcp's deprecated `FunctionNames`: as in PoshMcp, its commands are offered only when neither
 * `Commands` nor `CommandNames` names any, and it always warns.
 */
function readFunctionNames(read: Reader, commands: string[]): string[] {
  const [name, value] = read.raw("ShellConfiguration:FunctionNames");
  if (value === undefined || value === null) return [];
  const names = read.strings(name);
  read.warnings.push(
    `Configuration key '${name}' is deprecated and will be removed in the next major version; use 'ShellConfiguration:Commands' instead${
      commands.length > 0
        ? " (it is ignored, as in PoshMcp, because Commands or CommandNames is set)"
        : ""
    }`,
  );
  return commands.length > 0 ? [] : names;
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

/** Parses a transport name; anything but `stdio` or `http` is a configuration error. */
function parseTransport(value: string): Transport {
  const t = value.trim().toLowerCase();
  if (t === "stdio" || t === "http") return t;
  throw new ConfigError(
    "INVALID_VALUE",
    `Invalid transport '${value}': expected "stdio" or "http" (${flagWords("transport")})`,
  );
}

function parseLogLevel(value: string): LogLevel {
  const level = LOG_LEVELS[value.trim().toLowerCase()];
  if (level) return level;
  throw new ConfigError(
    "INVALID_VALUE",
    `Invalid log level '${value}': expected one of Trace, Debug, Information, Warning, Error, Critical (key ${FLAGS.logLevel.key}, env ${
      flagVariable(FLAGS.logLevel)
    })`,
  );
}

function parseLogFormat(value: string): LogFormat {
  const f = value.trim().toLowerCase();
  if (f === "text" || f === "json") return f;
  throw new ConfigError(
    "INVALID_VALUE",
    `Invalid log format '${value}': expected "text" or "json" (${flagWords("logFormat")})`,
  );
}
