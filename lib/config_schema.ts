/**
 * The shape of `appsettings.json` as a zod schema: every key svc reads, with its type. Used to refuse
 * wrong types (naming the key path), to warn about unknown keys (with a "did you mean"), and to
 * generate the JSON Schema shipped as `appsettings.schema.json` for editors. Keys match
 * case-insensitively, as in .NET configuration; values from environment variables arrive as strings,
 * so numbers and booleans also accept their string forms. Defaults live in `config.ts`, not here.
 *
 * @module
 */
import { z } from "zod";
import { isSecretPath, safeKeyPath } from "./config_reader.ts";
import { closestNames } from "./suggest.ts";

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

const describe = <T extends z.ZodType>(schema: T, description: string) =>
  schema.describe(description);

const commandOverride = z.object({
  ToolCallTimeout: describe(timeSpan, "Time limit of one call of this command."),
  RequiredRoles: describe(
    strings,
    "Roles of which a caller needs one to call this command (HTTP with authentication).",
  ),
  DefaultProperties: describe(
    strings,
    "Properties output objects of this command keep unless the caller asks otherwise.",
  ),
  UseDefaultDisplayProperties: describe(
    boolean,
    "Reduce this command's output objects to what PowerShell shows; replaces the shell setting.",
  ),
}).partial();

const shellSection = z.object({
  Commands: describe(strings, "Explicit command names offered as tools."),
  CommandNames: describe(strings, "PoshMcp's name for Commands."),
  FunctionNames: describe(strings, "PoshMcp's deprecated name for Commands."),
  Modules: describe(strings, "Modules imported in every worker; their commands are offered."),
  IncludePatterns: describe(
    strings,
    "Wildcards selecting commands (from Modules, or from the whole session).",
  ),
  ExcludePatterns: describe(strings, "Wildcards hiding commands; exclusion always wins."),
  ToolCallTimeout: describe(timeSpan, "Time limit of one call. Default 00:05:00."),
  MaxResultBytes: describe(
    integer,
    "Output text above this size is cut with a notice; it also bounds what one call may send svc (output, error and other records). Default 1048576.",
  ),
  SerializationDepth: describe(integer, "ConvertTo-Json -Depth for output objects. Default 4."),
  MaxRequestedProperties: describe(
    integer,
    "Most names a call may give in _RequestedProperties. Default 64.",
  ),
  MaxRequestedPropertyWildcards: describe(
    integer,
    "Most wildcard names (*, ?, [) a call may give in _RequestedProperties. Default 8.",
  ),
  MaxArgumentItems: describe(
    integer,
    "Most items in any array of a call's arguments, nested ones included. Default 10000.",
  ),
  UseDefaultDisplayProperties: describe(
    boolean,
    "Reduce output objects to the properties PowerShell shows for their type. Default true.",
  ),
  ToolGranularity: describe(
    z.enum(["ParameterSet", "Command", "parameterset", "command"]),
    "One tool per parameter set (ParameterSet), or one per command covering all its sets (Command). Default ParameterSet.",
  ),
  Performance: z.object({
    UseDefaultDisplayProperties: describe(
      boolean,
      "PoshMcp's place for UseDefaultDisplayProperties.",
    ),
  }).partial(),
  PwshPath: describe(text, "PowerShell executable. Default: pwsh on PATH."),
  CacheDirectory: describe(text, "Directory of the catalog cache."),
  HostCacheDirectory: describe(
    text,
    "Directory of the worker host's compiled part. Default: CacheDirectory.",
  ),
  WorkerStartTimeout: describe(
    timeSpan,
    "Time for a worker to start and run its startup script. Default 00:02:00.",
  ),
  KeepNativeProcesses: describe(
    boolean,
    "Keep the native processes a call started once it ends (Linux ends them with their trees). Default false.",
  ),
  CommandOverrides: z.record(z.string(), commandOverride),
  FunctionOverrides: z.record(z.string(), commandOverride),
  Environment: z.object({
    StartupScript: describe(text, "Inline startup script, run after StartupScriptPath."),
    StartupScriptPath: describe(text, "Startup script file, run once per worker before it serves."),
    PassVariables: describe(
      strings,
      "Names or wildcards of svc's own variables (SVC_*, Section__Key, OTLP headers) that workers get anyway. Default none.",
    ),
    RemoveVariables: describe(
      strings,
      "Names or wildcards of more environment variables kept from workers. Default none.",
    ),
  }).partial(),
}).partial();

const hostMode = z.enum(["Pool", "ProcessPool", "Single", "pool", "processpool", "single"]);

const runspacePool = z.object({
  MaxPoolSize: describe(integer, "Most workers at once. Default 16."),
  MinPoolSize: describe(integer, "Replenishment floor and readiness minimum. Default 2."),
  EagerWarmCount: describe(integer, "Workers warmed at startup. Default 2."),
  IdleTtl: describe(timeSpan, "Idle lifetime of a worker above the minimum. Default 00:05:00."),
  SweepInterval: describe(timeSpan, "Interval of the idle sweep. Default 00:00:30."),
  AcquisitionTimeout: describe(timeSpan, "Longest wait for a worker. Default 00:00:15."),
  StopTimeout: describe(timeSpan, "Grace period of a stopped pipeline. Default 00:00:05."),
  ShutdownDrainTimeout: describe(
    timeSpan,
    "Time in-flight calls get on shutdown. Default 00:00:30.",
  ),
  ReplenishCheckInterval: describe(
    timeSpan,
    "Interval of the replenishment check. Default 00:00:05.",
  ),
  RunspacesPerProcess: describe(
    integer,
    "Workers (runspaces) per pwsh process; 1 = a process per worker. Default 8.",
  ),
  MaxWorkerMemoryMB: describe(
    integer,
    "A worker process over this working set (MB) after a call is retired and replaced; 0 = no ceiling. Default 1024.",
  ),
}).partial();

const apiKey = z.object({
  Value: describe(text, "The key (prefer Sha256, or an environment variable)."),
  Sha256: describe(text, "Hex SHA-256 digest of the key; the server never needs the plaintext."),
  Scopes: strings,
  Roles: strings,
}).partial();

const scheme = z.object({
  Type: z.enum(["ApiKey", "JwtBearer", "apikey", "jwtbearer"]),
  HeaderName: describe(text, "ApiKey: header carrying the key. Default X-API-Key."),
  Keys: z.record(z.string(), apiKey),
  EntryNameIsKey: describe(
    boolean,
    "ApiKey: an entry without Value or Sha256 has its name as the key (PoshMcp's form); anyone who reads the file knows it. Default false.",
  ),
  Authority: describe(text, "JwtBearer: issuer URL for OIDC discovery."),
  JwksUri: describe(text, "JwtBearer: JWKS URL (with ValidIssuers) instead of discovery."),
  Audience: text,
  ValidAudiences: strings,
  ValidIssuers: strings,
  ClockSkewSeconds: integer,
  RequireHttpsMetadata: boolean,
  ClaimsMapping: z.object({ ScopeClaim: text, RoleClaim: text, NameClaim: text }).partial(),
}).partial();

/** The whole configuration file. */
export const appSettingsSchema = z.object({
  $schema: text,
  ShellConfiguration: shellSection,
  PowerShellConfiguration: shellSection.extend({
    SubprocessHostMode: describe(hostMode, "PoshMcp's place for McpServer:SubprocessHostMode."),
  }).partial(),
  McpServer: z.object({
    HttpTransportMode: z.enum(["Stateless", "Stateful", "stateless", "stateful"]),
    IdleSessionTimeoutSeconds: describe(integer, "Idle expiry of a Stateful session. Default 600."),
    SessionIdPrefix: describe(
      text,
      "Start of Stateful session ids, naming this replica for a load balancer. Default none.",
    ),
    EnableLegacySse: describe(boolean, "Serve the deprecated HTTP+SSE transport. Default false."),
    MaxRequestBodyBytes: describe(
      integer,
      "Largest request body accepted, in bytes; a larger one gets 413. Default 4194304 (4 MiB).",
    ),
    MaxStreamsPerCaller: describe(
      integer,
      "Most event streams (GET /sse, the MCP GET stream) one caller may hold open; more get 429. Default 16.",
    ),
    MaxStreams: describe(integer, "Most event streams open in all; more get 429. Default 512."),
    MaxConcurrentRequests: describe(
      integer,
      "Most HTTP requests handled at once (/health and /health/ready not counted); more get 503 with Retry-After. Default 1024.",
    ),
    BodyReadTimeout: describe(
      timeSpan,
      "Time for a request body to arrive in full; a slower one gets 408 and is dropped. Default 00:00:30.",
    ),
    MaxBufferedBodyBytes: describe(
      integer,
      "Bytes of request bodies all requests may hold at once while they arrive; a body that does not fit gets 503. Keep it at or above MaxRequestBodyBytes. Default 67108864 (64 MiB).",
    ),
    MaxConnections: describe(
      integer,
      "Most connections open at once; past it a new connection may only ask for /health. Default from the open-files limit: that limit less a quarter (at most 256), at most 4096.",
    ),
    HeaderReadTimeout: describe(
      timeSpan,
      "Time for a request's head (request line and headers) to arrive; a slower one gets 408 and the connection is closed. Default 00:00:30.",
    ),
    KeepAliveTimeout: describe(
      timeSpan,
      "Time an idle connection is kept open for a next request; keep it above a load balancer's idle timeout. Default 00:01:05.",
    ),
    SendTimeout: describe(
      timeSpan,
      "Time a response write may make no progress (the client reads nothing) before the connection is closed. Default 00:00:30.",
    ),
    MaxStreamQueueBytes: describe(
      integer,
      "Most bytes of an event stream waiting for a client that reads slower than svc writes; past it the stream is closed. Default 8388608 (8 MiB).",
    ),
    AllowedHosts: describe(
      strings,
      "Host header values accepted besides loopback and the addresses svc listens on; '*' accepts any, '*.example.com' subdomains.",
    ),
    AllowAnonymous: describe(
      boolean,
      "Serve callers without credentials on a non-loopback address (risky: anyone who reaches the port calls the tools). Default false.",
    ),
    SubprocessHostMode: describe(
      hostMode,
      "Process model: Pool (processes of RunspacesPerProcess workers), ProcessPool (a process per worker), Single (one process). With authentication a process serves one principal at a time. Default Pool.",
    ),
    RunspacePool: runspacePool,
    SessionRunspaceCapacity: describe(integer, "Deprecated: use RunspacePool:MaxPoolSize."),
    SessionRunspaceWarmStandbyCount: describe(
      integer,
      "Deprecated: use RunspacePool:MinPoolSize and EagerWarmCount.",
    ),
    SessionRunspaceIdleTtlSeconds: describe(integer, "Deprecated: use RunspacePool:IdleTtl."),
    SessionRunspaceSweepIntervalSeconds: describe(
      integer,
      "Deprecated: use RunspacePool:SweepInterval.",
    ),
    SessionRunspaceAcquisitionTimeoutSeconds: describe(
      integer,
      "Deprecated: use RunspacePool:AcquisitionTimeout.",
    ),
  }).partial(),
  Authentication: z.object({
    Enabled: describe(
      boolean,
      "Require the McpAccess policy on MCP, /tools and /call. Default false.",
    ),
    DefaultScheme: text,
    DefaultPolicy: z.object({
      RequireAuthentication: boolean,
      RequiredScopes: strings,
      RequiredRoles: strings,
    })
      .partial(),
    Schemes: z.record(z.string(), scheme),
    ProtectedResource: z.object({
      Resource: text,
      ResourceName: text,
      AuthorizationServers: strings,
      ScopesSupported: strings,
    }).partial(),
    Cors: z.object({ AllowedOrigins: strings }).partial(),
    Audit: z.object({ LogArguments: boolean }).partial(),
  }).partial(),
  Logging: z.object({
    LogLevel: z.object({ Default: z.string() }).catchall(z.string()),
  }).partial(),
}).partial();

/** The JSON Schema of the configuration file (for `appsettings.schema.json`). */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(appSettingsSchema, {
    io: "input",
    unrepresentable: "any",
  }) as Record<string, unknown>;
  return { ...schema, title: "svc appsettings.json" };
}

/** What {@linkcode checkConfigShape} found. */
export interface ShapeReport {
  /** Unknown keys, each with a suggestion when a known key is close. */
  warnings: string[];
  /** The first wrong value, as `{path, message}`, or null. */
  error: { path: string; message: string; value: unknown } | null;
  /** The tree with keys spelled as the schema spells them, unknown keys left out. */
  canonical: Record<string, unknown>;
}

/** Options of {@linkcode checkConfigShape}. */
export interface ShapeOptions {
  /** Read a string where a list is expected as a one-item list (environment variables). @default false */
  listsFromScalars?: boolean;
}

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  valueType?: z.ZodType;
  catchall?: z.ZodType;
};

function defOf(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

/** Walks a configuration tree against the schema: unknown keys become warnings, wrong values an error. */
export function checkConfigShape(
  tree: Record<string, unknown>,
  origin: string,
  options: ShapeOptions = {},
): ShapeReport {
  const warnings: string[] = [];
  const walk = {
    root: tree,
    warnings,
    origin,
    listsFromScalars: options.listsFromScalars ?? false,
  };
  const canonical = canonicalize(tree, appSettingsSchema, [], walk) as Record<string, unknown>;
  const parsed = appSettingsSchema.safeParse(canonical);
  if (parsed.success) return { warnings, error: null, canonical };
  const issue = parsed.error.issues[0]!;
  const path = issue.path.map(String).join(":");
  let value: unknown = canonical;
  for (const part of issue.path) {
    value = (value as Record<string, unknown> | undefined)?.[String(part)];
  }
  // A key or its digest is never shown, and neither is an entry name that may be the key: nor is
  // any object or list that may hold one (`Keys` given as a list, a scheme or `Schemes` malformed).
  if (isSecretPath(path) || (mayHoldKeys(path) && value !== null && typeof value === "object")) {
    value = `[${Array.isArray(value) ? "list" : typeof value}]`;
  }
  return {
    warnings,
    error: { path: safeKeyPath(canonical, path), message: issue.message, value },
    canonical,
  };
}

/** True for `Authentication` and the paths under it that may hold API keys or their entry names. */
function mayHoldKeys(path: string): boolean {
  return /^(Authentication(:Schemes(:[^:]+(:Keys(:[^:]+)?)?)?)?)?$/i.test(path);
}

interface Walk {
  /** The whole tree, to tell whether an API-key entry's name may be a key (`safeKeyPath`). */
  root: Record<string, unknown>;
  warnings: string[];
  origin: string;
  listsFromScalars: boolean;
}

function canonicalize(value: unknown, schema: z.ZodType, path: string[], walk: Walk): unknown {
  const { warnings, origin } = walk;
  let def = defOf(schema);
  while (def.type === "optional" || def.type === "nullable") def = defOf(def.innerType!);
  if (walk.listsFromScalars && def.type === "array" && typeof value === "string") return [value];
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  if (def.type === "record") {
    return Object.fromEntries(
      Object.entries(record).map((
        [k, v],
      ) => [k, canonicalize(v, def.valueType!, [...path, k], walk)]),
    );
  }
  if (def.type !== "object") return value;
  const shape = def.shape ?? {};
  const known = Object.keys(shape);
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(record)) {
    const match = known.find((k) => k.toLowerCase() === key.toLowerCase());
    if (match === undefined) {
      if (def.catchall) {
        out[key] = child;
        continue;
      }
      const where = safeKeyPath(walk.root, [...path, key].join(":"));
      const close = closestNames(key, known, 1);
      warnings.push(
        `Unknown configuration key '${where}' in ${origin}${
          close.length > 0
            ? `; did you mean '${safeKeyPath(walk.root, [...path, close[0]].join(":"))}'?`
            : ""
        }`,
      );
      continue;
    }
    out[match] = canonicalize(child, shape[match]!, [...path, match], walk);
  }
  return out;
}
