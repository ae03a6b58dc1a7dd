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

/**
 * The `properties` and `maxResults` of a run, PoshMcp's order: `_AllProperties` keeps every property;
 * else `_RequestedProperties`; else the command's `DefaultProperties`; else what PowerShell would show
 * when `UseDefaultDisplayProperties` (the command's, else the shell's) is on.
 */
export function outputShaping(
  shell: ShellSettings,
  override: CommandOverride | undefined,
  shaping: Record<string, unknown>,
): Pick<CommandRun, "properties" | "maxResults"> {
  const out: Pick<CommandRun, "properties" | "maxResults"> = {};
  if (typeof shaping["_MaxResults"] === "number") {
    out.maxResults = Math.min(shaping["_MaxResults"], MAX_RESULTS);
  }
  if (shaping["_AllProperties"] === true) return out;
  const requested = requestedProperties(shaping);
  if (requested.length > 0) {
    out.properties = requested;
  } else if (override?.defaultProperties && override.defaultProperties.length > 0) {
    out.properties = override.defaultProperties;
  } else if (override?.useDefaultDisplayProperties ?? shell.useDefaultDisplayProperties) {
    out.properties = "display";
  }
  return out;
}
