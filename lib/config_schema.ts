/**
 * Every setting of svc, once: the shape of `appsettings.json` as a zod schema whose leaves carry
 * each key's default, minimum, description and `SVC_*` variable (the command-line flags are in
 * lib/config_flags.ts). Everything else takes them from here: the reads (`Reader` looks the default
 * and minimum up by key), the JSON Schema shipped as `appsettings.schema.json`, `--help`, doctor's
 * values, the reference docs/configuration.md (scripts/config_reference.ts). The template, README,
 * other docs/ and JSDoc are checked against it by tests/settings_test.ts instead: their prose and
 * examples are written for people, and generating them would lose that.
 *
 * Keys match case-insensitively, as in .NET configuration; values from environment variables
 * arrive as strings, so numbers and booleans also accept their string forms.
 *
 * @module
 */
import { z } from "zod";

/** How a setting is written; a list of names is a choice among them (matched ignoring case). */
export type SettingKind =
  | "text"
  | "strings"
  | "integer"
  | "boolean"
  | "timeSpan"
  | readonly string[];

/** What svc knows about one setting besides its place in the file. */
export interface Setting {
  kind: SettingKind;
  /** What it does, in a sentence or two (the JSON Schema's description starts with it). */
  text: string;
  /**
   * The value when the key is unset, as a file writes it (time spans as "hh:mm:ss"). Lists are
   * empty and other text unset when there is none.
   */
  default?: string | number | boolean;
  /** Instead of `default`: svc works the default out as it starts; how, in words. */
  computed?: string;
  /** Smallest value accepted (every integer has one). */
  min?: number;
  /** The `SVC_*` variable read before the key (besides the `Section__Key` form every key has). */
  env?: string;
  /** For a deprecated key, the keys that replace it. */
  replacedBy?: readonly string[];
}

const text = z.string();
// Lists are JSON arrays in a file; an environment variable's single string stands for a one-item
// list (checkConfigShape's listsFromScalars), as environment variables cannot hold arrays.
const strings = z.array(z.string({ error: "expected a string" }), {
  error: 'expected an array of strings, like ["Get-Date"]',
});
const integer = z.union([z.number().int(), z.string().regex(/^-?\d+$/, "expected an integer")]);
const boolean = z.union([
  z.boolean(),
  z.string().regex(/^(true|false)$/i, "expected true or false"),
]);
const timeSpan = z.string().regex(
  /^(\d+\.)?\d{1,2}:\d{1,2}:\d{1,2}(\.\d{1,7})?$/,
  'expected a time span like "00:05:00" (hh:mm:ss)',
);
const TYPES = { text, strings, integer, boolean, timeSpan };

/** The settings, by schema leaf; {@linkcode settingOf} finds one by key path. */
const SETTINGS = z.registry<Setting>();

/** How a default reads in prose: byte counts of whole MiB also in MiB. */
export function shownDefault(setting: Setting): string | undefined {
  const value = setting.default;
  if (setting.computed !== undefined) return setting.computed;
  if (typeof value === "number" && value >= 1 << 20 && value % (1 << 20) === 0) {
    return `${value} (${value / (1 << 20)} MiB)`;
  }
  return value === undefined ? undefined : String(value);
}

/** A schema leaf for one setting, described for editors as "text Default x." (or "Default: how."). */
function setting(kind: SettingKind, meta: Omit<Setting, "kind">): z.ZodType {
  const info: Setting = { kind, ...meta };
  const base = typeof kind === "string"
    ? TYPES[kind]
    : z.enum([...kind, ...kind.map((c) => c.toLowerCase())]);
  const shown = shownDefault(info);
  const description = [
    info.replacedBy ? `Deprecated: use ${info.replacedBy.join(" and ")}.` : "",
    info.text,
    shown === undefined ? "" : `Default${info.computed === undefined ? "" : ":"} ${shown}.`,
  ].filter(Boolean).join(" ");
  const leaf = base.meta({ description, ...(info.replacedBy ? { deprecated: true } : {}) });
  SETTINGS.add(leaf, info);
  return leaf;
}

/** `SubprocessHostMode`'s choices (lib/config_pool.ts). */
export const HOST_MODES = ["Pool", "ProcessPool", "Single"] as const;
/** `HttpTransportMode`'s choices. */
export const HTTP_MODES = ["Stateless", "Stateful"] as const;
/** `ToolGranularity`'s choices. */
export const TOOL_GRANULARITIES = ["ParameterSet", "Command"] as const;
/** `PromptsAnsweredBy`'s choices (lib/prompt_policy.ts). */
export const PROMPT_ANSWERERS = ["User", "Caller"] as const;
/** `ConfirmPreference`'s choices: PowerShell's ConfirmImpact levels. */
export const CONFIRM_LEVELS = ["None", "Low", "Medium", "High"] as const;
/** A command's `ConfirmImpact`, and the `$ConfirmPreference` threshold it is compared with. */
export type ConfirmLevel = (typeof CONFIRM_LEVELS)[number];

const PROMPTS_ANSWERED_BY =
  "Who may answer the command's prompts (confirmations, Read-Host, choices). User: only the client's user, asked by svc while the call runs; the caller can neither pass Confirm false nor send answers ahead, and a client that cannot ask its user is refused a call that would ask. Caller: the caller may also answer for the user (Confirm false, answers sent with the call), for unattended automation.";

const commandOverride = z.object({
  ToolCallTimeout: setting("timeSpan", {
    text: "Time limit of one call of this command.",
    computed: "the shell's ToolCallTimeout",
  }),
  RequiredRoles: setting("strings", {
    text: "Roles of which a caller needs one to call this command (HTTP with authentication).",
  }),
  DefaultProperties: setting("strings", {
    text: "Properties output objects of this command keep unless the caller asks otherwise.",
  }),
  AllowedProperties: setting("strings", {
    text:
      "The only properties a caller may ask this command's output objects for (_RequestedProperties, names or wildcards matched against these; _AllProperties gives these); a name that matches none is refused. What PowerShell shows for the type is shown either way.",
    computed: "any property",
  }),
  UseDefaultDisplayProperties: setting("boolean", {
    text:
      "Reduce this command's output objects to what PowerShell shows; replaces the shell setting.",
    computed: "the shell's UseDefaultDisplayProperties",
  }),
  PromptsAnsweredBy: setting(PROMPT_ANSWERERS, {
    text: `${PROMPTS_ANSWERED_BY} Replaces the shell setting for this command.`,
    computed: "the shell's PromptsAnsweredBy",
  }),
  ConfirmBeforeRun: setting("boolean", {
    text:
      "Ask the client's user before each call of this command runs, naming the command and its arguments (secrets masked); No, a decline or no answer runs nothing.",
    default: false,
  }),
}).partial();

const resourceEntry = z.object({
  Uri: setting("text", {
    text:
      "The resource's URI, or an RFC 6570 URI template whose {variables} are parameters of the command (level 1: {name}); svc: URIs are svc's own.",
  }),
  Command: setting("text", {
    text:
      "The command a read runs, one svc offers as a tool: a read is a call of it, with its roles, time limit, output bound and audit line.",
  }),
  Title: setting("text", { text: "A title for people.", computed: "none" }),
  Description: setting("text", { text: "What the resource holds.", computed: "none" }),
  MimeType: setting("text", {
    text: "The media type of its contents.",
    computed:
      "text/plain for output of one string, application/octet-stream for bytes, else application/json",
  }),
}).partial();

const shellSection = z.object({
  Commands: setting("strings", { text: "Explicit command names offered as tools." }),
  CommandNames: setting("strings", { text: "PoshMcp's name for Commands." }),
  FunctionNames: setting("strings", { text: "PoshMcp's deprecated name for Commands." }),
  Modules: setting("strings", {
    text: "Modules imported in every worker; their commands are offered.",
  }),
  IncludePatterns: setting("strings", {
    text: "Wildcards selecting commands (from Modules, or from the whole session).",
  }),
  ExcludePatterns: setting("strings", {
    text: "Wildcards hiding commands; exclusion always wins.",
  }),
  PromptCommands: setting("strings", {
    text:
      "Command names offered as MCP prompts: their parameters are the prompt's arguments, their output its messages (docs/mcp-prompts.md). Exclusion hides them too.",
  }),
  ToolCallTimeout: setting("timeSpan", { text: "Time limit of one call.", default: "00:05:00" }),
  UserInputTimeout: setting("timeSpan", {
    text:
      "How long a prompt of a call (a confirmation, Read-Host, a choice) waits for the user's answer when the client can ask its user; then the command is stopped. The wait does not count against ToolCallTimeout.",
    default: "00:02:00",
  }),
  PromptsAnsweredBy: setting(PROMPT_ANSWERERS, {
    text: `${PROMPTS_ANSWERED_BY} CommandOverrides can set it per command.`,
    default: "User",
  }),
  ConfirmPreference: setting(CONFIRM_LEVELS, {
    text:
      "PowerShell's $ConfirmPreference in every worker, at every call: a command whose ConfirmImpact reaches it asks for confirmation before it acts (None: only when the caller passes Confirm true).",
    default: "High",
  }),
  MaxResultBytes: setting("integer", {
    text:
      "Output text above this size is cut with a notice; it also bounds what one call may send svc (output, error and other records). The default, about 6-8k tokens, suits a model's context.",
    default: 24_576,
    min: 1024,
  }),
  SerializationDepth: setting("integer", {
    text: "ConvertTo-Json -Depth for output objects.",
    default: 4,
    min: 1,
  }),
  MaxRequestedProperties: setting("integer", {
    text: "Most names a call may give in _RequestedProperties.",
    default: 64,
    min: 1,
  }),
  MaxRequestedPropertyWildcards: setting("integer", {
    text: "Most wildcard names (*, ?, [) a call may give in _RequestedProperties.",
    default: 8,
    min: 0,
  }),
  MaxArgumentItems: setting("integer", {
    text: "Most items in any array of a call's arguments, nested ones included.",
    default: 10_000,
    min: 1,
  }),
  UseDefaultDisplayProperties: setting("boolean", {
    text: "Reduce output objects to the properties PowerShell shows for their type.",
    default: true,
  }),
  ToolGranularity: setting(TOOL_GRANULARITIES, {
    text:
      "One tool per parameter set (ParameterSet), or one per command covering all its sets (Command).",
    default: "ParameterSet",
  }),
  Performance: z.object({
    UseDefaultDisplayProperties: setting("boolean", {
      text: "PoshMcp's place for UseDefaultDisplayProperties.",
      default: true,
    }),
  }).partial(),
  PwshPath: setting("text", {
    text: "PowerShell executable.",
    computed: "'pwsh' on PATH, else the repository's bin/pwsh",
    env: "SVC_PWSH",
  }),
  CacheDirectory: setting("text", {
    text: "Directory of the catalog cache.",
    computed: "the user cache directory + /svc",
    env: "SVC_CACHE_DIR",
  }),
  HostCacheDirectory: setting("text", {
    text: "Directory of the worker host's compiled part.",
    computed: "CacheDirectory",
    env: "SVC_HOST_CACHE_DIR",
  }),
  WorkerStartTimeout: setting("timeSpan", {
    text: "Time for a worker to start and run its startup script.",
    default: "00:02:00",
  }),
  KeepNativeProcesses: setting("boolean", {
    text:
      "Keep the native processes a call started once it ends (Linux ends them with their trees).",
    default: false,
  }),
  ReloadOnChange: setting("boolean", {
    text:
      "Watch the files the tools' code comes from (modules, dot-sourced scripts, the startup script); on a change, discover the tools again, run new calls on workers started with the new code, and tell clients the tool list changed.",
    computed: "true over stdio, false over HTTP",
  }),
  CommandOverrides: z.record(z.string(), commandOverride),
  FunctionOverrides: z.record(z.string(), commandOverride),
  Resources: z.record(z.string(), resourceEntry),
  ResultResources: z.object({
    MaxBytes: setting("integer", {
      text:
        "Output of one call kept past MaxResultBytes, readable in pages by the caller as a resource its result links to; 0 keeps none.",
      default: 98_304,
      min: 0,
    }),
    TotalBytes: setting("integer", {
      text: "Output kept for all calls together; the oldest goes first to make room.",
      default: 16_777_216,
      min: 0,
    }),
    Ttl: setting("timeSpan", {
      text: "How long kept output stays readable after its call.",
      default: "00:10:00",
    }),
  }).partial(),
  Environment: z.object({
    StartupScript: setting("text", { text: "Inline startup script, run after StartupScriptPath." }),
    StartupScriptPath: setting("text", {
      text:
        "Startup script file, run once per worker before it serves; a relative path is relative to this file's folder.",
    }),
    PassVariables: setting("strings", {
      text:
        "Names or wildcards of svc's own variables (SVC_*, Section__Key, OTLP headers) that workers get anyway.",
    }),
    RemoveVariables: setting("strings", {
      text: "Names or wildcards of more environment variables kept from workers.",
    }),
  }).partial(),
}).partial();

const hostMode = (text: string) =>
  setting(HOST_MODES, {
    text,
    computed: "from RunspacesPerProcess: ProcessPool when it is 1, else Pool",
  });

const pool = (name: string) => `McpServer:RunspacePool:${name}`;
/** A version 1 pool key (SPEC §9.4): applies only when its replacements are unset. */
const v1 = (text: string, ...replacedBy: string[]) =>
  setting("integer", { text, min: 0, replacedBy: replacedBy.map(pool) });

const runspacePool = z.object({
  MaxPoolSize: setting("integer", { text: "Most workers at once.", default: 16, min: 1 }),
  MinPoolSize: setting("integer", {
    text: "Replenishment floor and readiness minimum.",
    default: 2,
    min: 0,
  }),
  EagerWarmCount: setting("integer", {
    text: "Workers warmed at startup.",
    default: 2,
    min: 0,
  }),
  IdleTtl: setting("timeSpan", {
    text: "Idle lifetime of a worker above the minimum.",
    default: "00:05:00",
  }),
  SweepInterval: setting("timeSpan", { text: "Interval of the idle sweep.", default: "00:00:30" }),
  AcquisitionTimeout: setting("timeSpan", {
    text: "Longest wait for a worker.",
    default: "00:00:15",
  }),
  StopTimeout: setting("timeSpan", {
    text: "Grace period of a stopped pipeline or closing worker.",
    default: "00:00:05",
  }),
  ShutdownDrainTimeout: setting("timeSpan", {
    text:
      "The whole drain on shutdown: calls in flight still running after it are cut off (a second SIGINT or SIGTERM cuts them off at once).",
    default: "00:00:30",
  }),
  ReplenishCheckInterval: setting("timeSpan", {
    text: "Interval of the replenishment check.",
    default: "00:00:05",
  }),
  RunspacesPerProcess: setting("integer", {
    text: "Workers (runspaces) per pwsh process; 1 = a process per worker.",
    default: 16,
    min: 1,
  }),
  MaxWorkerMemoryMB: setting("integer", {
    text:
      "A worker process over this working set (MB) after a call is retired and replaced; 0 = no ceiling.",
    default: 1024,
    min: 0,
  }),
}).partial();

const apiKey = z.object({
  Value: setting("text", { text: "The key (prefer Sha256, or an environment variable)." }),
  Sha256: setting("text", {
    text: "Hex SHA-256 digest of the key; the server never needs the plaintext.",
  }),
  Scopes: setting("strings", { text: "Scopes the key grants." }),
  Roles: setting("strings", { text: "Roles the key grants." }),
}).partial();

const scheme = z.object({
  Type: setting(["ApiKey", "JwtBearer"], { text: "The kind of scheme.", default: "JwtBearer" }),
  HeaderName: setting("text", {
    text: "ApiKey: header carrying the key.",
    default: "X-API-Key",
  }),
  Keys: z.record(z.string(), apiKey),
  EntryNameIsKey: setting("boolean", {
    text:
      "ApiKey: an entry without Value or Sha256 has its name as the key (PoshMcp's form); anyone who reads the file knows it.",
    default: false,
  }),
  Authority: setting("text", { text: "JwtBearer: issuer URL for OIDC discovery." }),
  JwksUri: setting("text", {
    text: "JwtBearer: JWKS URL (with ValidIssuers) instead of discovery.",
  }),
  Audience: setting("text", {
    text: "JwtBearer: accepted aud value; one https URL also names this resource in its metadata.",
  }),
  ValidAudiences: setting("strings", { text: "JwtBearer: more accepted aud values." }),
  ValidIssuers: setting("strings", {
    text: "JwtBearer: accepted iss values; none means the issuer discovery reports.",
  }),
  ClockSkewSeconds: setting("integer", {
    text: "JwtBearer: clock skew allowed on exp and nbf, in seconds.",
    default: 60,
    min: 0,
  }),
  RequireHttpsMetadata: setting("boolean", {
    text: "JwtBearer: refuse an http:// Authority or JwksUri.",
    computed: "true unless the URL is loopback",
  }),
  ClaimsMapping: z.object({
    ScopeClaim: setting("text", {
      text: "JwtBearer: claim with the scopes.",
      computed: "scp, then scope",
    }),
    RoleClaim: setting("text", { text: "JwtBearer: claim with the roles.", default: "roles" }),
    NameClaim: setting("text", {
      text: "JwtBearer: claim naming the caller.",
      computed: "preferred_username, upn, email, then sub",
    }),
  }).partial(),
}).partial();

/** The whole configuration file. */
export const appSettingsSchema = z.object({
  $schema: text,
  ShellConfiguration: shellSection,
  PowerShellConfiguration: shellSection.extend({
    SubprocessHostMode: hostMode("PoshMcp's place for McpServer:SubprocessHostMode."),
  }).partial(),
  McpServer: z.object({
    HttpTransportMode: setting(HTTP_MODES, {
      text: "HTTP sessions: Stateless (no session id) or Stateful (Mcp-Session-Id, GET stream).",
      default: "Stateless",
    }),
    IdleSessionTimeoutSeconds: setting("integer", {
      text: "Idle expiry of a Stateful session, in seconds.",
      default: 600,
      min: 1,
    }),
    SessionIdPrefix: setting("text", {
      text: "Start of Stateful session ids, naming this replica for a load balancer.",
    }),
    EnableLegacySse: setting("boolean", {
      text: "Serve the deprecated HTTP+SSE transport.",
      default: false,
    }),
    MaxRequestBodyBytes: setting("integer", {
      text: "Largest request body accepted, in bytes; a larger one gets 413.",
      default: 4 * 1024 * 1024,
      min: 1,
    }),
    MaxStreamsPerCaller: setting("integer", {
      text:
        "Most event streams (GET /sse, the MCP GET stream) one caller may hold open; more get 429.",
      default: 16,
      min: 1,
    }),
    MaxStreams: setting("integer", {
      text: "Most event streams open in all; more get 429.",
      default: 512,
      min: 1,
    }),
    MaxConcurrentRequests: setting("integer", {
      text:
        "Most HTTP requests handled at once (/health and /health/ready not counted); more get 503 with Retry-After.",
      default: 1024,
      min: 1,
    }),
    BodyReadTimeout: setting("timeSpan", {
      text: "Time for a request body to arrive in full; a slower one gets 408 and is dropped.",
      default: "00:00:30",
    }),
    MaxBufferedBodyBytes: setting("integer", {
      text:
        "Bytes of request bodies all requests may hold at once while they arrive; a body that does not fit gets 503. Keep it at or above MaxRequestBodyBytes.",
      default: 64 * 1024 * 1024,
      min: 65_536,
    }),
    MaxConnections: setting("integer", {
      text: "Most connections open at once; past it a new connection may only ask for /health.",
      computed: "the open-files limit less a quarter of it (at most 256), and at most 4096",
      min: 1,
    }),
    HeaderReadTimeout: setting("timeSpan", {
      text:
        "Time for a request's head (request line and headers) to arrive; a slower one gets 408 and the connection is closed.",
      default: "00:00:30",
    }),
    KeepAliveTimeout: setting("timeSpan", {
      text:
        "Time an idle connection is kept open for a next request; keep it above a load balancer's idle timeout.",
      default: "00:01:05",
    }),
    SendTimeout: setting("timeSpan", {
      text:
        "Time a response write may make no progress (the client reads nothing) before the connection is closed.",
      default: "00:00:30",
    }),
    MaxStreamQueueBytes: setting("integer", {
      text:
        "Most bytes of an event stream waiting for a client that reads slower than svc writes; past it the stream is closed.",
      default: 8 * 1024 * 1024,
      min: 65_536,
    }),
    TlsCertificatePath: setting("text", {
      text:
        "PEM file of the certificate chain (the server's first) for HTTPS on svc's own port; with TlsKeyPath, svc serves https only. Re-read when it changes. A relative path is relative to this file's folder.",
      env: "SVC_TLS_CERTIFICATE",
    }),
    TlsKeyPath: setting("text", {
      text:
        "PEM file of the certificate's private key (unencrypted PKCS#8, PKCS#1 or SEC1). Re-read when it changes.",
      env: "SVC_TLS_KEY",
    }),
    TrustForwardedProto: setting("boolean", {
      text:
        "svc is reached only through a proxy that sets X-Forwarded-Proto (TLS at the proxy): the URLs svc builds and its same-origin check use the scheme it names.",
      default: false,
    }),
    AllowedHosts: setting("strings", {
      text:
        "Host header values accepted besides loopback and the addresses svc listens on; '*' accepts any, '*.example.com' subdomains.",
    }),
    AllowAnonymous: setting("boolean", {
      text:
        "Serve callers without credentials on a non-loopback address (risky: anyone who reaches the port calls the tools).",
      default: false,
      env: "SVC_ALLOW_ANONYMOUS",
    }),
    SubprocessHostMode: hostMode(
      "Process model: Pool (processes of RunspacesPerProcess workers), ProcessPool (a process per worker), Single (one process). With authentication a process serves one principal at a time.",
    ),
    RunspacePool: runspacePool,
    SessionRunspaceCapacity: v1("Most workers at once.", "MaxPoolSize"),
    SessionRunspaceWarmStandbyCount: v1(
      "Workers kept warm.",
      "MinPoolSize",
      "EagerWarmCount",
    ),
    SessionRunspaceIdleTtlSeconds: v1("Idle lifetime of a worker, in seconds.", "IdleTtl"),
    SessionRunspaceSweepIntervalSeconds: v1(
      "Interval of the idle sweep, in seconds.",
      "SweepInterval",
    ),
    SessionRunspaceAcquisitionTimeoutSeconds: v1(
      "Longest wait for a worker, in seconds.",
      "AcquisitionTimeout",
    ),
  }).partial(),
  Authentication: z.object({
    Enabled: setting("boolean", {
      text: "Require the McpAccess policy on MCP, /tools and /call.",
      default: false,
    }),
    DefaultScheme: setting("text", {
      text: "The scheme under Schemes that authenticates requests.",
      computed: "the only scheme, if there is one",
    }),
    DefaultPolicy: z.object({
      RequireAuthentication: setting("boolean", {
        text: "Callers must authenticate.",
        default: true,
      }),
      RequiredScopes: setting("strings", { text: "Scopes a caller needs, all of them." }),
      RequiredRoles: setting("strings", { text: "Roles of which a caller needs one." }),
    }).partial(),
    Schemes: z.record(z.string(), scheme),
    ProtectedResource: z.object({
      Resource: setting("text", {
        text: "RFC 9728 metadata: this resource's identifier.",
        computed: "the scheme's Audience when it is one https URL, else the MCP endpoint's URL",
      }),
      ResourceName: setting("text", { text: "RFC 9728 metadata: a name for people." }),
      AuthorizationServers: setting("strings", {
        text: "RFC 9728 metadata: where clients get tokens.",
        computed: "the scheme's Authority, else its ValidIssuers",
      }),
      ScopesSupported: setting("strings", {
        text: "RFC 9728 metadata: the scopes this resource knows.",
        computed: "DefaultPolicy:RequiredScopes",
      }),
    }).partial(),
    Cors: z.object({
      AllowedOrigins: setting("strings", {
        text: "Browser origins accepted besides svc's own, exactly as sent.",
      }),
    }).partial(),
    Audit: z.object({
      LogArguments: setting("boolean", {
        text: "Log argument values (secrets redacted) in audit lines.",
        default: false,
      }),
    }).partial(),
  }).partial(),
  Logging: z.object({
    LogLevel: z.object({
      Default: setting("text", {
        text: "Lowest level logged: Trace, Debug, Information, Warning, Error or Critical.",
        default: "Information",
        env: "SVC_LOG_LEVEL",
      }),
    }).catchall(z.string()),
  }).partial(),
}).partial();

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  valueType?: z.ZodType;
  catchall?: z.ZodType;
};

/** A zod schema's definition (its kind and parts). */
export function defOf(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

/** The schema inside `.optional()` and `.nullable()`. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let inner = schema;
  while (["optional", "nullable"].includes(defOf(inner).type)) inner = defOf(inner).innerType!;
  return inner;
}

/**
 * The setting at a key path (`McpServer:RunspacePool:MaxPoolSize`), matched ignoring case; any
 * name stands for an entry of a map (`Authentication:Schemes:<name>:HeaderName`). Undefined when
 * the path is no setting.
 */
export function settingOf(path: string): Setting | undefined {
  let node = appSettingsSchema as z.ZodType;
  for (const part of path.split(":")) {
    const def = defOf(unwrap(node));
    if (def.type === "record") node = def.valueType!;
    else {
      const shape = def.shape ?? {};
      const name = Object.keys(shape).find((k) => k.toLowerCase() === part.toLowerCase());
      if (name === undefined) return undefined;
      node = shape[name]!;
    }
  }
  return SETTINGS.get(unwrap(node));
}

/**
 * Every setting by its key path, a map entry's name written `*`, in the schema's order; the
 * `PowerShellConfiguration` copies of the shell settings are left out.
 */
export function allSettings(): [string, Setting][] {
  const walk = (schema: z.ZodType, path: string[]): [string, Setting][] => {
    const leaf = unwrap(schema);
    const def = defOf(leaf);
    if (def.type === "record") return walk(def.valueType!, [...path, "*"]);
    if (def.type === "object") {
      return Object.entries(def.shape ?? {}).flatMap(([k, v]) => walk(v, [...path, k]));
    }
    const found = SETTINGS.get(leaf);
    return found === undefined ? [] : [[path.join(":"), found]];
  };
  return walk(appSettingsSchema, []).filter(([path]) =>
    !path.startsWith("PowerShellConfiguration:") ||
    path === "PowerShellConfiguration:SubprocessHostMode"
  );
}

/** The JSON Schema of the configuration file (for `appsettings.schema.json`). */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(appSettingsSchema, {
    io: "input",
    unrepresentable: "any",
  }) as Record<string, unknown>;
  return { ...schema, title: "svc appsettings.json" };
}
