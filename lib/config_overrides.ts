/**
 * Per-command settings (`ShellConfiguration:CommandOverrides`, and PoshMcp's deprecated
 * `FunctionOverrides`): how they are read, and the one rule that says which apply to a tool.
 *
 * @module
 */
import { isTree, lookup, type Reader } from "./config_reader.ts";
import { PROMPT_ANSWERERS } from "./config_schema.ts";

/** Who may answer a command's prompts (`PromptsAnsweredBy`; `lib/prompt_policy.ts`). */
export type PromptsAnsweredBy = (typeof PROMPT_ANSWERERS)[number];

/** Per-command settings from `ShellConfiguration:CommandOverrides:<command>`. */
export interface CommandOverride {
  /** Time limit for one call of this command in ms; replaces `ToolCallTimeout`. */
  toolCallTimeoutMs?: number;
  /** Roles of which a caller needs one to call this command (HTTP with authentication). */
  requiredRoles?: string[];
  /** Properties output objects keep when the caller names none (`DefaultProperties`). */
  defaultProperties?: string[];
  /**
   * The only properties a caller may ask output objects for (`AllowedProperties`): a requested name
   * or wildcard matching none of them is refused, and `_AllProperties` gives these.
   * @default any property
   */
  allowedProperties?: string[];
  /** Replaces `ShellConfiguration:UseDefaultDisplayProperties` for this command. */
  useDefaultDisplayProperties?: boolean;
  /** Replaces `ShellConfiguration:PromptsAnsweredBy` for this command. */
  promptsAnsweredBy?: PromptsAnsweredBy;
  /** svc asks the user before each call of this command runs (`ConfirmBeforeRun`); absent: it does not. */
  confirmBeforeRun?: boolean;
}

/** The configuration key of each override field. */
const OVERRIDE_KEYS: Record<keyof CommandOverride, string> = {
  toolCallTimeoutMs: "ToolCallTimeout",
  requiredRoles: "RequiredRoles",
  defaultProperties: "DefaultProperties",
  useDefaultDisplayProperties: "UseDefaultDisplayProperties",
  allowedProperties: "AllowedProperties",
  promptsAnsweredBy: "PromptsAnsweredBy",
  confirmBeforeRun: "ConfirmBeforeRun",
};

/** Where the overrides are kept: the shell settings (`ShellSettings.commandOverrides`). */
export interface OverrideSource {
  /** Overrides by the key they were configured under (a command or tool name). */
  commandOverrides: Record<string, CommandOverride>;
}

/**
 * `CommandOverrides`, and PoshMcp's older `FunctionOverrides` under it (deprecated, with a warning):
 * for a command in both, each field of `CommandOverrides` wins.
 */
export function readOverrides(read: Reader): Record<string, CommandOverride> {
  const out: Record<string, CommandOverride> = {};
  for (const section of ["FunctionOverrides", "CommandOverrides"]) {
    const [name, value] = read.raw(`ShellConfiguration:${section}`);
    if (value === undefined || value === null) continue;
    if (!isTree(value)) throw read.invalid(name, `expected an object`);
    if (section === "FunctionOverrides") {
      read.warnings.push(
        `Configuration key '${name}' is deprecated and will be removed in the next major version; use 'ShellConfiguration:CommandOverrides' instead (its entries apply meanwhile)`,
      );
    }
    for (const command of Object.keys(value)) {
      const existing = Object.keys(out).find((k) => k.toLowerCase() === command.toLowerCase());
      const override = readOverride(read, `${name}:${command}`);
      out[existing ?? command] = {
        ...(existing === undefined ? {} : out[existing]),
        ...override,
      };
    }
  }
  return out;
}

function readOverride(read: Reader, key: string): CommandOverride {
  const override: CommandOverride = {};
  const set = (field: string) => {
    const v = lookup(read.tree, `${key}:${field}`);
    return v !== undefined && v !== null && v !== "";
  };
  if (set("ToolCallTimeout")) {
    override.toolCallTimeoutMs = read.timeSpan(`${key}:ToolCallTimeout`, 0);
  }
  if (lookup(read.tree, `${key}:RequiredRoles`) !== undefined) {
    override.requiredRoles = read.strings(`${key}:RequiredRoles`);
  }
  if (lookup(read.tree, `${key}:DefaultProperties`) !== undefined) {
    override.defaultProperties = read.strings(`${key}:DefaultProperties`);
  }
  if (lookup(read.tree, `${key}:AllowedProperties`) !== undefined) {
    override.allowedProperties = read.strings(`${key}:AllowedProperties`);
  }
  if (set("UseDefaultDisplayProperties")) {
    override.useDefaultDisplayProperties = read.boolean(`${key}:UseDefaultDisplayProperties`, true);
  }
  if (set("PromptsAnsweredBy")) {
    override.promptsAnsweredBy = read.choice(`${key}:PromptsAnsweredBy`, PROMPT_ANSWERERS, "User");
  }
  if (set("ConfirmBeforeRun")) {
    override.confirmBeforeRun = read.boolean(`${key}:ConfirmBeforeRun`, false);
  }
  return override;
}

/**
 * The override that applies to something named `names`, most specific first (authorization passes
 * the parameter set's own tool name, the tool name, then the command name): every
 * `CommandOverrides` entry whose key matches one of them (case-insensitively) applies, and for each
 * field the most specific entry that sets it wins. So a tool-name entry without `RequiredRoles`
 * keeps the command's roles. Undefined when no entry matches.
 */
export function overrideFor(
  shell: OverrideSource,
  ...names: string[]
): CommandOverride | undefined {
  const keys = Object.keys(shell.commandOverrides);
  let merged: CommandOverride | undefined;
  for (const name of [...names].reverse()) {
    const key = keys.find((k) => k.toLowerCase() === name.toLowerCase());
    if (key === undefined) continue;
    const entry = Object.fromEntries(
      Object.entries(shell.commandOverrides[key]!).filter(([, v]) => v !== undefined),
    );
    merged = { ...merged, ...entry };
  }
  return merged;
}

/** What {@linkcode overrideOf} needs of a tool (a `ToolDescriptor`). */
export interface OverrideTarget {
  name: string;
  command: string;
  /** The command's module, by which a key may qualify the command (`Module\Command`). */
  module?: string | null;
  /** A parameter set's own tool name, when the tool is one set of a command tool. */
  setToolName?: string | undefined;
  /** Keys naming the command by an alias, resolved at discovery (`lib/catalog_overrides.ts`). */
  overrideAliases?: string[] | undefined;
}

/**
 * The override of a tool: its set's own tool name, its name, its command, the command
 * module-qualified, then an alias of it (see {@linkcode overrideFor}).
 */
export function overrideOf(
  shell: OverrideSource,
  tool: OverrideTarget,
): CommandOverride | undefined {
  return overrideFor(shell, ...namesOf(tool));
}

/**
 * The key that sets `field` of a tool's override, for messages that name it: the most specific
 * `CommandOverrides` entry (by {@linkcode overrideOf}'s order) that sets it, else `fallback`.
 */
export function overrideSettingOf(
  shell: OverrideSource,
  tool: OverrideTarget,
  field: keyof CommandOverride,
  fallback: string,
): string {
  const keys = Object.keys(shell.commandOverrides);
  for (const name of namesOf(tool)) {
    const key = keys.find((k) => k.toLowerCase() === name.toLowerCase());
    if (key === undefined || shell.commandOverrides[key]![field] === undefined) continue;
    return `ShellConfiguration:CommandOverrides:${key}:${OVERRIDE_KEYS[field]}`;
  }
  return fallback;
}

/**
 * The key that sets a tool's time limit, for the message when it runs out: the most specific
 * `CommandOverrides` entry that sets `ToolCallTimeout`, else `ShellConfiguration:ToolCallTimeout`.
 */
export function timeoutSettingOf(shell: OverrideSource, tool: OverrideTarget): string {
  return overrideSettingOf(shell, tool, "toolCallTimeoutMs", "ShellConfiguration:ToolCallTimeout");
}

/** The names an override key may give a tool by, most specific first. */
function namesOf(tool: OverrideTarget): string[] {
  return [
    tool.setToolName,
    tool.name,
    tool.command,
    tool.module ? `${tool.module}\\${tool.command}` : undefined,
    ...(tool.overrideAliases ?? []),
  ].filter((n): n is string => !!n);
}
