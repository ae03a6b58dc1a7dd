// Command metadata of the stand-in worker: the authoring form (CommandDef/ParamDef), the wire form
// (CommandMeta/ParamMeta of docs/worker-protocol.md §4.3), PowerShell's common parameters, the
// syntax line (CommandParameterSetInfo.ToString()) and the loader for the built-in cmdlets'
// documented structure (tests/fixtures/cmdlets-7.4.json).

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The name PowerShell gives the single set of a command without named parameter sets. */
export const allParameterSets = "__AllParameterSets";

export const switchType = "System.Management.Automation.SwitchParameter";
export const credentialType = "System.Management.Automation.PSCredential";

export interface SetMembership {
  mandatory: boolean;
  position: number | null;
}

export type Validation = "set" | "range" | "length" | "pattern" | "count" | "notNullOrEmpty";

/** A parameter as the stand-in knows it (a superset of ParamMeta, before it is split per set). */
export interface ParamDef {
  name: string;
  /** .NET full name, e.g. `System.String[]`. */
  type: string;
  /** Set name → membership; the key `__AllParameterSets` means every set of the command. */
  sets: Record<string, SetMembership>;
  aliases?: string[];
  valueFromPipeline?: boolean;
  valueFromRemainingArguments?: boolean;
  helpMessage?: string;
  /** Names of the enum type, or of the array's enum element type. */
  enumValues?: string[];
  validateSet?: string[];
  validateRange?: { min: number | string; max: number | string };
  validateLength?: { min: number; max: number };
  validatePattern?: string;
  validateCount?: { min: number; max: number };
  validateNotNullOrEmpty?: boolean;
  allowNull?: boolean;
  allowEmptyString?: boolean;
  allowEmptyCollection?: boolean;
  /**
   * Keep the argument as given instead of wrapping a single value in an array: Write-Output's
   * InputObject is a PSObject in the 7.x source, so `-NoEnumerate` can tell a scalar from an array.
   */
  bindAsGiven?: boolean;
  /**
   * Order in which the validation attributes run. PowerShell evaluates a script parameter's
   * attributes from the one nearest the variable outwards (Compiler.cs reverses the declared list).
   */
  validationOrder?: Validation[];
}

export interface CommandHelp {
  synopsis: string | null;
  description: string | null;
  parameters: Record<string, string>;
}

export interface CommandDef {
  name: string;
  commandType: "Cmdlet" | "Function";
  module: string;
  moduleVersion: string;
  /** Parameter sets in the order Get-Command reports them (the default set first). */
  setNames: string[];
  defaultParameterSet: string | null;
  supportsShouldProcess: boolean;
  outputTypes: string[];
  /** The command's own parameters in declaration order (no common parameters). */
  params: ParamDef[];
  help: CommandHelp;
  /** Second half of a binding error's FQID: the implementing type (cmdlet) or function name. */
  errorIdSuffix: string;
}

// ---------------------------------------------------------------------------------------------
// Wire form (docs/worker-protocol.md §4.3)

export interface ParamMeta {
  name: string;
  type: string;
  elementType: string | null;
  isMandatory: boolean;
  position: number | null;
  valueFromPipeline: boolean;
  valueFromRemainingArguments: boolean;
  helpMessage: string | null;
  aliases: string[];
  isSwitch: boolean;
  isCredential: boolean;
  enumValues: string[] | null;
  validateSet: string[] | null;
  validateRange: { min: number | string; max: number | string } | null;
  validateLength: { min: number; max: number } | null;
  validatePattern: string | null;
  validateCount: { min: number; max: number } | null;
  validateNotNullOrEmpty: boolean;
  isDynamic: boolean;
}

export interface ParameterSetMeta {
  name: string;
  isDefault: boolean;
  syntax: string;
  parameters: ParamMeta[];
}

export interface CommandMeta {
  name: string;
  commandType: string;
  module: string | null;
  moduleVersion: string | null;
  verb: string | null;
  noun: string | null;
  defaultParameterSet: string | null;
  supportsShouldProcess: boolean;
  outputTypes: string[];
  parameterSets: ParameterSetMeta[];
  help: CommandHelp | null;
}

// ---------------------------------------------------------------------------------------------
// Common parameters ([System.Management.Automation.Cmdlet]::CommonParameters, in the order of
// SMA/engine/CommonCommandParameters.cs; ProgressAction is new in 7.4).

export const actionPreferenceValues = [
  "SilentlyContinue",
  "Stop",
  "Continue",
  "Inquire",
  "Ignore",
  "Suspend",
  "Break",
];

const everySet: Record<string, SetMembership> = {
  [allParameterSets]: { mandatory: false, position: null },
};

function commonParam(name: string, type: string, alias: string, extra: Partial<ParamDef> = {}) {
  return { name, type, sets: everySet, aliases: [alias], ...extra } satisfies ParamDef;
}

const actionPreference = "System.Management.Automation.ActionPreference";

export const commonParameters: ParamDef[] = [
  commonParam("Verbose", switchType, "vb"),
  commonParam("Debug", switchType, "db"),
  commonParam("ErrorAction", actionPreference, "ea", { enumValues: actionPreferenceValues }),
  commonParam("WarningAction", actionPreference, "wa", { enumValues: actionPreferenceValues }),
  commonParam("InformationAction", actionPreference, "infa", {
    enumValues: actionPreferenceValues,
  }),
  commonParam("ProgressAction", actionPreference, "proga", { enumValues: actionPreferenceValues }),
  commonParam("ErrorVariable", "System.String", "ev"),
  commonParam("WarningVariable", "System.String", "wv"),
  commonParam("InformationVariable", "System.String", "iv"),
  commonParam("OutVariable", "System.String", "ov"),
  commonParam("OutBuffer", "System.Int32", "ob", {
    validateRange: { min: 0, max: 2147483647 },
    validationOrder: ["range"],
  }),
  commonParam("PipelineVariable", "System.String", "pv"),
];

/** WhatIf and Confirm ([Cmdlet]::OptionalCommonParameters) of commands that SupportsShouldProcess. */
export const shouldProcessParameters: ParamDef[] = [
  commonParam("WhatIf", switchType, "wi"),
  commonParam("Confirm", switchType, "cf"),
];

export function isCommonParameterName(name: string): boolean {
  const lower = name.toLowerCase();
  return [...commonParameters, ...shouldProcessParameters].some((p) =>
    p.name.toLowerCase() === lower
  );
}

/** Every parameter bindable on the command: its own, then the common ones, then WhatIf/Confirm. */
export function bindableParameters(def: CommandDef): ParamDef[] {
  return [
    ...def.params,
    ...commonParameters,
    ...(def.supportsShouldProcess ? shouldProcessParameters : []),
  ];
}

export function membership(param: ParamDef, setName: string): SetMembership | undefined {
  return param.sets[setName] ?? param.sets[allParameterSets];
}

/** The parameters of one set with their per-set membership, in CommandParameterSetInfo order. */
export function parametersInSet(
  def: CommandDef,
  setName: string,
): Array<{ param: ParamDef; member: SetMembership }> {
  const result: Array<{ param: ParamDef; member: SetMembership }> = [];
  for (const param of bindableParameters(def)) {
    const member = membership(param, setName);
    if (member) result.push({ param, member });
  }
  return result;
}

export function elementTypeOf(type: string): string | null {
  return type.endsWith("[]") ? type.slice(0, -2) : null;
}

function toParamMeta(param: ParamDef, member: SetMembership): ParamMeta {
  const element = elementTypeOf(param.type);
  return {
    name: param.name,
    type: param.type,
    elementType: element,
    isMandatory: member.mandatory,
    position: member.position,
    valueFromPipeline: param.valueFromPipeline ?? false,
    valueFromRemainingArguments: param.valueFromRemainingArguments ?? false,
    helpMessage: param.helpMessage ?? null,
    aliases: [...(param.aliases ?? [])],
    isSwitch: param.type === switchType,
    isCredential: param.type === credentialType || element === credentialType,
    enumValues: param.enumValues ? [...param.enumValues] : null,
    validateSet: param.validateSet ? [...param.validateSet] : null,
    validateRange: param.validateRange ? { ...param.validateRange } : null,
    validateLength: param.validateLength ? { ...param.validateLength } : null,
    validatePattern: param.validatePattern ?? null,
    validateCount: param.validateCount ? { ...param.validateCount } : null,
    validateNotNullOrEmpty: param.validateNotNullOrEmpty ?? false,
    isDynamic: false,
  };
}

/** CommandMeta for `describe`; `help` is null when the request says `"help": false`. */
export function describeCommand(def: CommandDef, withHelp: boolean): CommandMeta {
  const dash = def.name.indexOf("-");
  return {
    name: def.name,
    commandType: def.commandType,
    module: def.module,
    moduleVersion: def.moduleVersion,
    verb: dash > 0 ? def.name.slice(0, dash) : null,
    noun: dash > 0 ? def.name.slice(dash + 1) : null,
    defaultParameterSet: def.defaultParameterSet,
    supportsShouldProcess: def.supportsShouldProcess,
    outputTypes: [...def.outputTypes],
    parameterSets: def.setNames.map((setName) => {
      const members = parametersInSet(def, setName);
      return {
        name: setName,
        // A command without named sets reports __AllParameterSets with IsDefault false.
        isDefault: setName === def.defaultParameterSet,
        syntax: syntaxLine(members),
        parameters: members.map(({ param, member }) => toParamMeta(param, member)),
      };
    }),
    help: withHelp ? structuredClone(def.help) : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Syntax: CommandParameterSetInfo.ToString() (SMA/engine/ParameterSetInfo.cs). Positional
// parameters by position, then named mandatory ones, then the other named ones in set order;
// the common parameters collapse to `[<CommonParameters>]` when all of them are present.
// Type names go through ToStringCodeMethods.Type(type, dropNamespaces: true): the built-in type
// accelerator if there is one (lower case), else the type's short name.

const typeAccelerators: Record<string, string> = {
  "System.String": "string",
  "System.Int32": "int",
  "System.Int64": "long",
  "System.Int16": "short",
  "System.Byte": "byte",
  "System.Double": "double",
  "System.Single": "float",
  "System.Decimal": "decimal",
  "System.Boolean": "bool",
  "System.Char": "char",
  "System.DateTime": "datetime",
  "System.TimeSpan": "timespan",
  "System.Guid": "guid",
  "System.Uri": "uri",
  "System.Version": "version",
  "System.Collections.Hashtable": "hashtable",
  "System.Management.Automation.PSObject": "psobject",
  "System.Management.Automation.PSCredential": "pscredential",
  "System.Management.Automation.ScriptBlock": "scriptblock",
  "System.Management.Automation.SwitchParameter": "switch",
  "System.Security.SecureString": "securestring",
};

export function syntaxTypeName(type: string): string {
  const element = elementTypeOf(type);
  if (element !== null) return `${syntaxTypeName(element)}[]`;
  const accelerator = typeAccelerators[type];
  if (accelerator) return accelerator;
  const dot = type.lastIndexOf(".");
  return dot === -1 ? type : type.slice(dot + 1);
}

function syntaxLine(members: Array<{ param: ParamDef; member: SetMembership }>): string {
  const positional = members
    .filter((m) => m.member.position !== null)
    .sort((a, b) => (a.member.position ?? 0) - (b.member.position ?? 0));
  const named = members.filter((m) => m.member.position === null);
  const commonNames = new Set(commonParameters.map((p) => p.name));
  const ordered = [
    ...positional,
    ...named.filter((m) => m.member.mandatory),
    ...named.filter((m) => !m.member.mandatory && !commonNames.has(m.param.name)),
  ];
  const parts = ordered.map(({ param, member }) => {
    if (param.type === switchType) return member.mandatory ? `-${param.name}` : `[-${param.name}]`;
    const type = syntaxTypeName(param.type);
    const name = member.position !== null ? `[-${param.name}]` : `-${param.name}`;
    return member.mandatory ? `${name} <${type}>` : `[${name} <${type}>]`;
  });
  const common = named.filter((m) => !m.member.mandatory && commonNames.has(m.param.name));
  if (common.length === commonParameters.length) parts.push("[<CommonParameters>]");
  return parts.join(" ");
}

// ---------------------------------------------------------------------------------------------
// Built-in cmdlets from the documented structure (see tests/fixtures/README.md).

interface RawParameterSet {
  name: string;
  default: boolean;
  syntax: string;
}

interface RawParameter {
  name: string;
  type: string;
  sets: string[];
  aliases: string[];
  required: string;
  position: string;
  pipeline: string;
  acceptedValues?: string[];
}

interface RawCmdlet {
  module: string;
  parameterSets: RawParameterSet[];
  parameters: RawParameter[];
}

export type CmdletData = Record<string, RawCmdlet>;

/** Reads the cmdlet data: `SVC_CMDLET_DATA`, else tests/fixtures/cmdlets-7.4.json. */
export function loadCmdletData(): CmdletData {
  const override = Deno.env.get("SVC_CMDLET_DATA");
  const path = override && override.length > 0
    ? override
    : fileURLToPath(new URL("../fixtures/cmdlets-7.4.json", import.meta.url));
  const parsed = JSON.parse(readFileSync(path, "utf8")) as { cmdlets?: CmdletData };
  if (!parsed.cmdlets || typeof parsed.cmdlets !== "object") {
    throw new Error(`${path} has no "cmdlets" object`);
  }
  return parsed.cmdlets;
}

export interface CmdletExtras {
  implementingType: string;
  moduleVersion: string;
  synopsis: string;
  outputTypes: string[];
  /** Facts the documentation does not carry (e.g. AllowNull, ValueFromRemainingArguments). */
  overrides?: Record<string, Partial<ParamDef>>;
}

/** `True`, `False` or per set, e.g. `True (Id), False (Name)` → mandatory per set. */
function parseRequired(required: string, setNames: string[]): Record<string, boolean> {
  const result: Record<string, boolean> = {};
  const trimmed = required.trim();
  if (trimmed === "True" || trimmed === "False") {
    for (const set of setNames) result[set] = trimmed === "True";
    return result;
  }
  for (const match of trimmed.matchAll(/(True|False)\s*\(([^)]*)\)/g)) {
    for (const set of (match[2] ?? "").split(",").map((s) => s.trim()).filter(Boolean)) {
      result[set] = match[1] === "True";
    }
  }
  return result;
}

/**
 * The parameters of one documented syntax line (`Get-Date [[-Date] <DateTime>] -UFormat <String>
 * ...`): `-Name <T>` and `[-Name] <T>` are mandatory, `[-Name <T>]`, `[[-Name] <T>]` and
 * `[-Switch]` are not; `[-Name]` marks a positional one. The command name is skipped.
 */
export function parseSyntaxLine(
  syntax: string,
): Map<string, { mandatory: boolean; positional: boolean }> {
  const result = new Map<string, { mandatory: boolean; positional: boolean }>();
  const body = syntax.includes(" ") ? syntax.slice(syntax.indexOf(" ") + 1) : "";
  const item =
    /\[\[-(\w+)\] <[^>]*>\]|\[-(\w+)\] <[^>]*>|\[-(\w+)(?: <[^>]*>)?\]|-(\w+)(?: <[^>]*>)?/g;
  for (const m of body.matchAll(item)) {
    if (m[1]) result.set(m[1], { mandatory: false, positional: true });
    else if (m[2]) result.set(m[2], { mandatory: true, positional: true });
    else if (m[3]) result.set(m[3], { mandatory: false, positional: false });
    else if (m[4]) result.set(m[4], { mandatory: true, positional: false });
  }
  return result;
}

function isStringType(type: string): boolean {
  return type === "System.String" || type === "System.String[]";
}

/** Converts one documented cmdlet into a CommandDef (see tests/support/README.md "Metadata"). */
export function cmdletFromData(data: CmdletData, name: string, extras: CmdletExtras): CommandDef {
  const raw = data[name];
  if (!raw) throw new Error(`the cmdlet data has no entry for ${name}`);

  // Sets: an empty list means the single unnamed set; the default set is reported first.
  const named = raw.parameterSets.map((s) => s.name);
  const defaultSet = raw.parameterSets.find((s) => s.default)?.name ?? null;
  const setNames = named.length === 0
    ? [allParameterSets]
    : [...named.filter((s) => s === defaultSet), ...named.filter((s) => s !== defaultSet)];

  // The syntax lines are generated from the cmdlet itself; where the page's parameter table
  // disagrees with them (Get-Date's -UFormat is mandatory, -AsUTC is in the Format sets only,
  // Write-Error's -Message is named in WithException), the syntax wins for set membership,
  // mandatoriness and whether the parameter is positional in that set.
  const syntaxBySet = new Map(raw.parameterSets.map((s) => [s.name, parseSyntaxLine(s.syntax)]));
  const inSyntax = (name: string) => [...syntaxBySet.values()].some((m) => m.has(name));

  let supportsShouldProcess = false;
  const params: ParamDef[] = [];
  for (const p of raw.parameters) {
    // WhatIf/Confirm are listed on the page of a ShouldProcess cmdlet; they are appended after
    // the common parameters like PowerShell does.
    if (p.name === "WhatIf" || p.name === "Confirm") {
      supportsShouldProcess = true;
      continue;
    }
    const memberSets = p.sets.includes("(All)") ? setNames : p.sets;
    const mandatory = parseRequired(p.required, memberSets);
    const position = /^\d+$/.test(p.position) ? Number(p.position) : null;
    const sets: Record<string, SetMembership> = {};
    if (inSyntax(p.name)) {
      for (const [set, members] of syntaxBySet) {
        const shown = members.get(p.name);
        if (shown) {
          sets[set] = { mandatory: shown.mandatory, position: shown.positional ? position : null };
        }
      }
    } else {
      for (const set of memberSets) sets[set] = { mandatory: mandatory[set] ?? false, position };
    }
    const def: ParamDef = {
      name: p.name,
      type: p.type,
      sets,
      aliases: [...p.aliases],
      valueFromPipeline: /\bByValue\b/.test(p.pipeline),
    };
    if (p.acceptedValues) {
      // A page lists accepted values for a ValidateSet (string parameters) or an enum type.
      if (isStringType(p.type)) {
        def.validateSet = [...p.acceptedValues];
        def.validationOrder = ["set"];
      } else {
        def.enumValues = [...p.acceptedValues];
      }
    }
    params.push({ ...def, ...(extras.overrides?.[p.name] ?? {}) });
  }

  return {
    name,
    commandType: "Cmdlet",
    module: raw.module,
    moduleVersion: extras.moduleVersion,
    setNames,
    defaultParameterSet: named.length === 0 ? null : defaultSet,
    supportsShouldProcess,
    outputTypes: [...extras.outputTypes],
    params: orderLikeSyntax(params, raw.parameterSets),
    help: { synopsis: extras.synopsis, description: null, parameters: {} },
    errorIdSuffix: extras.implementingType,
  };
}

/**
 * The reference lists parameters alphabetically; the syntax lines follow the cmdlet's own order
 * (positional first), which is the best available stand-in for the declaration order.
 */
function orderLikeSyntax(params: ParamDef[], sets: RawParameterSet[]): ParamDef[] {
  const order: string[] = [];
  for (const set of sets) {
    for (const name of parseSyntaxLine(set.syntax).keys()) {
      if (!order.includes(name)) order.push(name);
    }
  }
  const rank = (p: ParamDef) => {
    const index = order.indexOf(p.name);
    if (index !== -1) return index;
    const position = Object.values(p.sets)[0]?.position;
    return order.length + (position ?? 1000);
  };
  return params
    .map((p, index) => ({ p, index }))
    .sort((a, b) => rank(a.p) - rank(b.p) || a.index - b.index)
    .map(({ p }) => p);
}
