/**
 * Test support: turns the PowerShell 7.4 cmdlet reference data (../shared/data/pwsh-7.4-cmdlets.json)
 * into the worker protocol's CommandMeta, so catalog tests run on realistic commands. Common
 * parameters are appended the way a real `Get-Command` reports them.
 *
 * @module
 */
import type { CommandMeta, ParamMeta } from "../../lib/shell.ts";

interface DataParameter {
  name: string;
  type: string;
  sets: string[];
  aliases: string[];
  required: string;
  position: string;
  pipeline: string;
  acceptedValues?: string[];
}

interface DataCmdlet {
  module: string;
  parameterSets: { name: string; default: boolean; syntax: string }[];
  parameters: DataParameter[];
}

const dataPath = Deno.env.get("SVC_CMDLET_DATA") ??
  new URL("../../../shared/data/pwsh-7.4-cmdlets.json", import.meta.url);
const data = JSON.parse(Deno.readTextFileSync(dataPath)).cmdlets as Record<string, DataCmdlet>;

const COMMON: [string, string][] = [
  ["Verbose", "System.Management.Automation.SwitchParameter"],
  ["Debug", "System.Management.Automation.SwitchParameter"],
  ["ErrorAction", "System.Management.Automation.ActionPreference"],
  ["WarningAction", "System.Management.Automation.ActionPreference"],
  ["InformationAction", "System.Management.Automation.ActionPreference"],
  ["ProgressAction", "System.Management.Automation.ActionPreference"],
  ["ErrorVariable", "System.String"],
  ["WarningVariable", "System.String"],
  ["InformationVariable", "System.String"],
  ["OutVariable", "System.String"],
  ["OutBuffer", "System.Int32"],
  ["PipelineVariable", "System.String"],
];

/** True when `required` ("True", "False", "True (Id), False (Name)") makes the parameter mandatory in `set`. */
function mandatoryIn(required: string, set: string): boolean {
  if (required === "True") return true;
  if (required === "False") return false;
  const match = new RegExp(`(True|False) \\(([^)]*)\\)`, "g");
  for (const m of required.matchAll(match)) {
    if (m[2]!.split(",").map((s) => s.trim()).includes(set)) return m[1] === "True";
  }
  return false;
}

function paramMeta(p: DataParameter, set: string): ParamMeta {
  const isArray = p.type.endsWith("[]");
  return {
    name: p.name,
    type: p.type,
    elementType: isArray ? p.type.slice(0, -2) : null,
    isMandatory: mandatoryIn(p.required, set),
    position: /^\d+$/.test(p.position) ? Number(p.position) : null,
    valueFromPipeline: p.pipeline.includes("ByValue"),
    valueFromRemainingArguments: false,
    helpMessage: null,
    aliases: p.aliases,
    isSwitch: p.type === "System.Management.Automation.SwitchParameter",
    isCredential: p.type === "System.Management.Automation.PSCredential",
    enumValues: null,
    validateSet: p.acceptedValues && p.acceptedValues.length > 0 ? p.acceptedValues : null,
    validateRange: null,
    validateLength: null,
    validatePattern: null,
    validateCount: null,
    validateNotNullOrEmpty: false,
    isDynamic: false,
  };
}

/** Metadata of a PowerShell 7.4 built-in cmdlet as the worker's `describe` would report it. */
export function cmdletMeta(name: string): CommandMeta {
  const cmdlet = data[name];
  if (!cmdlet) throw new Error(`No reference data for cmdlet '${name}'`);
  const sets = cmdlet.parameterSets.length > 0
    ? cmdlet.parameterSets
    : [{ name: "__AllParameterSets", default: true, syntax: `${name} [<CommonParameters>]` }];
  const supportsShouldProcess = cmdlet.parameters.some((p) => p.name === "WhatIf");
  return {
    name,
    commandType: "Cmdlet",
    module: cmdlet.module,
    moduleVersion: "7.0.0.0",
    verb: name.split("-")[0] ?? null,
    noun: name.split("-")[1] ?? null,
    defaultParameterSet: cmdlet.parameterSets.find((s) => s.default)?.name ?? null,
    supportsShouldProcess,
    outputTypes: [],
    parameterSets: sets.map((set) => ({
      name: set.name,
      isDefault: set.default,
      syntax: set.syntax,
      parameters: [
        ...cmdlet.parameters
          .filter((p) => p.sets.includes("(All)") || p.sets.includes(set.name) || sets.length === 1)
          .map((p) => paramMeta(p, set.name)),
        ...COMMON.map(([n, t]) =>
          paramMeta({
            name: n,
            type: t,
            sets: ["(All)"],
            aliases: [],
            required: "False",
            position: "Named",
            pipeline: "False",
          }, set.name)
        ),
      ],
    })),
    help: null,
  };
}
