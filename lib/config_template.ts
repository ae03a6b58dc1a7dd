/**
 * The commented default configuration that `svc create-config` writes: every setting with its
 * default and a one-line comment. It is written by hand, for people (sections, examples, advice);
 * tests/settings_test.ts checks each value against the default in lib/config_schema.ts.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { cannotWrite, writeFileAtomically } from "./atomic_write.ts";
import { configJsonSchema } from "./config_schema.ts";
import { ConfigError } from "./errors.ts";
import embeddedDefaults from "../appsettings.json" with { type: "json" };

/** Options of {@linkcode createConfig}. */
export interface CreateConfigOptions {
  /** Overwrite an existing file. @default false (flag `--force`) */
  force?: boolean;
}

/** What {@linkcode createConfig} did. */
export interface CreateConfigResult {
  /** The file written, as given. */
  path: string;
  /** True when an existing file was replaced (only with `force`). */
  overwritten: boolean;
}

function renderStringList(items: readonly string[], indent: string): string {
  if (items.length === 0) return "[]";
  const lines = items.map((item) => `${indent}  ${JSON.stringify(item)}`);
  return `[\n${lines.join(",\n")}\n${indent}]`;
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

const DEFAULT_SHELL = embeddedDefaults.ShellConfiguration as Record<string, unknown>;

/** The comment above each field of the embedded default's overrides. */
const OVERRIDE_FIELDS: Record<string, string> = {
  AllowedProperties: "The only properties a caller may ask for (not CommandLine).",
};

// The embedded default's overrides, with an example of the other fields above them.
function renderOverrides(overrides: unknown, indent: string): string {
  const example =
    `${indent}  // "Get-Date": { "ToolCallTimeout": "00:00:30", "RequiredRoles": ["reader"], "DefaultProperties": ["DateTime"] },\n${indent}  // "Publish-Release": { "ConfirmBeforeRun": true }`;
  const entries = Object.entries((overrides ?? {}) as Record<string, Record<string, unknown>>);
  const lines = entries.map(([command, fields]) => {
    const body = Object.entries(fields).map(([key, value]) =>
      `${indent}    // ${OVERRIDE_FIELDS[key] ?? key}\n${indent}    ${JSON.stringify(key)}: ${
        Array.isArray(value)
          ? renderStringList(stringsOf(value), `${indent}    `)
          : JSON.stringify(value)
      }`
    );
    return `${indent}  ${JSON.stringify(command)}: {\n${body.join(",\n")}\n${indent}  }`;
  });
  return `{\n${[example, lines.join(",\n")].filter(Boolean).join("\n")}\n${indent}}`;
}

const DEFAULT_CONFIG_TEXT =
  `// svc configuration: JSON with comments. Every setting is shown with its default value.
// Keys are case-insensitive. Environment variables override keys, with "__" between levels:
// ShellConfiguration__ToolCallTimeout=00:01:00, and ShellConfiguration__Commands__0=Get-Date.
{
  // JSON Schema that lets editors complete and check the keys of this file.
  "$schema": "./appsettings.schema.json",
  // Which commands become tools, and how calls run.
  "ShellConfiguration": {
    // Explicit command names; each becomes one tool per parameter set.
    "Commands": ${renderStringList(stringsOf(DEFAULT_SHELL["Commands"]), "    ")},
    // Modules imported in every worker; their commands are offered (a failed import only warns).
    "Modules": [],
    // Wildcards (*, ?, [a-z]) selecting commands: of Modules when set, else of the whole session.
    "IncludePatterns": [],
    // Wildcards hiding commands, even ones listed in Commands; exclusion always wins.
    "ExcludePatterns": ${renderStringList(stringsOf(DEFAULT_SHELL["ExcludePatterns"]), "    ")},
    // Command names offered as MCP prompts: parameters become arguments, output the messages.
    "PromptCommands": [],
    // Time limit of one call (hh:mm:ss).
    "ToolCallTimeout": "00:05:00",
    // How long a prompt (a confirmation, Read-Host) waits for the user when the client can ask one;
    // then the command is stopped.
    "UserInputTimeout": "00:02:00",
    // Who answers a command's prompts. User: only the client's user, whom svc asks while the call
    // runs; a caller cannot pass Confirm false or answer ahead, and a client that cannot ask is
    // refused a call that would ask. Caller: the caller may answer for the user too (unattended
    // automation). CommandOverrides can set it per command.
    "PromptsAnsweredBy": "User",
    // PowerShell's $ConfirmPreference in every worker at every call: a command whose ConfirmImpact
    // reaches it (None, Low, Medium, High) asks for confirmation before it acts.
    "ConfirmPreference": "High",
    // Output text above this many bytes (about 6-8k tokens) is cut, with an explicit notice. It
    // also bounds what one call may send svc: the worker counts output and error and other
    // records past it, unsent.
    "MaxResultBytes": 24576,
    // ConvertTo-Json -Depth used for output objects.
    "SerializationDepth": 4,
    // Most names a call may give in _RequestedProperties; a call over it is refused before it
    // reaches a worker.
    "MaxRequestedProperties": 64,
    // Most wildcard names among them.
    "MaxRequestedPropertyWildcards": 8,
    // Most items in any array of a call's arguments, nested ones included.
    "MaxArgumentItems": 10000,
    // Output objects keep only what PowerShell shows for their type (callers can ask for more).
    "UseDefaultDisplayProperties": true,
    // ParameterSet: one tool per parameter set; Command: one tool per command covering all its sets.
    "ToolGranularity": "ParameterSet",
    // Per-command settings by command name; ToolCallTimeout and PromptsAnsweredBy replace the ones
    // above, DefaultProperties are the properties output objects keep unless the caller names
    // others, AllowedProperties the only ones a caller may ask for, and ConfirmBeforeRun makes svc
    // ask the user before each call runs. Get-Process offers no CommandLine: the machine's command
    // lines often hold other programs' secrets.
    "CommandOverrides": ${renderOverrides(DEFAULT_SHELL["CommandOverrides"], "    ")},
    // Resources backed by commands, by name: Uri is a URI, or a template whose {Name} is a
    // parameter of the command; Command is one of the tools above, and a read runs like a call of
    // it. E.g. "greeting": { "Uri": "greet://people/{Name}", "Command": "Get-Greeting" }
    "Resources": {},
    // Output cut at MaxResultBytes stays readable by its caller, as a resource its result links to.
    "ResultResources": {
      // Bytes kept of one call's output past the cut; 0 keeps none.
      "MaxBytes": 98304,
      // Bytes kept of all calls together; the oldest goes first.
      "TotalBytes": 16777216,
      // How long it stays readable.
      "Ttl": "00:10:00"
    },
    // What runs in every worker before its first call.
    "Environment": {
      // Script file run once per worker; empty for none. A relative path (like every path in this
      // file: Modules, PwshPath, CacheDirectory) means this file's folder, e.g. "startup.ps1".
      "StartupScriptPath": "",
      // Inline script run once per worker, after StartupScriptPath; empty for none.
      "StartupScript": "",
      // Workers never get svc's own variables (SVC_*, Section__Key, OTLP headers); names or
      // wildcards here pass anyway, e.g. ["SVC_LOG_LEVEL"].
      "PassVariables": [],
      // More variables (names or wildcards) kept from workers, e.g. ["AWS_*"].
      "RemoveVariables": []
    },
    // PowerShell 7.4+ executable; empty means 'pwsh' on PATH (--pwsh and SVC_PWSH come first).
    "PwshPath": "",
    // Catalog cache directory; empty means the user cache directory + /svc (SVC_CACHE_DIR first).
    "CacheDirectory": "",
    // Where the worker host's compiled part is kept between starts; empty means CacheDirectory (SVC_HOST_CACHE_DIR first).
    "HostCacheDirectory": "",
    // Time for a worker to start and run its startup script (hh:mm:ss).
    "WorkerStartTimeout": "00:02:00",
    // Keep the native processes a call started once it ends; by default (Linux) they are ended.
    "KeepNativeProcesses": false
    // Watch the modules' and the startup script's files and reload the tools when one changes;
    // unset, on over stdio (a module author's loop) and off over HTTP.
    // "ReloadOnChange": true
  },
  // The MCP server: HTTP transport and the worker pool.
  "McpServer": {
    // HTTP sessions: "Stateless" (no session id) or "Stateful" (Mcp-Session-Id, GET stream).
    "HttpTransportMode": "Stateless",
    // Seconds after which an idle Stateful session expires.
    "IdleSessionTimeoutSeconds": 600,
    // Stateful session ids start with this and a dot ("r1.<uuid>"), so that a load balancer can
    // route each session to the replica that holds it; empty for none.
    "SessionIdPrefix": "",
    // Serve the deprecated HTTP+SSE transport at /sse and /messages.
    "EnableLegacySse": false,
    // Largest request body accepted, in bytes (4 MiB); a larger one gets 413 before it is read.
    "MaxRequestBodyBytes": 4194304,
    // Event streams (GET /sse, the MCP GET stream) one caller may hold open; more get 429.
    "MaxStreamsPerCaller": 16,
    // Event streams open in all.
    "MaxStreams": 512,
    // HTTP requests handled at once (/health and /health/ready not counted); more get 503.
    "MaxConcurrentRequests": 1024,
    // Time for a request body to arrive in full (hh:mm:ss); a slower one gets 408 and is dropped.
    "BodyReadTimeout": "00:00:30",
    // Bytes of request bodies all requests may hold at once while they arrive (64 MiB); a body
    // that does not fit gets 503. Keep it at or above MaxRequestBodyBytes.
    "MaxBufferedBodyBytes": 67108864,
    // Connections open at once; past it a new one may only ask for /health. Unset: derived from
    // the open-files limit (that limit less a quarter, at most 256, and at most 4096).
    // "MaxConnections": 4096,
    // Time for a request's head to arrive (hh:mm:ss); a slower one gets 408.
    "HeaderReadTimeout": "00:00:30",
    // Time an idle connection is kept for a next request; keep it above a load balancer's idle
    // timeout (60 s on AWS ALB).
    "KeepAliveTimeout": "00:01:05",
    // Time a response write may make no progress (the client reads nothing) before svc hangs up.
    "SendTimeout": "00:00:30",
    // Bytes of an event stream waiting for a slow client; past it the stream is closed (8 MiB).
    "MaxStreamQueueBytes": 8388608,
    // HTTPS on svc's own port: the PEM file of the certificate chain, with TlsKeyPath, or neither
    // (then plain HTTP). Both are re-read when they change, so a renewed pair needs no restart.
    "TlsCertificatePath": "",
    // The PEM file of the certificate's private key (not encrypted), readable only by svc's user.
    "TlsKeyPath": "",
    // Behind a proxy that terminates TLS and sets X-Forwarded-Proto on every request (and only
    // then): the URLs svc builds (OAuth metadata, challenges) and its same-origin check use it.
    "TrustForwardedProto": false,
    // Host header values accepted besides the loopback names and the addresses svc listens on
    // (bound to 0.0.0.0: every address of this machine); "*.example.com" allows subdomains.
    "AllowedHosts": [],
    // Serve callers without credentials on a non-loopback address. Risky: anyone who reaches the
    // port can call the tools; without it svc refuses to start that way.
    "AllowAnonymous": false,
    // The pool of clean workers serving HTTP calls (time spans are hh:mm:ss).
    "RunspacePool": {
      // Most workers at once; the pool grows to this size while every worker is busy.
      "MaxPoolSize": 16,
      // Replenishment floor, and the minimum /health/ready requires.
      "MinPoolSize": 2,
      // Workers started, in parallel, before svc listens.
      "EagerWarmCount": 2,
      // Idle time after which a worker above MinPoolSize is reclaimed.
      "IdleTtl": "00:05:00",
      // How often idle workers are looked for.
      "SweepInterval": "00:00:30",
      // Longest wait for a free worker; then the call fails (503 on /call).
      "AcquisitionTimeout": "00:00:15",
      // Time a stopped pipeline or closing worker gets before its process tree is killed (stdio too).
      "StopTimeout": "00:00:05",
      // Time in-flight calls get after SIGTERM or SIGINT.
      "ShutdownDrainTimeout": "00:00:30",
      // How often the pool tops itself up to MinPoolSize.
      "ReplenishCheckInterval": "00:00:05",
      // Workers (runspaces) one pwsh process serves: more share a process's memory and start cost;
      // 1 gives every worker a process of its own (environment variables and .NET state unshared).
      "RunspacesPerProcess": 16,
      // A worker process over this working set (MB) after a call is retired and replaced; 0 for
      // no ceiling.
      "MaxWorkerMemoryMB": 1024
    }
    // Process model (the SPEC's key); unset, it follows RunspacesPerProcess. "Pool" shares
    // processes of RunspacesPerProcess workers, "ProcessPool" gives every worker a process
    // (RunspacesPerProcess 1), "Single" runs every worker in one process. With authentication a
    // process serves one principal at a time. RunspacesPerProcess must agree with it.
    // "SubprocessHostMode": "Pool"
  },
  // Authentication of HTTP callers (stdio has none).
  "Authentication": {
    // Require credentials on the MCP endpoints, /tools and /call (/health stays anonymous).
    "Enabled": false,
    // Name of the scheme under Schemes that authenticates requests, e.g. "ApiKey".
    "DefaultScheme": "",
    // The McpAccess policy every caller must meet.
    "DefaultPolicy": {
      // Callers must authenticate.
      "RequireAuthentication": true,
      // Scopes a caller needs, all of them.
      "RequiredScopes": [],
      // Roles of which a caller needs at least one.
      "RequiredRoles": []
    },
    // Schemes by name. An API-key scheme looks like this (never commit a real key):
    "Schemes": {
      // "ApiKey": {
      //   "Type": "ApiKey",
      //   "HeaderName": "X-API-Key",
      //   "Keys": {
      //     "ops-team": { "Sha256": "<hex SHA-256 of the key>", "Scopes": [], "Roles": ["ops"] }
      //   }
      // }
    },
    // OAuth clients find the authorization server in RFC 9728 metadata, which svc derives from a
    // JwtBearer scheme; these replace derived values:
    // "ProtectedResource": { "Resource": "https://svc.example.com/mcp", "AuthorizationServers": [] },
    // Browser origins.
    "Cors": {
      // Exact origins accepted besides svc's own, e.g. "https://app.example.com".
      "AllowedOrigins": []
    },
    // Audit lines, one per tool call at Information.
    "Audit": {
      // Also log argument values, with secrets redacted.
      "LogArguments": false
    }
  },
  // Logs, always written to stderr.
  "Logging": {
    // Minimum level of log lines, by category; svc reads Default.
    "LogLevel": {
      // Trace, Debug, Information, Warning, Error or Critical (SVC_LOG_LEVEL and --log-level first).
      "Default": "Information"
    }
  }
}
`;

/**
 * The complete, commented `appsettings.json` that `svc create-config` writes: every setting with its
 * default and a one-line comment. Its `Commands` and `ExcludePatterns` are those of the embedded
 * default, so a created file serves exactly what svc serves without one.
 */
export function defaultConfigText(): string {
  return DEFAULT_CONFIG_TEXT;
}

/**
 * Writes {@linkcode defaultConfigText} to `path`, creating its folder when missing.
 *
 * @throws {ConfigError} `INVALID_FILE` when the file exists and `force` is not set;
 * `UNREADABLE_FILE` when it cannot be written.
 */
export async function createConfig(
  path: string,
  options: CreateConfigOptions = {},
): Promise<CreateConfigResult> {
  const { force = false } = options;
  const text = defaultConfigText();
  // `svc create-config --config deploy/svc/appsettings.json` makes the folders, as `mkdir -p` would.
  const created = await Deno.mkdir(dirname(path), { recursive: true }).then(
    () => null,
    (error) => error,
  );
  if (created !== null) throw cannotWrite(path, created);
  if (!force) {
    try {
      await Deno.writeTextFile(path, text, { createNew: true });
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) {
        throw new ConfigError(
          "INVALID_FILE",
          `Cannot create configuration file '${path}' as it already exists: use --force to overwrite it`,
          { cause: error },
        );
      }
      throw cannotWrite(path, error);
    }
    await writeSchemaBeside(path);
    return { path, overwritten: false };
  }
  const overwritten = await Deno.lstat(path).then(() => true, () => false);
  await writeFileAtomically(path, text);
  await writeSchemaBeside(path);
  return { path, overwritten };
}

/**
 * The file's `$schema` is `./appsettings.schema.json`, so the schema is written beside it (it is
 * generated from svc's own schema, so replacing an older copy is safe): editors then complete and
 * check the keys wherever the file was created.
 */
async function writeSchemaBeside(path: string): Promise<void> {
  const schemaPath = join(dirname(path), "appsettings.schema.json");
  await writeFileAtomically(schemaPath, `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
}
