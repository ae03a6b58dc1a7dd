/**
 * The arguments every tool takes to shape its output (`_RequestedProperties`, `_AllProperties`,
 * `_MaxResults`, the names PoshMcp clients send) and how they, with the shell's settings, become a
 * run's `properties` and `maxResults` (`lib/worker_request.ts` writes those into the request).
 *
 * @module
 */
import type { ToolParameter } from "./tool_descriptor.ts";
import type { ShellSettings } from "./config.ts";
import type { CommandOverride } from "./config_overrides.ts";
import type { CommandRun } from "./worker_request.ts";

/**
 * Arguments every tool accepts to shape its output, named as PoshMcp clients already send them.
 * Shared objects: descriptors are read, never changed. They carry no description: they repeat in
 * every tool (420 bytes of each), their names say what they do, and the server instructions
 * (`SERVER_INSTRUCTIONS`) say the rest once.
 */
export const SHAPING_PARAMETERS: readonly ToolParameter[] = [
  {
    name: "_RequestedProperties",
    schema: {
      type: "array",
      items: { type: "string" },
    },
    required: false,
    kind: "shaping",
  },
  {
    name: "_AllProperties",
    schema: { type: "boolean" },
    required: false,
    kind: "shaping",
  },
  {
    name: "_MaxResults",
    schema: { type: "integer", minimum: 1 },
    required: false,
    kind: "shaping",
  },
];

/**
 * The most items a run asks for: the worker counts one past `first` in a 32-bit integer. A larger
 * `_MaxResults` means all of them, as this many does; the schema says no maximum, to stay short.
 */
const MAX_RESULTS = 2_147_483_646;

/** The names a call gave in `_RequestedProperties`, blanks dropped; empty when it gave none. */
export function requestedProperties(shaping: Record<string, unknown>): string[] {
  return (shaping["_RequestedProperties"] as string[] | undefined ?? [])
    .map((name) => name.trim())
    .filter((name) => name !== "");
}

/** Whether property `name` matches `pattern`, a name or a PowerShell wildcard, ignoring case. */
function matchesProperty(pattern: string, name: string): boolean {
  const body = pattern.replace(/[.+^${}()|\\]/g, "\\$&").replaceAll("*", ".*").replaceAll("?", ".");
  try {
    return new RegExp(`^${body}$`, "is").test(name);
  } catch {
    return pattern.toLowerCase() === name.toLowerCase(); // an unclosed [ : the name itself
  }
}

/** `names` cut to what `allowed` lets through, each name or wildcard matched; all when unset. */
function within(names: string[], allowed: string[] | undefined): string[] {
  return allowed === undefined
    ? names
    : allowed.filter((name) => names.some((pattern) => matchesProperty(pattern, name)));
}

/**
 * Why a call of `tool` may not have the output properties it asks for: a name or wildcard in
 * `_RequestedProperties` that matches none of the command's `AllowedProperties` (a property that may
 * hold other programs' secrets, such as a process's `CommandLine`, is left out of that list); null
 * when it may, or when the command's properties are not limited.
 */
export function refusedProperties(
  tool: { name: string; command: string },
  override: CommandOverride | undefined,
  shaping: Record<string, unknown>,
): string | null {
  const allowed = override?.allowedProperties;
  if (allowed === undefined) return null;
  const refused = requestedProperties(shaping).filter((name) =>
    within([name], allowed).length === 0
  );
  if (refused.length === 0) return null;
  return `'_RequestedProperties' of tool '${tool.name}' asks for ${
    refused.map((name) => `'${name}'`).join(", ")
  }, which the configuration does not offer for '${tool.command}' (CommandOverrides AllowedProperties): ${
    allowed.length > 0 ? `it offers ${allowed.join(", ")}` : "it offers none"
  }`;
}

/**
 * The `properties` and `maxResults` of a run, PoshMcp's order: `_AllProperties` keeps every property;
 * else `_RequestedProperties`; else the command's `DefaultProperties`; else what PowerShell would show
 * when `UseDefaultDisplayProperties` (the command's, else the shell's) is on. A command with
 * `AllowedProperties` never keeps another: `_AllProperties` keeps those, and requested or default
 * names are cut to them ({@linkcode refusedProperties} refuses a call that asks for another).
 */
export function outputShaping(
  shell: ShellSettings,
  override: CommandOverride | undefined,
  shaping: Record<string, unknown>,
): Pick<CommandRun, "properties" | "maxResults"> {
  const out: Pick<CommandRun, "properties" | "maxResults"> = {};
  const allowed = override?.allowedProperties;
  if (typeof shaping["_MaxResults"] === "number") {
    out.maxResults = Math.min(shaping["_MaxResults"], MAX_RESULTS);
  }
  if (shaping["_AllProperties"] === true) {
    if (allowed !== undefined) out.properties = allowed.length > 0 ? allowed : "display";
    return out;
  }
  const requested = within(requestedProperties(shaping), allowed);
  const defaults = within(override?.defaultProperties ?? [], allowed);
  if (requested.length > 0) {
    out.properties = requested;
  } else if (defaults.length > 0) {
    out.properties = defaults;
  } else if (override?.useDefaultDisplayProperties ?? shell.useDefaultDisplayProperties) {
    // What PowerShell shows is shown whatever the command allows to be asked for.
    out.properties = "display";
  } else if (allowed !== undefined) {
    out.properties = allowed.length > 0 ? allowed : "display";
  }
  return out;
}
