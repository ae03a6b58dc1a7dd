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
import { type PoolSettings, readPool } from "./config_pool.ts";
import { dirname, isAbsolute } from "node:path";
import { hintFor, Reader, type SettingSource } from "./config_reader.ts";
import { type CommandOverride, type PromptsAnsweredBy, readOverrides } from "./config_overrides.ts";
import { readResources, type ResourceSetting } from "./config_resources.ts";
import { FLAGS, flagVariable, flagWords, type GivenFlag } from "./config_flags.ts";
import { type HttpSettings, readHttp } from "./config_http.ts";
import {
  CONFIRM_LEVELS,
  type ConfirmLevel,
  PROMPT_ANSWERERS,
  settingOf,
  TOOL_GRANULARITIES,
} from "./config_schema.ts";
import { checkConfigShape } from "./config_shape.ts";
import { envTree, mergeTrees, readConfigFile } from "./config_source.ts";
import { allProblems, ConfigError } from "./errors.ts";
import type { LogFormat, LogLevel } from "./log.ts";

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

/**
 * Which environment variables pass to workers besides the default rule, which withholds every
 * variable svc reads as a setting or credential (`lib/worker_env.ts`).
 */
export interface WorkerEnvironmentRules {
  /** Names or wildcards that pass even though svc reads them. @default [] (`ShellConfiguration:Environment:PassVariables`) */
  pass: string[];
  /** Names or wildcards removed as well. @default [] (`ShellConfiguration:Environment:RemoveVariables`) */
  remove: string[];
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
  /**
   * Command names offered as MCP prompts (`lib/catalog_prompts.ts`). @default []
   * (`ShellConfiguration:PromptCommands`)
   */
  promptCommands: string[];
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
  /**
   * Who may answer the commands' prompts: only the client's user, or the caller too (`Confirm:
   * false`, answers sent with the call). @default "User" (`ShellConfiguration:PromptsAnsweredBy`)
   */
  promptsAnsweredBy: PromptsAnsweredBy;
  /**
   * PowerShell's `$ConfirmPreference` at every call: a command whose `ConfirmImpact` reaches it
   * asks for confirmation. @default "High" (`ShellConfiguration:ConfirmPreference`)
   */
  confirmPreference: ConfirmLevel;
  /** Per-command overrides, keyed as written (matched case-insensitively). @default {} */
  commandOverrides: Record<string, CommandOverride>;
  /** Resources backed by commands (`ShellConfiguration:Resources`). @default none */
  resources?: ResourceSetting[];
  /**
   * What is kept of output cut at `maxResultBytes`, readable as a resource its result links to
   * (`lib/result_pages.ts`). @default 96 KiB a call (4 pages of the default cap), 16 MiB in all, for 10 minutes
   * (`ShellConfiguration:ResultResources:MaxBytes`, `…:TotalBytes`, `…:Ttl`)
   */
  resultResources?: { maxBytes: number; totalBytes: number; ttlMs: number };
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
   * Watch the files the tools' code comes from and reload on a change (`lib/catalog_watch.ts`).
   * @default true over stdio, false over HTTP (`ShellConfiguration:ReloadOnChange`)
   */
  reloadOnChange: boolean;
  /**
   * Which environment variables workers get: svc's own settings and credentials never, unless
   * passed (`lib/worker_env.ts`). @default no extra rules (`ShellConfiguration:Environment:PassVariables`, `…:RemoveVariables`)
   */
  workerEnvironment: WorkerEnvironmentRules;
}

/** How commands become tools (`ShellConfiguration:ToolGranularity`). */
export type ToolGranularity = (typeof TOOL_GRANULARITIES)[number];

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
  const given: GivenFlag = (name) => overrides[name] ?? env[flagVariable(FLAGS[name])];
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
    promptCommands: read.strings("ShellConfiguration:PromptCommands"),
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
    promptsAnsweredBy: read.choice("ShellConfiguration:PromptsAnsweredBy", PROMPT_ANSWERERS),
    confirmPreference: read.choice("ShellConfiguration:ConfirmPreference", CONFIRM_LEVELS),
    commandOverrides: later(() => readOverrides(read)),
    resources: later(() => readResources(read)),
    resultResources: {
      maxBytes: read.integer("ShellConfiguration:ResultResources:MaxBytes"),
      totalBytes: read.integer("ShellConfiguration:ResultResources:TotalBytes"),
      ttlMs: read.timeSpan("ShellConfiguration:ResultResources:Ttl"),
    },
    cacheDirectory: variable("ShellConfiguration:CacheDirectory") ??
      read.path("ShellConfiguration:CacheDirectory", cwd),
    hostCacheDirectory: variable("ShellConfiguration:HostCacheDirectory") ??
      read.path("ShellConfiguration:HostCacheDirectory", cwd),
    workerStartTimeoutMs: read.timeSpan("ShellConfiguration:WorkerStartTimeout"),
    keepNativeProcesses: read.boolean("ShellConfiguration:KeepNativeProcesses"),
    reloadOnChange: read.boolean(
      "ShellConfiguration:ReloadOnChange",
      (given("transport") ?? FLAGS.transport.default) === "stdio",
    ),
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
  // PowerShell's words for its streams are a PowerShell user's first guess.
  const meant = /^verbose$/i.test(value.trim()) ? "; PowerShell's Verbose is Debug here" : "";
  throw new ConfigError(
    "INVALID_VALUE",
    `Invalid log level '${value}': expected one of Trace, Debug, Information, Warning, Error, Critical (${
      flagWords("logLevel")
    }, key ${FLAGS.logLevel.key})${meant}`,
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
