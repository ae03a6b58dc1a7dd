/**
 * `svc doctor`: diagnoses a configuration by doing what `serve` would do, briefly. It resolves
 * PowerShell, starts the configured number of workers (timing each startup script), discovers the
 * tools, and reports them with the effective settings and where each came from, module status, the
 * pool and an authentication summary. It never reports a secret.
 *
 * Exit codes: 0 healthy; 1 problems found (errors, no tool at all, or warnings with `--strict`); 2
 * configuration error; 3 PowerShell cannot be found or started; 5 incomplete: svc can serve, but a
 * configured command or module offers no tool (not found, hidden by an exclude pattern, failing to
 * import).
 *
 * @module
 */
import { dangerousCommandWarnings } from "./dangerous.ts";
import type { ToolDescriptor } from "./tool_descriptor.ts";
import { type ResourceRow, resourceRows } from "./resources.ts";
import { ANONYMOUS, Authenticator } from "./auth.ts";
import type { Settings, SettingSource } from "./config.ts";
import { type HostMode, replacementOf } from "./config_pool.ts";
import { settingOf } from "./config_schema.ts";
import { discoverCatalog, NO_TOOLS, storeCatalog } from "./discovery.ts";
import { toMcpTool } from "./mcp.ts";
import { promptSummary } from "./prompt_policy.ts";
import { portabilityFindings } from "./tool_portability.ts";
import { StartupError } from "./errors.ts";
import { describeOrigin, resolvePwsh } from "./pwsh_path.ts";
import type { WorkerInfo } from "./worker.ts";
import { helloWarnings } from "./worker_hello.ts";
import { type ReadyWorker, startWorker, WorkerStartError } from "./worker_start.ts";

/** One worker started by doctor. */
export interface DoctorWorker {
  /** Milliseconds from spawn to the end of the startup script. */
  startMs: number;
  /** Whether the worker started and its startup script succeeded. */
  ok: boolean;
  /** What went wrong, when it did. */
  error: string | null;
}

/** Everything doctor found. */
export interface DoctorReport {
  version: string;
  configuration: { path: string | null; description: string };
  /** Every setting read: its value (secrets masked), where it came from, and its replacement if deprecated. */
  settings: { key: string; value: unknown; source: SettingSource; deprecated: string | null }[];
  powershell: {
    path: string | null;
    /** Where svc found it (see `describeOrigin`). */
    origin: string | null;
    version: string | null;
    edition: string | null;
    /**
     * The engine members a reset reads that it lacks (`WorkerInfo.missingMembers`): with any, every
     * worker process serves one call and is retired. Null until a worker said hello.
     */
    missingMembers: string[] | null;
  };
  modules: {
    name: string;
    found: boolean;
    version: string | null;
    path: string | null;
    error: string | null;
  }[];
  tools: {
    name: string;
    command: string;
    parameterSet: string;
    descriptionSource: string;
    /** Who answers the tool's prompts, and when it asks (`promptSummary`, lib/prompt_policy.ts). */
    prompts: string;
  }[];
  /** The MCP prompts (`ShellConfiguration:PromptCommands`), their arguments (`*`: required). */
  prompts: { name: string; command: string; arguments: string[] }[];
  /** The resources and templates clients can list (`lib/resources.ts`). */
  resources: ResourceRow[];
  pool: Settings["pool"] & { workers: DoctorWorker[] };
  auth: {
    enabled: boolean;
    defaultScheme: string | null;
    requireAuthentication: boolean;
    requiredScopes: string[];
    requiredRoles: string[];
    schemes: Record<string, unknown>[];
  };
  warnings: string[];
  /** Optional parameters left out of tool schemas, and why (not a problem). */
  leftOut: string[];
  /** Advice that is not a problem, e.g. help content that `Update-Help` would add. */
  hints: string[];
  errors: string[];
  /** Configured commands and modules that offer no tool, as the warnings say them (exit code 5). */
  unresolved: string[];
  exitCode: 0 | 1 | 2 | 3 | 5;
}

/** Options of {@linkcode runDoctor}. */
export interface DoctorOptions {
  /** svc's version. */
  version: string;
  /** Treat warnings as problems (exit 1). @default false (flag `--strict`) */
  strict?: boolean;
}

/** Runs the diagnosis for resolved settings. */
export async function runDoctor(settings: Settings, options: DoctorOptions): Promise<DoctorReport> {
  const { version, strict = false } = options;
  const report: DoctorReport = {
    version,
    configuration: {
      path: settings.configPath,
      description: settings.configPath ?? "embedded default (no appsettings.json found)",
    },
    settings: settingRows(settings),
    powershell: { path: null, origin: null, version: null, edition: null, missingMembers: null },
    modules: [],
    tools: [],
    prompts: [],
    resources: [],
    pool: { ...settings.pool, workers: [] },
    auth: authSummary(settings),
    warnings: [...settings.warnings],
    leftOut: [],
    hints: [],
    errors: [],
    unresolved: [],
    exitCode: 0,
  };
  let pwsh: string;
  try {
    const resolved = await resolvePwsh(settings.shell.pwshPath);
    pwsh = resolved.path;
    report.powershell.path = pwsh;
    report.powershell.origin = describeOrigin(resolved.origin);
  } catch (error) {
    report.errors.push(error instanceof Error ? error.message : String(error));
    report.exitCode = 3;
    return report;
  }
  const count = Math.max(1, settings.pool.eagerWarmCount);
  const started = await Promise.all(
    Array.from({ length: count }, () => startDoctorWorker(pwsh, settings)),
  );
  try {
    report.pool.workers = started.map(({ record }) => record);
    const ready = started.find((s) => s.ready)?.ready;
    const failed = started.find((s) => !s.record.ok);
    if (failed?.record.error) report.errors.push(failed.record.error);
    const info = started.find((s) => s.info)?.info;
    if (!info) {
      report.exitCode = 3;
      return report;
    }
    report.powershell.version = info.psVersion;
    report.powershell.edition = info.edition;
    report.powershell.missingMembers = info.missingMembers;
    // An old release and missing engine members, as the start log says them.
    report.warnings.push(...helloWarnings(info));
    if (ready) {
      report.modules = ready.startup.modules.map((m) => ({ ...m }));
      const catalog = await discoverCatalog(ready.worker, settings.shell, {
        modules: ready.startup.modules,
      });
      // The next `serve` with these settings finds the catalog (and the host this worker compiled)
      // in the caches: a first start after doctor, or after an image build that ran it, is warm.
      await storeCatalog(catalog, { shell: settings.shell, pwsh });
      report.tools = catalog.tools.map((tool) => toolRow(tool, settings));
      report.prompts = (catalog.prompts ?? []).map((prompt) => ({
        name: prompt.name,
        command: prompt.command,
        arguments: prompt.arguments.map((a) => `${a.name}${a.required ? "*" : ""}`),
      }));
      const resources = resourceRows(settings.shell.resources ?? [], catalog.tools);
      report.resources = resources.rows;
      report.warnings.push(...resources.warnings);
      // Missing modules, commands and name collisions, as the catalog noticed them.
      report.warnings.push(...catalog.warnings);
      report.leftOut.push(...(catalog.leftOut ?? []));
      report.hints.push(...helpHints(catalog.tools));
      checkToolSchemas(catalog.tools, settings, report);
      report.unresolved.push(...(catalog.unresolved ?? []));
      if (catalog.tools.length === 0) report.errors.push(NO_TOOLS);
      else report.warnings.push(...callerWarnings(settings, catalog.tools));
      // Commands that run code or write files, and who can call them (also logged at start).
      report.warnings.push(...dangerousCommandWarnings(catalog.tools, settings));
    }
  } finally {
    await Promise.all(started.map((s) => s.ready?.worker.close()));
  }
  if (report.errors.length > 0 || (strict && report.warnings.length > 0)) report.exitCode = 1;
  else if (report.unresolved.length > 0) report.exitCode = 5;
  return report;
}

/** What each process model means, as doctor says it. */
const HOST_MODE_WORDS: Record<HostMode, string> = {
  Pool: "workers share processes; with authentication a process serves one principal at a time",
  ProcessPool: "every worker has a process of its own",
  Single: "every worker runs in one process; with authentication it serves one principal at a time",
};

/** One worker as doctor starts it: ready, or why not and, when it said hello, what it runs. */
interface DoctorStart {
  ready: ReadyWorker | null;
  info: WorkerInfo | null;
  record: DoctorWorker;
}

async function startDoctorWorker(pwsh: string, settings: Settings): Promise<DoctorStart> {
  const begin = performance.now();
  const elapsed = () => Math.round(performance.now() - begin);
  try {
    const ready = await startWorker({
      pwsh,
      shell: settings.shell,
      stopTimeoutMs: settings.pool.stopTimeoutMs,
      label: "doctor worker",
    });
    return {
      ready,
      info: ready.worker.info,
      record: { startMs: elapsed(), ok: true, error: null },
    };
  } catch (error) {
    const failure = error instanceof WorkerStartError ? error : null;
    // A failed startup script, an executable that is not PowerShell and PowerShell's own refusals
    // say it in their words; the rest did not start.
    const ownWords = failure?.code === "STARTUP_SCRIPT" || failure?.code === "NOT_POWERSHELL";
    const message = ownWords || failure?.cause instanceof StartupError
      ? failure.message
      : `PowerShell worker could not start: ${failure?.reason ?? String(error)}`;
    // A worker whose startup script failed still tells which PowerShell it runs.
    const record = { startMs: elapsed(), ok: false, error: message };
    return { ready: null, info: failure?.info ?? null, record };
  }
}

// `Pass` alone, not `PassVariables` (a list of variable names).
const SECRET_NAME = /^pass$|password|secret|token|credential/i;

/** Settings as doctor shows them: values with secrets masked, and no key path that is a secret. */
function settingRows(settings: Settings): DoctorReport["settings"] {
  const { sources, values } = settings;
  const rows = Object.keys(sources).map((key) => {
    // A PoshMcp-style API key entry is named by the key itself: show it only when the entry has a
    // Value or Sha256 (then its name is a name).
    const entry = /^(Authentication:Schemes:[^:]+:Keys:)([^:]+)(.*)$/i.exec(key);
    let shown = key;
    if (entry) {
      const prefix = `${entry[1]}${entry[2]}`;
      const named = values[`${prefix}:Value`] !== undefined ||
        values[`${prefix}:Sha256`] !== undefined;
      if (!named) shown = `${entry[1]}[key]${entry[3]}`;
    }
    const last = key.split(":").at(-1) ?? "";
    const secret = (entry !== null && /^(Value|Sha256)$/i.test(last)) || SECRET_NAME.test(last);
    const value = values[key];
    return {
      key: shown,
      value: secret && value !== undefined ? "[secret]" : value,
      source: sources[key]!,
      deprecated: replacementOf(key),
    };
  });
  // A deprecated key is worth a row only when it is set.
  return rows.filter((row) => row.deprecated === null || row.value !== undefined)
    .sort((a, b) => a.key.localeCompare(b.key));
}

/**
 * Says which commands have no help content and what would add it: `Update-Help` for a module's
 * commands; for commands of no module (functions of the startup script) it can do nothing, and a
 * comment-based help block in the function can.
 */
function helpHints(tools: ToolDescriptor[]): string[] {
  const fromModules = new Map<string, string>();
  const own = new Set<string>();
  for (const tool of tools) {
    if (tool.descriptionSource !== "generated") continue;
    if (tool.module) fromModules.set(tool.command, tool.module);
    else own.add(tool.command);
  }
  const shown = (commands: string[]) =>
    commands.slice(0, 10).join(", ") + (commands.length > 10 ? ", ..." : "");
  const hints: string[] = [];
  if (fromModules.size > 0) {
    const modules = [...new Set(fromModules.values())];
    hints.push(
      `${fromModules.size} command(s) have no help content installed (${
        shown([...fromModules.keys()])
      }); their descriptions are generated from metadata, and 'Update-Help -Module ${
        modules.join(", ")
      }' would add synopses and parameter descriptions (restart svc or clear the catalog cache after it).`,
    );
  }
  if (own.size > 0) {
    hints.push(
      `${own.size} command(s) of no module, such as functions of the startup script, have no help (${
        shown([...own])
      }); their descriptions are generated from metadata, and a comment-based help block (.SYNOPSIS, .PARAMETER) in each function would give them one.`,
    );
  }
  return hints;
}

/**
 * The tool list as clients receive it, checked against the portable subset
 * (`lib/tool_portability.ts`): each finding a warning, its size and tool count a hint.
 */
function checkToolSchemas(tools: ToolDescriptor[], settings: Settings, report: DoctorReport): void {
  const listed = tools.map((tool) => toMcpTool(tool, settings.shell));
  const bytes = new TextEncoder().encode(JSON.stringify({ tools: listed })).length;
  const findings = portabilityFindings(listed);
  for (const finding of findings) {
    report.warnings.push(
      `${finding}; some MCP clients refuse such a tool list (docs/tool-schemas.md)`,
    );
  }
  report.hints.push(
    `tools/list carries ${listed.length} tool(s) in ${bytes} bytes${
      findings.length === 0 ? ", every schema in the portable subset (docs/tool-schemas.md)" : ""
    }`,
  );
}

/**
 * Warnings for callers who can call nothing: an API key without the required scopes or without a
 * role any tool accepts, and a configured role that no tool accepts.
 */
function callerWarnings(settings: Settings, tools: ToolDescriptor[]): string[] {
  const { auth } = settings;
  if (!auth.enabled) return [];
  const authenticator = new Authenticator({ auth, shell: settings.shell });
  const callsSomething = (roles: string[]) =>
    tools.some((tool) => authenticator.mayCall({ ...ANONYMOUS, roles }, tool));
  const warnings: string[] = [];
  for (const [name, scheme] of Object.entries(auth.schemes)) {
    if (scheme.type !== "ApiKey") continue;
    for (const key of scheme.keys) {
      const missing = auth.requiredScopes.filter((s) => !key.scopes.includes(s));
      if (missing.length > 0) {
        warnings.push(
          `API key '${key.id}' of scheme '${name}' can call no tool: it lacks the required scope(s) ${
            missing.join(", ")
          }`,
        );
      } else if (!callsSomething(key.roles)) {
        warnings.push(
          `API key '${key.id}' of scheme '${name}' can call no tool: none of its roles (${
            key.roles.join(", ") || "none"
          }) is required by any offered tool`,
        );
      }
    }
  }
  const overrideRoles = Object.values(settings.shell.commandOverrides).flatMap((o) =>
    o.requiredRoles ?? []
  );
  for (const role of new Set([...auth.requiredRoles, ...overrideRoles])) {
    if (!callsSomething([role])) {
      warnings.push(`Role '${role}' can call no tool: no offered tool accepts it`);
    }
  }
  return warnings;
}

function toolRow(tool: ToolDescriptor, settings: Settings): DoctorReport["tools"][number] {
  return {
    name: tool.name,
    command: tool.command,
    parameterSet: tool.parameterSet,
    descriptionSource: tool.descriptionSource,
    prompts: promptSummary(settings.shell, tool),
  };
}

/** The Authentication section without any secret: key ids, roles and scopes only. */
function authSummary(settings: Settings): DoctorReport["auth"] {
  const { auth } = settings;
  return {
    enabled: auth.enabled,
    defaultScheme: auth.defaultScheme,
    requireAuthentication: auth.requireAuthentication,
    requiredScopes: auth.requiredScopes,
    requiredRoles: auth.requiredRoles,
    schemes: Object.entries(auth.schemes).map(([name, scheme]) =>
      scheme.type === "ApiKey"
        ? {
          name,
          type: "ApiKey",
          headerName: scheme.headerName,
          keys: scheme.keys.map((k) => ({ id: k.id, scopes: k.scopes, roles: k.roles })),
        }
        : {
          name,
          type: "JwtBearer",
          authority: scheme.authority,
          jwksUri: scheme.jwksUri,
          audiences: scheme.audiences,
          issuers: scheme.issuers,
        }
    ),
  };
}

/** Renders a report as text for people. */
export function formatDoctorText(report: DoctorReport): string {
  const lines: string[] = [];
  const section = (title: string) => lines.push("", title);
  const bullets = (title: string, items: string[]) => {
    if (items.length === 0) return;
    section(title);
    for (const item of items) lines.push(`  - ${item}`);
  };
  lines.push(`svc ${report.version} doctor`);
  section("Configuration");
  lines.push(`  file: ${report.configuration.description}`);
  section("PowerShell");
  lines.push(`  path: ${report.powershell.path ?? "(not found)"}`);
  if (report.powershell.origin) lines.push(`  from: ${report.powershell.origin}`);
  lines.push(
    `  version: ${report.powershell.version ?? "(unknown)"}${
      report.powershell.edition ? ` (${report.powershell.edition})` : ""
    }`,
  );
  const missing = report.powershell.missingMembers;
  if (missing !== null) {
    lines.push(
      `  engine members a reset reads: ${
        missing.length === 0
          ? "all found"
          : `MISSING ${missing.join(", ")} (every worker process serves one call)`
      }`,
    );
  }
  section("Modules");
  if (report.modules.length === 0) lines.push("  (none configured)");
  for (const m of report.modules) {
    lines.push(
      `  ${m.error === null ? "ok     " : m.found ? "FAILED " : "MISSING"} ${m.name}${
        m.version ? ` ${m.version}` : ""
      }${m.error ? `: ${m.error}` : ""}`,
    );
  }
  section(`Tools (${report.tools.length})`);
  for (const t of report.tools) {
    lines.push(
      `  ${t.name}  <- ${t.command} [${t.parameterSet}] (${
        t.descriptionSource === "generated"
          ? "description generated from metadata"
          : `description from ${t.descriptionSource}`
      }; prompts ${t.prompts})`,
    );
  }
  section(`Resources (${report.resources.length})`);
  for (const r of report.resources) lines.push(`  ${r.uri}  (${r.name}) <- ${r.servedBy}`);
  if (report.prompts.length > 0) {
    section(`Prompts (${report.prompts.length})`);
    for (const prompt of report.prompts) {
      lines.push(
        `  ${prompt.name}  <- ${prompt.command} (arguments: ${
          prompt.arguments.join(", ") || "none"
        }; * required)`,
      );
    }
  }
  section("Worker pool");
  const p = report.pool;
  lines.push(
    `  MaxPoolSize ${p.maxPoolSize}, MinPoolSize ${p.minPoolSize}, EagerWarmCount ${p.eagerWarmCount}, ` +
      `AcquisitionTimeout ${p.acquisitionTimeoutMs / 1000} s, StopTimeout ${
        p.stopTimeoutMs / 1000
      } s, RunspacesPerProcess ${p.runspacesPerProcess}`,
  );
  lines.push(`  SubprocessHostMode ${p.hostMode}: ${HOST_MODE_WORDS[p.hostMode]}`);
  p.workers.forEach((w, i) =>
    lines.push(
      `  worker ${i + 1}: ${w.ok ? "started" : "FAILED"} in ${w.startMs} ms${
        w.error ? ` (${w.error})` : ""
      }`,
    )
  );
  lines.push(`  state: ${p.workers.filter((w) => w.ok).length}/${p.workers.length} workers warm`);
  section("Authentication");
  const a = report.auth;
  lines.push(
    `  enabled: ${a.enabled}${a.defaultScheme ? `, default scheme ${a.defaultScheme}` : ""}`,
  );
  if (a.enabled) {
    lines.push(
      `  policy: ${a.requireAuthentication ? "authentication required" : "anonymous allowed"}; ` +
        `scopes: ${a.requiredScopes.join(", ") || "none"}; roles: ${
          a.requiredRoles.join(", ") || "any"
        }`,
    );
  }
  for (const s of a.schemes) lines.push(`  ${schemeLine(s)}`);
  settingLines(report, section, lines);
  bullets("Hints", report.hints);
  bullets("Left out of tools (JSON cannot give these)", report.leftOut);
  bullets("Warnings", report.warnings);
  bullets("Errors", report.errors);
  lines.push("", verdict(report));
  return lines.join("\n");
}

/** Whether a setting's value says nothing its default does not (an empty list or text, `{}`). */
function atDefault(key: string, value: unknown): boolean {
  const fallback = settingOf(key)?.default;
  if (fallback !== undefined) return JSON.stringify(value) === JSON.stringify(fallback);
  return value === "" || (Array.isArray(value) && value.length === 0) ||
    (typeof value === "object" && value !== null && Object.keys(value).length === 0);
}

/**
 * The settings whose value differs from the default, after what matters more: `create-config`
 * writes every default, and 80 lines of them hid the rest. `--format json` lists every setting.
 */
function settingLines(
  report: DoctorReport,
  section: (title: string) => void,
  lines: string[],
): void {
  const given = report.settings.filter(({ key, value, source }) =>
    source !== "default" && value !== undefined && value !== null && !atDefault(key, value)
  );
  section(
    `Settings not at their defaults (${given.length} of ${report.settings.length}; --format json lists all)`,
  );
  for (const { key, value, source, deprecated } of given) {
    lines.push(
      `  ${key} = ${JSON.stringify(value)}  [${source}]${
        deprecated ? `  DEPRECATED: use ${deprecated}` : ""
      }`,
    );
  }
}

/** doctor's last line: one word for each exit code, so that a glance tells them apart. */
function verdict(report: DoctorReport): string {
  switch (report.exitCode) {
    case 0:
      return "Healthy.";
    case 5:
      return `Incomplete: svc can serve, but ${report.unresolved.length} configured command(s) or module(s) offer no tool (see Warnings; exit code 5).`;
    default:
      return `Problems found (exit code ${report.exitCode}).`;
  }
}

/** One authentication scheme in words, e.g. `scheme keys: ApiKey in header X-API-Key; keys: ci (roles reader)`. */
function schemeLine(scheme: Record<string, unknown>): string {
  const list = (values: unknown) => (values as string[]).join(", ") || "none";
  if (scheme.type === "ApiKey") {
    const keys = (scheme.keys as { id: string; roles: string[]; scopes: string[] }[]).map((k) =>
      `${k.id} (roles ${list(k.roles)}; scopes ${list(k.scopes)})`
    );
    return `scheme ${scheme.name}: ApiKey in header ${scheme.headerName}; keys: ${keys.join(", ")}`;
  }
  const source = scheme.authority ? `authority ${scheme.authority}` : `key set ${scheme.jwksUri}`;
  const issuers = (scheme.issuers as string[]).length > 0
    ? list(scheme.issuers)
    : "the one discovery reports";
  return `scheme ${scheme.name}: JwtBearer, ${source}; audiences ${
    list(scheme.audiences)
  }; issuers ${issuers}`;
}
