/**
 * Which parameter set a call of a tool covering a whole command (`ToolGranularity: Command`) uses.
 * The set decides which arguments are accepted together and which are required; the arguments are
 * then checked against that set's tool (`arguments.ts`). PowerShell still binds the call itself,
 * from the argument names, as it would at a prompt.
 *
 * @module
 */
import type { ToolDescriptor } from "./tool_descriptor.ts";
import { PARAMETER_SET_ARGUMENT } from "./catalog_command.ts";

/** The outcome of {@linkcode chooseParameterSet}. */
export type SetChoice =
  | { ok: true; tool: ToolDescriptor; args: unknown }
  | { ok: false; message: string };

/**
 * Chooses the tool a call is checked against: `tool` itself unless it covers several parameter
 * sets. Then `_ParameterSet` names the set when given; otherwise the sets that take every given
 * argument are candidates, and the first (the default set first) whose required arguments are
 * all given wins. `args` comes back without `_ParameterSet`. Never throws.
 */
export function chooseParameterSet(tool: ToolDescriptor, args: unknown): SetChoice {
  const sets = tool.parameterSetTools;
  const [first] = sets ?? [];
  if (!sets || !first) return { ok: true, tool, args };
  const given = args ?? {};
  if (typeof given !== "object" || Array.isArray(given)) return { ok: true, tool: first, args };
  const rest: Record<string, unknown> = {};
  let named: unknown = undefined;
  for (const [key, value] of Object.entries(given)) {
    if (sameName(key, PARAMETER_SET_ARGUMENT)) named = value;
    else rest[key] = value;
  }
  // Output-shaping arguments belong to every set; they decide nothing and would only crowd messages.
  const shaping = first.parameters.filter((p) => p.kind === "shaping");
  const names = Object.keys(rest).filter((key) =>
    rest[key] !== null && rest[key] !== undefined && !shaping.some((p) => sameName(p.name, key))
  );
  const has = (set: ToolDescriptor, key: string) =>
    set.parameters.some((p) => sameName(p.name, key));
  const unknown = names.find((key) => !sets.some((set) => has(set, key)));
  if (unknown !== undefined) {
    return {
      ok: false,
      message: `Unknown argument '${unknown}' for tool '${tool.name}' (accepted arguments: ${
        tool.parameters.map((p) => p.name).join(", ")
      })`,
    };
  }
  const setsOf = (key: string) =>
    sets.filter((set) => has(set, key)).map((set) => set.parameterSet).join(", ");
  if (named !== undefined && named !== null) {
    const set = sets.find((s) => typeof named === "string" && sameName(s.parameterSet, named));
    if (!set) {
      return {
        ok: false,
        message: `Invalid argument '${PARAMETER_SET_ARGUMENT}' for tool '${tool.name}': ${
          JSON.stringify(named)
        } is not one of ${sets.map((s) => s.parameterSet).join(", ")}`,
      };
    }
    const foreign = names.find((key) => !has(set, key));
    if (foreign !== undefined) {
      return {
        ok: false,
        message:
          `Argument '${foreign}' of tool '${tool.name}' is not in parameter set '${set.parameterSet}'; it is in ${
            setsOf(foreign)
          }`,
      };
    }
    return { ok: true, tool: set, args: rest };
  }
  const candidates = sets.filter((set) => names.every((key) => has(set, key)));
  if (candidates.length === 0) {
    return {
      ok: false,
      message: `No parameter set of tool '${tool.name}' takes ${names.join(", ")} together: ${
        names.map((key) => `${key} is in ${setsOf(key)}`).join("; ")
      }`,
    };
  }
  const missing = (set: ToolDescriptor) =>
    set.parameters.filter((p) => p.required && !names.some((key) => sameName(key, p.name)))
      .map((p) => p.name);
  const complete = candidates.find((set) => missing(set).length === 0);
  if (complete) return { ok: true, tool: complete, args: rest };
  return {
    ok: false,
    message: `Tool '${tool.name}' needs more arguments: ${
      candidates.map((set) =>
        `parameter set '${set.parameterSet}' requires ${missing(set).join(", ")}`
      )
        .join("; ")
    } (${PARAMETER_SET_ARGUMENT} names the set)`,
  };
}

function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}
