/**
 * One tool per command (`ShellConfiguration:ToolGranularity: Command`): the tools of a command's
 * parameter sets merged into one whose schema covers them all, so a module with many sets stays
 * within a client's tool limit.
 *
 * The schema stays one flat object. JSON Schema could say "exactly one of these sets" with a
 * top-level `oneOf`/`anyOf`, but the tool APIs of Anthropic, OpenAI and Gemini reject those
 * keywords at the top of an input schema, and clients built on them drop the tool or the whole
 * server. Which arguments go together is said instead by the optional `_ParameterSet` argument
 * (an enum of the set names, each described with its arguments) and checked when the tool is
 * called (`parameter_set.ts`).
 *
 * @module
 */
import type { ToolDescriptor, ToolParameter } from "./tool_descriptor.ts";
import { annotationsFor, confirmImpactOf, outputMediaTypeOf } from "./catalog_annotations.ts";
import { cap, TOOL_DESCRIPTION_CAP, toolDescription } from "./catalog_description.ts";
import type { CommandMeta } from "./worker_protocol.ts";

/** Name of the argument that chooses a parameter set of a tool covering a whole command. */
export const PARAMETER_SET_ARGUMENT = "_ParameterSet";

/**
 * Merges the tools of `command`'s parameter sets (at least two) into one tool named `name`.
 * Its arguments are the union of the sets' (an argument is required when every set requires
 * it), then `_ParameterSet`, then the output-shaping arguments; each set's tool is kept in
 * `parameterSetTools`, the command's default set first, renamed to `name` so that messages about
 * a call name the tool the client called.
 */
export function commandTool(
  command: CommandMeta,
  name: string,
  setTools: ToolDescriptor[],
): ToolDescriptor {
  const sets = [...setTools]
    .sort((a, b) => rank(command, a) - rank(command, b))
    .map((tool) => ({ ...tool, name, setToolName: tool.name }));
  const parameters = mergedParameters(command.name, sets);
  const { description, source } = toolDescription(command, null);
  const names = sets.map((s) => s.parameterSet);
  const sentence = ` Its arguments come in ${sets.length} parameter sets (${
    names.join(", ")
  }); ${PARAMETER_SET_ARGUMENT} names one.`;
  return {
    name,
    command: command.name,
    parameterSet: names.join(", "),
    module: command.module,
    description: description.length + sentence.length <= TOOL_DESCRIPTION_CAP
      ? description + sentence
      : description,
    descriptionSource: source,
    inputSchema: schemaOf(parameters),
    annotations: annotationsFor(command.name, command.verb),
    ...confirmImpactOf(command),
    ...outputMediaTypeOf(command),
    parameters,
    parameterSetTools: sets,
    ...(sets[0]?.help ? { help: sets[0].help } : {}),
  };
}

/**
 * The command tool as a caller who may use only `allowed` of its sets sees it: those sets, and a
 * schema offering only their arguments. Null when none is allowed; the tool itself when all are.
 */
export function restrictCommandTool(
  tool: ToolDescriptor,
  allowed: (set: ToolDescriptor) => boolean,
): ToolDescriptor | null {
  const sets = tool.parameterSetTools;
  if (!sets) return allowed(tool) ? tool : null;
  const kept = sets.filter(allowed);
  if (kept.length === 0) return null;
  if (kept.length === sets.length) return tool;
  const parameters = mergedParameters(tool.command, kept);
  return {
    ...tool,
    parameterSet: kept.map((s) => s.parameterSet).join(", "),
    inputSchema: schemaOf(parameters),
    parameters,
    parameterSetTools: kept,
  };
}

/**
 * The arguments of a command tool: the union of its sets' (required when every set requires it),
 * then `_ParameterSet`, then the output-shaping arguments.
 */
function mergedParameters(commandName: string, sets: ToolDescriptor[]): ToolParameter[] {
  const own: ToolParameter[] = [];
  const shaping: ToolParameter[] = [];
  for (const set of sets) {
    for (const parameter of set.parameters) {
      const list = parameter.kind === "shaping" ? shaping : own;
      if (list.some((p) => p.name === parameter.name)) continue;
      const required = sets.every((s) =>
        s.parameters.some((p) => p.name === parameter.name && p.required)
      );
      list.push({ ...parameter, required });
    }
  }
  const selector: ToolParameter = {
    name: PARAMETER_SET_ARGUMENT,
    kind: "set",
    required: false,
    schema: {
      type: "string",
      enum: sets.map((s) => s.parameterSet),
      description: cap(
        `Parameter set of ${commandName} whose arguments this call uses; without it, svc picks the set the arguments fit. Sets, with what only they take: ${
          sets.map((set) => setSummary(set, sets)).join("; ")
        }.`,
        TOOL_DESCRIPTION_CAP,
      ),
    },
  };
  return [...own, selector, ...shaping];
}

function schemaOf(parameters: ToolParameter[]): ToolDescriptor["inputSchema"] {
  const properties = Object.fromEntries(parameters.map((p) => [p.name, p.schema]));
  const required = parameters.filter((p) => p.required).map((p) => p.name);
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
}

/** The default parameter set first, then the order PowerShell reports. */
function rank(command: CommandMeta, tool: ToolDescriptor): number {
  if (tool.parameterSet === command.defaultParameterSet) return -1;
  return command.parameterSets.findIndex((s) => s.name === tool.parameterSet);
}

/**
 * `Id (requires Id; also FileVersionInfo)`: what a model needs to pick a set. Arguments every set
 * takes are left out; the schema lists them.
 */
function setSummary(set: ToolDescriptor, sets: ToolDescriptor[]): string {
  const own = set.parameters.filter((p) => p.kind !== "shaping");
  const everywhere = (name: string) => sets.every((s) => s.parameters.some((p) => p.name === name));
  const required = own.filter((p) => p.required).map((p) => p.name);
  const optional = own.filter((p) => !p.required && !everywhere(p.name)).map((p) => p.name);
  const parts = [
    required.length > 0 ? `requires ${required.join(", ")}` : null,
    optional.length > 0 ? `also ${optional.join(", ")}` : null,
  ].filter((p) => p !== null);
  return parts.length > 0 ? `${set.parameterSet} (${parts.join("; ")})` : set.parameterSet;
}
