/**
 * Every key the schema accepts is read by the settings code: a key that passes validation and is
 * then ignored (PoshMcp's `FunctionOverrides` was one) can silently drop a `RequiredRoles`. A
 * configuration that sets every key of the schema, in both shell sections, is loaded, and each of
 * its keys must be among those the settings code read.
 */
import assert from "node:assert/strict";
import type { z } from "zod";
import { loadSettings } from "../../lib/config.ts";
import { appSettingsSchema } from "../../lib/config_schema.ts";

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  valueType?: z.ZodType;
  catchall?: z.ZodType;
};
const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Leaf key paths of the schema; a record's entry name is `*`. */
function schemaLeaves(schema: z.ZodType, path: string[] = []): string[] {
  let def = defOf(schema);
  while (def.type === "optional" || def.type === "nullable") def = defOf(def.innerType!);
  if (def.type === "record") return schemaLeaves(def.valueType!, [...path, "*"]);
  if (def.type !== "object") return [path.join(":")];
  return Object.entries(def.shape ?? {}).flatMap(([k, v]) => schemaLeaves(v, [...path, k]));
}

/** Leaf key paths of a tree, and the same with each record entry's name (`names`) as `*`. */
function treeLeaves(tree: unknown, path: string[] = []): string[] {
  if (tree === null || typeof tree !== "object" || Array.isArray(tree)) return [path.join(":")];
  return Object.entries(tree).flatMap(([k, v]) => treeLeaves(v, [...path, k]));
}

const RECORD_ENTRIES = new Set(["Get-Date", "keys", "entra", "ops"]);

const shell = {
  Commands: ["Get-Date"],
  CommandNames: ["Get-Process"],
  FunctionNames: ["Get-Item"],
  Modules: [],
  IncludePatterns: ["Get-*"],
  ExcludePatterns: ["Remove-*"],
  PromptCommands: ["Get-Greeting"],
  ToolCallTimeout: "00:01:00",
  MaxResultBytes: 4096,
  SerializationDepth: 3,
  MaxRequestedProperties: 32,
  MaxRequestedPropertyWildcards: 4,
  MaxArgumentItems: 500,
  UseDefaultDisplayProperties: true,
  ToolGranularity: "Command",
  Performance: { UseDefaultDisplayProperties: false },
  PwshPath: "/usr/bin/pwsh",
  CacheDirectory: "/tmp/svc-cache",
  HostCacheDirectory: "/tmp/svc-host-cache",
  WorkerStartTimeout: "00:01:00",
  UserInputTimeout: "00:00:30",
  PromptsAnsweredBy: "Caller",
  ConfirmPreference: "Medium",
  KeepNativeProcesses: true,
  ReloadOnChange: false,
  CommandOverrides: {
    "Get-Date": {
      ToolCallTimeout: "00:00:10",
      RequiredRoles: ["admin"],
      DefaultProperties: ["Date"],
      AllowedProperties: ["Date", "Ticks"],
      UseDefaultDisplayProperties: false,
      PromptsAnsweredBy: "User",
      ConfirmBeforeRun: true,
    },
  },
  FunctionOverrides: {
    "Get-Date": {
      ToolCallTimeout: "00:00:20",
      RequiredRoles: ["ops"],
      DefaultProperties: ["Ticks"],
      AllowedProperties: ["Ticks"],
      UseDefaultDisplayProperties: true,
      PromptsAnsweredBy: "Caller",
      ConfirmBeforeRun: false,
    },
  },
  Resources: {
    ops: {
      Uri: "greet://people/{Name}",
      Command: "Get-Date",
      Title: "Greeting",
      Description: "A greeting.",
      MimeType: "text/plain",
    },
  },
  ResultResources: { MaxBytes: 65536, TotalBytes: 1048576, Ttl: "00:01:00" },
  Environment: {
    StartupScript: "$x = 1",
    // Relative: the file beside the configuration, written below.
    StartupScriptPath: "startup.ps1",
    PassVariables: ["SVC_LOG_LEVEL"],
    RemoveVariables: ["AWS_*"],
  },
};

const rest = {
  $schema: "./appsettings.schema.json",
  McpServer: {
    HttpTransportMode: "Stateful",
    IdleSessionTimeoutSeconds: 60,
    SessionIdPrefix: "r1",
    EnableLegacySse: true,
    MaxRequestBodyBytes: 1000,
    MaxStreamsPerCaller: 4,
    MaxStreams: 64,
    MaxConcurrentRequests: 32,
    BodyReadTimeout: "00:00:10",
    MaxConnections: 100,
    MaxBufferedBodyBytes: 8388608,
    HeaderReadTimeout: "00:00:05",
    KeepAliveTimeout: "00:00:30",
    SendTimeout: "00:00:20",
    MaxStreamQueueBytes: 1048576,
    AllowAnonymous: true,
    AllowedHosts: ["svc.example"],
    TlsCertificatePath: "tls/cert.pem",
    TlsKeyPath: "tls/key.pem",
    TrustForwardedProto: true,
    SubprocessHostMode: "Pool",
    RunspacePool: {
      MaxPoolSize: 4,
      MinPoolSize: 1,
      EagerWarmCount: 1,
      IdleTtl: "00:01:00",
      SweepInterval: "00:00:10",
      AcquisitionTimeout: "00:00:05",
      StopTimeout: "00:00:02",
      ShutdownDrainTimeout: "00:00:05",
      ReplenishCheckInterval: "00:00:05",
      RunspacesPerProcess: 2,
      MaxWorkerMemoryMB: 512,
    },
    SessionRunspaceCapacity: 4,
    SessionRunspaceWarmStandbyCount: 1,
    SessionRunspaceIdleTtlSeconds: 60,
    SessionRunspaceSweepIntervalSeconds: 10,
    SessionRunspaceAcquisitionTimeoutSeconds: 5,
  },
  Authentication: {
    Enabled: true,
    DefaultScheme: "keys",
    DefaultPolicy: { RequireAuthentication: true, RequiredScopes: ["s"], RequiredRoles: ["r"] },
    Schemes: {
      keys: {
        Type: "ApiKey",
        HeaderName: "X-Key",
        EntryNameIsKey: false,
        Keys: {
          ops: {
            Value: "a-long-enough-secret",
            Sha256: "a".repeat(64),
            Scopes: ["s"],
            Roles: ["r"],
          },
        },
      },
      entra: {
        Type: "JwtBearer",
        Authority: "https://login.example",
        JwksUri: "https://login.example/keys",
        Audience: "api://svc",
        ValidAudiences: ["api://svc2"],
        ValidIssuers: ["https://login.example"],
        ClockSkewSeconds: 30,
        RequireHttpsMetadata: true,
        ClaimsMapping: { ScopeClaim: "scp", RoleClaim: "roles", NameClaim: "name" },
      },
    },
    ProtectedResource: {
      Resource: "https://svc.example/mcp",
      ResourceName: "svc",
      AuthorizationServers: ["https://login.example"],
      ScopesSupported: ["s"],
    },
    Cors: { AllowedOrigins: ["https://app.example"] },
    Audit: { LogArguments: true },
  },
  Logging: { LogLevel: { Default: "Information" } },
};

/** Keys the schema accepts on purpose without svc reading them, each with the reason. */
const NOT_SETTINGS: Record<string, string> = {
  "$schema": "the editor's pointer to appsettings.schema.json",
};

async function readKeys(section: "ShellConfiguration" | "PowerShellConfiguration") {
  const dir = await Deno.makeTempDir({ prefix: "svc-schema-" });
  try {
    // PoshMcp's section alone has PoshMcp's place of SubprocessHostMode.
    const own = section === "PowerShellConfiguration" ? { SubprocessHostMode: "Pool" } : {};
    const config = { ...rest, [section]: { ...shell, ...own } };
    await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config));
    await Deno.writeTextFile(`${dir}/startup.ps1`, "$y = 2");
    const settings = await loadSettings({ config: `${dir}/appsettings.json` }, {
      env: {},
      cwd: dir,
    });
    const read = new Set(
      Object.entries(settings.sources).filter(([, source]) => source === "file")
        .map(([key]) => key.toLowerCase()),
    );
    return { config, read };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("security: every key the schema accepts is read by the settings code", async () => {
  for (const section of ["ShellConfiguration", "PowerShellConfiguration"] as const) {
    const { config, read } = await readKeys(section);
    const leaves = treeLeaves(config);
    const generic = (leaf: string) =>
      leaf.split(":").map((part) => RECORD_ENTRIES.has(part) ? "*" : part).join(":");
    // The configuration sets every key of the schema (so a new key must be added here).
    const expected = schemaLeaves(appSettingsSchema).filter((leaf) =>
      !leaf.startsWith(section === "ShellConfiguration" ? "PowerShell" : "ShellConfiguration:")
    );
    assert.deepEqual(
      [...new Set(leaves.map(generic))].sort(),
      expected.sort(),
      "the test's configuration sets exactly the keys of the schema",
    );
    const unread = leaves.filter((leaf) => !(leaf in NOT_SETTINGS))
      .filter((leaf) => !read.has(leaf.toLowerCase()));
    assert.deepEqual(unread, [], `${section}: keys accepted but never read`);
  }
});
