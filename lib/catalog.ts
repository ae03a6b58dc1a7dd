/**
 * The catalog: which commands become tools and what those tools look like. Everything here is pure
 * policy over the raw metadata a worker reports (`describe`): command selection, tool names, JSON
 * Schemas, descriptions, annotations and collision handling.
 *
 * Selection semantics (documented in docs/tools.md, "Which commands become tools"):
 * 1. every name in `Commands` is a tool source (a missing one is a warning);
 * 2. every command of each module in `Modules`, narrowed to `IncludePatterns` when there are any;
 * 3. with no `Modules`, `IncludePatterns` select from every command of the session;
 * 4. `ExcludePatterns` remove anything they match, explicit names included: exclude always wins.
 *    They are tested against the command a name resolves to (an alias's command; a module-qualified
 *    name's command), by its name and its module-qualified name (`Module\Verb-Noun`).
 *
 * Discovery against a worker and the on-disk cache live in `discovery.ts`.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { ShellSettings, ToolGranularity } from "./config.ts";
import { commandTool } from "./catalog_command.ts";
import { annotationsFor, confirmImpactOf, outputMediaTypeOf } from "./catalog_annotations.ts";
import {
  ALL_SETS,
  cap,
  commandHelp,
  PARAMETER_DESCRIPTION_CAP,
  sanitize,
  toolDescription,
} from "./catalog_description.ts";
import { SHAPING_PARAMETERS } from "./output_shaping.ts";
import { wildcard } from "./wildcard.ts";
import { ENUM_CAP, MAX_TOOL_NAME } from "./tool_portability.ts";
import type {
  JsonSchema,
  McpPromptDescriptor,
  ToolDescriptor,
  ToolParameter,
} from "./tool_descriptor.ts";
import type { SourceStamps } from "./catalog_sources.ts";
import type {
  CommandMeta,
  CommandsResult,
  ModuleStatus,
  ParameterSetMeta,
  ParamMeta,
} from "./worker_protocol.ts";

/** The tools of a configuration plus what was noticed building them. */
export interface Catalog {
  tools: ToolDescriptor[];
  /** The MCP prompts (`ShellConfiguration:PromptCommands`, `lib/catalog_prompts.ts`). @default undefined (none) */
  prompts?: McpPromptDescriptor[];
  /** Human-readable warnings: missing commands or modules, collisions, commands with no set offered. */
  warnings: string[];
  /**
   * Those of the warnings that name something configured that offers nothing: a command not found,
   * hidden by an exclude pattern or not described, a module not imported. doctor's verdict is not
   * healthy with any. @default undefined (none)
   */
  unresolved?: string[];
  /**
   * What JSON cannot give, for doctor rather than every start's log: parameter sets not offered
   * (Get-Process's InputObject sets take Process objects) and optional parameters left out.
   */
  leftOut?: string[];
  /** PowerShell version the metadata came from. */
  psVersion: string;
  /** Versions of the configured modules, to validate a cached catalog. */
  modules: { name: string; version: string | null }[];
  /**
   * The files its commands' code came from, as they were when it was built; a cached catalog whose
   * files changed is not served. @default undefined (built without a worker: never cached)
   */
  sources?: SourceStamps;
}

/** PowerShell common parameters; never tool arguments (WhatIf/Confirm are kept where supported). */
const COMMON_PARAMETERS = new Set(
  [
    "Verbose",
    "Debug",
    "ErrorAction",
    "WarningAction",
    "InformationAction",
    "ProgressAction",
    "ErrorVariable",
    "WarningVariable",
    "InformationVariable",
    "OutVariable",
    "OutBuffer",
    "PipelineVariable",
  ].map((s) => s.toLowerCase()),
);

/** Types whose values cannot come from JSON: a mandatory one removes its set, an optional one is dropped. */
const UNBINDABLE_TYPE =
  /^(System\.(IntPtr|UIntPtr|Delegate|MulticastDelegate|Type|Reflection\.Assembly|IO\.Stream|Threading\.WaitHandle)|System\.Management\.Automation\.(ScriptBlock|PowerShell|Runspaces\..*)|.*\*|.*&)$/;

const INTEGER_RANGES: Record<string, [number, number]> = {
  "System.Byte": [0, 255],
  "System.SByte": [-128, 127],
  "System.Int16": [-32768, 32767],
  "System.UInt16": [0, 65535],
  "System.Int32": [-2147483648, 2147483647],
  "System.UInt32": [0, 4294967295],
  "System.Int64": [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  "System.UInt64": [0, Number.MAX_SAFE_INTEGER],
};

/**
 * The request for the worker's `commands` operation that implements the selection semantics:
 * include patterns are searched globally only when no module narrows them.
 */
export function candidateQuery(
  shell: ShellSettings,
): { names: string[]; modules: string[]; patterns: string[] } {
  return {
    names: shell.commands,
    modules: shell.modules,
    patterns: shell.modules.length > 0 ? [] : shell.includePatterns,
  };
}

/**
 * Applies the selection semantics to the worker's candidates; returns command names and warnings,
 * each about a configured command that is not offered (not found, or hidden by an exclude pattern).
 */
export function selectCommands(
  shell: ShellSettings,
  found: CommandsResult,
): { names: string[]; warnings: string[] } {
  const include = shell.includePatterns.map(wildcard);
  const exclude = shell.excludePatterns.map(wildcard);
  const warnings = found.missing.map((name) =>
    `Command '${name}' was not found in the worker session`
  );
  const names: string[] = [];
  const seen = new Set<string>();
  for (const candidate of found.commands) {
    const key = candidate.name.toLowerCase();
    if (seen.has(key)) continue;
    if (
      candidate.source === "module" && include.length > 0 &&
      !include.some((p) => p.test(candidate.name))
    ) {
      continue;
    }
    // The command's own name and its module-qualified name: the worker resolved aliases and
    // qualified names before this, so what is tested is what will run.
    const qualified = candidate.module ? `${candidate.module}\\${candidate.name}` : null;
    const hiding = shell.excludePatterns.find((_, i) =>
      exclude[i]!.test(candidate.name) || (qualified !== null && exclude[i]!.test(qualified))
    );
    if (hiding !== undefined) {
      // Exclusion wins, but a command named in Commands and never offered is said, not dropped.
      if (candidate.source === "name" && !seen.has(`hidden:${key}`)) {
        seen.add(`hidden:${key}`);
        warnings.push(
          `Command '${candidate.via}' (ShellConfiguration:Commands) is hidden by the exclude pattern '${hiding}' and is not offered`,
        );
      }
      continue;
    }
    seen.add(key);
    names.push(candidate.name);
  }
  return { names, warnings };
}

/** Converts `Get-PSDrive` / `IdWithUserName` style names to snake case (REFERENCE §1.1 step 1). */
function snake(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9_]+/g, "_")
    .replace(/_+/g, "_")
    .replace(/^_+|_+$/g, "")
    .toLowerCase();
}

/**
 * The MCP tool name of a command's parameter set: `get_process_name`; a command with only
 * `__AllParameterSets` gets the bare name (`get_date`). Names contain only `[a-z0-9_]` and have at
 * most 64 characters: a longer one keeps its first 55 and a digest of the whole.
 */
export function toolName(command: string, parameterSet: string | null): string {
  let name = snake(command);
  if (/^\d/.test(name)) name = `_${name}`;
  if (parameterSet && parameterSet.trim() !== "" && parameterSet !== ALL_SETS) {
    name = `${name}_${snake(parameterSet)}`;
  }
  if (name === "") return "unnamed_command";
  // Clients refuse longer names; a digest of the whole name keeps a cut one unique.
  if (name.length > MAX_TOOL_NAME) {
    const digest = createHash("sha256").update(name).digest("hex").slice(0, 8);
    name = `${name.slice(0, MAX_TOOL_NAME - digest.length - 1)}_${digest}`;
  }
  return name;
}

/** Options of {@linkcode buildTools}. */
export interface BuildToolsOptions {
  /** PowerShell version of the worker that described the commands. */
  psVersion: string;
  /** Module import outcomes from startup (missing modules become warnings). */
  modules?: ModuleStatus[];
  /**
   * Warnings gathered before, each about a configured command that is not offered (from
   * {@linkcode selectCommands}, or a command that could not be described).
   */
  warnings?: string[];
  /** One tool per parameter set, or one per command. @default "ParameterSet" */
  granularity?: ToolGranularity;
}

/**
 * Turns described commands into tool descriptors, one per parameter set (or per command, merging
 * its sets), and reports what could not be offered and name collisions.
 */
export function buildTools(commands: CommandMeta[], options: BuildToolsOptions): Catalog {
  const unresolved = [...(options.warnings ?? [])];
  for (const module of options.modules ?? []) {
    // Found but failing (a parse error in the .psm1) offers nothing either.
    if (!module.found || module.error !== null) {
      unresolved.push(
        `Module '${module.name}' could not be imported: ${module.error ?? "not found"}`,
      );
    }
  }
  const warnings = [...unresolved];
  const tools: ToolDescriptor[] = [];
  const leftOut: string[] = [];
  const owners = new Map<string, string>();
  const offer = (tool: ToolDescriptor, owner: string): boolean => {
    const previous = owners.get(tool.name);
    if (previous) {
      warnings.push(
        `Tool name '${tool.name}' is generated by ${previous} and ${owner}; ${owner} is not offered`,
      );
      return false;
    }
    owners.set(tool.name, owner);
    tools.push(tool);
    return true;
  };
  for (const command of commands) {
    const setTools = command.parameterSets
      .map((set) => buildTool(command, set, leftOut))
      .filter((tool) => tool !== null);
    if (setTools.length === 0 && command.parameterSets.length > 0) {
      warnings.push(
        `Command '${command.name}' has no parameter set that can be called with JSON arguments`,
      );
    }
    if (options.granularity === "Command" && setTools.length > 0) {
      const name = toolName(command.name, null);
      const [only] = setTools;
      const tool = setTools.length === 1 && only
        ? { ...only, name }
        : commandTool(command, name, setTools);
      offer(tool, command.name);
      continue;
    }
    for (const tool of setTools) offer(tool, `${command.name} (set ${tool.parameterSet})`);
  }
  // One order for every list of tools, whatever order discovery found the commands in: clients
  // cache and compare tool lists, and the conformance suite warns on an unstable order.
  tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    tools,
    warnings,
    ...(unresolved.length > 0 ? { unresolved } : {}),
    leftOut,
    psVersion: options.psVersion,
    modules: (options.modules ?? []).map((m) => ({ name: m.name, version: m.version })),
  };
}

function buildTool(
  command: CommandMeta,
  set: ParameterSetMeta,
  leftOut: string[],
): ToolDescriptor | null {
  const parameters: ToolParameter[] = [];
  const skipped: ParamMeta[] = [];
  const ordered = [...set.parameters].sort(parameterOrder);
  for (const param of ordered) {
    const lower = param.name.toLowerCase();
    if (COMMON_PARAMETERS.has(lower)) continue;
    // A dynamic parameter is offered only when discovery said whose it is: a provider's, described
    // for a path of that provider (a function's dynamicparam block depends on what, svc cannot tell).
    const provider = param.isDynamic ? command.provider ?? null : null;
    if (param.isDynamic && provider === null) continue;
    if ((lower === "whatif" || lower === "confirm") && !command.supportsShouldProcess) continue;
    const built = toolParameter(param, command.help?.parameters[param.name] ?? null, provider);
    if (built) {
      parameters.push(built);
    } else if (param.isMandatory) {
      // A command with other sets still works, so this is no warning at every start (the command
      // with none left gets one in buildTools); doctor lists it.
      leftOut.push(
        `Parameter set '${set.name}' of '${command.name}' is not offered: mandatory parameter '${param.name}' has type ${param.type}, which JSON cannot express`,
      );
      return null;
    } else {
      skipped.push(param);
    }
  }
  for (const param of skipped) {
    leftOut.push(
      `Optional parameter '${param.name}' of '${command.name}' (set '${set.name}') is left out: its type ${param.type} cannot be given in JSON`,
    );
  }
  for (const shaping of SHAPING_PARAMETERS) {
    if (!parameters.some((p) => p.name.toLowerCase() === shaping.name.toLowerCase())) {
      parameters.push(shaping);
    }
  }
  const properties: Record<string, JsonSchema> = {};
  for (const p of parameters) properties[p.name] = p.schema;
  const required = parameters.filter((p) => p.required).map((p) => p.name);
  const inputSchema: JsonSchema = { type: "object", properties };
  if (required.length > 0) inputSchema.required = required;
  inputSchema.additionalProperties = false;
  const { description, source } = toolDescription(command, set);
  return {
    name: toolName(command.name, set.name),
    command: command.name,
    parameterSet: set.name,
    module: command.module,
    description,
    descriptionSource: source,
    inputSchema,
    annotations: annotationsFor(command.name, command.verb),
    ...confirmImpactOf(command),
    ...outputMediaTypeOf(command),
    parameters,
    help: commandHelp(command),
  };
}

/** Positional parameters first, by position; then the rest by name. */
function parameterOrder(a: ParamMeta, b: ParamMeta): number {
  const pa = a.position ?? Number.MAX_SAFE_INTEGER;
  const pb = b.position ?? Number.MAX_SAFE_INTEGER;
  return pa !== pb ? pa - pb : a.name.localeCompare(b.name);
}

function toolParameter(
  param: ParamMeta,
  helpText: string | null,
  provider: string | null,
): ToolParameter | null {
  const described = (parameter: ToolParameter) =>
    withDescription(provider ? { ...parameter, provider } : parameter, param, helpText);
  if (param.isSwitch) {
    return described({
      name: param.name,
      schema: { type: "boolean" },
      required: param.isMandatory,
      kind: "switch",
    });
  }
  if (param.isCredential) {
    return described({
      name: param.name,
      schema: {
        type: "object",
        properties: {
          UserName: { type: "string" },
          Password: { type: "string", writeOnly: true },
        },
        required: ["UserName", "Password"],
        additionalProperties: false,
      },
      required: param.isMandatory,
      kind: "credential",
    });
  }
  const isArray = param.elementType !== null || param.type.endsWith("[]");
  const elementType = param.elementType ?? (isArray ? param.type.slice(0, -2) : param.type);
  const item = scalarSchema(elementType, param);
  if (!item) return null;
  let schema: JsonSchema;
  if (isArray) {
    schema = { type: "array", items: item };
    if (param.validateCount) {
      schema.minItems = param.validateCount.min;
      schema.maxItems = param.validateCount.max;
    }
    if (param.validateNotNullOrEmpty) schema.minItems = Math.max(Number(schema.minItems ?? 0), 1);
  } else {
    schema = item;
    if (param.validateNotNullOrEmpty && schema.type === "string") {
      schema.minLength = Math.max(Number(schema.minLength ?? 0), 1);
    }
  }
  return described({ name: param.name, schema, required: param.isMandatory, kind: "value" });
}

function scalarSchema(type: string, param: ParamMeta): JsonSchema | null {
  if (UNBINDABLE_TYPE.test(type) || param.fromString === false) {
    return null;
  }
  let schema: JsonSchema;
  const range = INTEGER_RANGES[type];
  if (param.enumValues && param.enumValues.length > 0) {
    schema = { type: "string", ...listedEnum(param.enumValues) };
  } else if (range) {
    schema = { type: "integer", minimum: range[0], maximum: range[1] };
  } else if (type === "System.Double" || type === "System.Single" || type === "System.Decimal") {
    schema = { type: "number" };
  } else if (type === "System.Boolean" || type === "System.Management.Automation.SwitchParameter") {
    schema = { type: "boolean" };
  } else if (
    /^System\.Collections\.(Hashtable|IDictionary|Specialized\.OrderedDictionary)$/.test(type)
  ) {
    schema = { type: "object", properties: {}, additionalProperties: true };
  } else if (type === "System.Management.Automation.PSObject" || type === "System.Object") {
    schema = anyValueSchema();
  } else if (type === "System.DateTime" || type === "System.DateTimeOffset") {
    schema = { type: "string", format: "date-time" };
  } else if (type === "System.Char") {
    schema = { type: "string", minLength: 1, maxLength: 1 };
  } else {
    // Strings, and types PowerShell converts from a string (paths, TimeSpan, Uri, IPAddress, ...).
    schema = { type: "string" };
  }
  if (param.validateSet && param.validateSet.length > 0) {
    delete schema.anyOf;
    delete schema.enum;
    schema.type = "string";
    Object.assign(schema, listedEnum(param.validateSet));
  }
  if (param.validateRange && (schema.type === "integer" || schema.type === "number")) {
    const { min, max } = param.validateRange;
    if (typeof min === "number") schema.minimum = min;
    if (typeof max === "number") schema.maximum = max;
  }
  if (param.validateLength && schema.type === "string") {
    schema.minLength = param.validateLength.min;
    schema.maxLength = param.validateLength.max;
  }
  if (param.validatePattern && schema.type === "string") schema.pattern = param.validatePattern;
  return schema;
}

/**
 * Any JSON value, spelled out type by type. An empty schema says the same, but clients that map
 * tool schemas onto a typed dialect (Gemini's OpenAPI subset, OpenAI's strict mode) reject or
 * mangle a property without a type, and the Inspector's `--strict` check flags it.
 */
function anyValueSchema(): JsonSchema {
  const scalars = [
    { type: "string" },
    { type: "number" },
    { type: "boolean" },
    { type: "object", properties: {}, additionalProperties: true },
  ];
  return { anyOf: [...scalars, { type: "array", items: { anyOf: scalars } }] };
}

/**
 * The values of a ValidateSet or enum as a schema lists them: without an empty member (clients
 * refuse or mangle one) and only up to `ENUM_CAP` of them (Get-Culture's 806 names made an 8.7 KB
 * schema). What is left out is still accepted: {@linkcode acceptedValues} keeps it for svc's check.
 */
function listedEnum(values: string[]): { enum?: string[] } {
  const listed = values.filter((value) => value !== "");
  return listed.length > 0 && listed.length <= ENUM_CAP ? { enum: listed } : {};
}

/** The ValidateSet, else the enum names, of a parameter; null when it has neither. */
function valuesOf(param: ParamMeta): string[] | null {
  if (param.validateSet && param.validateSet.length > 0) return param.validateSet;
  if (param.enumValues && param.enumValues.length > 0) return param.enumValues;
  return null;
}

/** Every value PowerShell accepts, when the schema cannot list them all; else undefined. */
function acceptedValues(param: ParamMeta): string[] | undefined {
  const values = valuesOf(param);
  if (!values || listedEnum(values).enum?.length === values.length) return undefined;
  return [...values];
}

/** Values named in a description before "such as" stops. */
const NAMED_VALUES = 8;

function withDescription(
  parameter: ToolParameter,
  param: ParamMeta,
  helpText: string | null,
): ToolParameter {
  const accepted = acceptedValues(param);
  if (accepted) parameter.accepted = accepted;
  const text = sanitize(helpText ?? "") || sanitize(param.helpMessage ?? "") || valuesPhrase(param);
  const provider = parameter.provider
    ? `${parameter.provider} provider parameter: only for ${parameter.provider} paths.`
    : null;
  const full = [text, provider].filter((part) => part).join(" ");
  if (full) parameter.schema.description = cap(full, PARAMETER_DESCRIPTION_CAP);
  return parameter;
}

/** `One of: a, b` for a parameter with few values; `One of 806 values, such as …` for many. */
function valuesPhrase(param: ParamMeta): string | null {
  const each = param.elementType || param.type.endsWith("[]") ? "Each item is one" : "One";
  const values = valuesOf(param);
  if (!values) {
    const suggested = (param.completions ?? []).filter((value) => value !== "");
    return suggested.length > 0
      ? `Suggested values: ${suggested.slice(0, ENUM_CAP).join(", ")}.`
      : null;
  }
  const listed = values.filter((value) => value !== "");
  const empty = listed.length < values.length ? " (or an empty string)" : "";
  // Every value is in the schema's enum already: said again, it is only more bytes.
  if (listed.length <= ENUM_CAP && empty === "") return null;
  return listed.length <= ENUM_CAP
    ? `${each} of: ${listed.join(", ")}${empty}`
    : `${each} of ${listed.length} values${empty}, such as ${
      listed.slice(0, NAMED_VALUES).join(", ")
    }`;
}
