/**
 * Test support: tool descriptors and command metadata built by hand, for unit tests of the modules
 * that read them (arguments, parameter sets, results, descriptions) without discovering anything.
 *
 * @module
 */
import type { JsonSchema, ToolDescriptor, ToolParameter } from "../../lib/tool_descriptor.ts";
import type { CommandMeta, ParameterSetMeta, ParamMeta } from "../../lib/worker_protocol.ts";

/** A value argument (kind `value` unless given), optional unless `required`. */
export function arg(
  name: string,
  schema: JsonSchema = { type: "string" },
  extra: Partial<ToolParameter> = {},
): ToolParameter {
  return { name, schema, required: false, kind: "value", ...extra };
}

/** A tool of one parameter set with `parameters`; `extra` replaces any field. */
export function toolOf(
  name: string,
  parameters: ToolParameter[],
  extra: Partial<ToolDescriptor> = {},
): ToolDescriptor {
  return {
    name,
    command: "Test-Tool",
    parameterSet: "__AllParameterSets",
    module: null,
    description: "",
    descriptionSource: "name",
    inputSchema: { type: "object" },
    annotations: {
      title: "Test-Tool",
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: true,
    },
    parameters,
    ...extra,
  };
}

/** Metadata of one parameter as discovery reports it; `extra` replaces any field. */
export function paramMeta(name: string, type: string, extra: Partial<ParamMeta> = {}): ParamMeta {
  return {
    name,
    type,
    elementType: type.endsWith("[]") ? type.slice(0, -2) : null,
    isMandatory: false,
    position: null,
    valueFromPipeline: false,
    valueFromRemainingArguments: false,
    helpMessage: null,
    aliases: [],
    isSwitch: type === "System.Management.Automation.SwitchParameter",
    isCredential: type === "System.Management.Automation.PSCredential",
    enumValues: null,
    validateSet: null,
    validateRange: null,
    validateLength: null,
    validatePattern: null,
    validateCount: null,
    validateNotNullOrEmpty: false,
    isDynamic: false,
    ...extra,
  };
}

/** Metadata of a cmdlet `Verb-Noun` with the given parameter sets (the first is the default). */
export function commandMeta(
  name: string,
  sets: [string, ParamMeta[]][],
  extra: Partial<CommandMeta> = {},
): CommandMeta {
  const [verb = null, noun = null] = name.split("-");
  const parameterSets: ParameterSetMeta[] = sets.map(([setName, parameters], i) => ({
    name: setName,
    isDefault: i === 0,
    parameters,
    syntax: "",
  }));
  return {
    name,
    commandType: "Cmdlet",
    verb,
    noun,
    module: null,
    moduleVersion: null,
    defaultParameterSet: sets[0]?.[0] ?? null,
    supportsShouldProcess: false,
    parameterSets,
    help: null,
    outputTypes: [],
    ...extra,
  };
}
