/**
 * What an MCP tool is to svc: the descriptor the catalog builds for a command (or one of its
 * parameter sets), its parameters, their JSON Schemas and its annotations. Its own module because
 * the catalog builds it while the call path (arguments, authorization, shaping, results) only
 * reads it; neither side needs the other's code. An MCP prompt's descriptor too, which keeps the
 * tool descriptor its arguments bind with.
 *
 * @module
 */
import type { ConfirmLevel } from "./config_schema.ts";

/** A JSON Schema object (the subset svc emits). */
export type JsonSchema = Record<string, unknown>;

/**
 * How an argument is handed to PowerShell; `shaping` arguments (`_RequestedProperties`,
 * `_AllProperties`, `_MaxResults`) never reach the command, they shape its output, and the `set`
 * argument (`_ParameterSet`) chooses among the parameter sets of a tool covering a whole command.
 */
export type ParameterKind = "value" | "switch" | "credential" | "shaping" | "set";

/** One tool parameter: its schema and how it binds. */
export interface ToolParameter {
  /** PowerShell parameter name, also the JSON property name. */
  name: string;
  /** JSON Schema of the argument. */
  schema: JsonSchema;
  /** Whether the argument is mandatory in this parameter set. */
  required: boolean;
  /** How the argument binds. */
  kind: ParameterKind;
  /**
   * Every value PowerShell accepts, when the schema's `enum` does not list them all (an empty
   * member, or more than `ENUM_CAP`): svc checks the argument against these. @default undefined
   */
  accepted?: string[];
  /**
   * The provider whose dynamic parameter this is (`FileSystem`): a call that gives it runs only on
   * paths of that provider (`docs/tool-schemas.md`). @default undefined: a parameter of the command
   */
  provider?: string;
}

/** Where a tool's description came from. */
export type DescriptionSource = "synopsis" | "description" | "generated" | "syntax" | "name";

/** MCP tool annotations. */
export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * What a tool's help resource shows beyond its schema (`lib/resource_help.ts`): the command's help
 * text, each parameter's PowerShell type, the defaults help states, and its examples.
 */
export interface ToolHelp {
  /** The help synopsis, cleaned; null without help content. */
  synopsis: string | null;
  /** The help description, cleaned; null without help content. */
  description: string | null;
  /** The PowerShell type of each parameter, by name (`System.String[]`). */
  types: Record<string, string>;
  /** Default values as help states them, by parameter name; empty without help content. */
  defaults: Record<string, string>;
  /** The help's examples, in order. */
  examples: { code: string; remarks: string | null }[];
}

/** One MCP tool: a command and one of its parameter sets, or all of them (`ToolGranularity: Command`). */
export interface ToolDescriptor {
  /** MCP tool name, e.g. `get_process_name`. */
  name: string;
  /** The PowerShell command, e.g. `Get-Process`. */
  command: string;
  /**
   * Parameter set name (`__AllParameterSets` for commands with one unnamed set); for a tool
   * covering a whole command, the names of its sets joined by `, `.
   */
  parameterSet: string;
  /** Module of the command, if any. */
  module: string | null;
  /** Tool description (sanitized, capped at 1024 characters). */
  description: string;
  /** Source of the description. */
  descriptionSource: DescriptionSource;
  /** Input schema for `tools/list`. */
  inputSchema: JsonSchema;
  /** Annotations derived from the verb. */
  annotations: ToolAnnotations;
  /**
   * The command's `ConfirmImpact` when it supports ShouldProcess (then the tool takes `Confirm` and
   * `WhatIf`): it asks for confirmation when this reaches `ShellConfiguration:ConfirmPreference`.
   * @default undefined: the command never asks through ShouldProcess
   */
  confirmImpact?: ConfirmLevel;
  /**
   * The image or audio media type the command declares with `[OutputType('audio/L16')]`: a byte
   * array it writes whose first bytes show no type is content of this one (`lib/result_media.ts`).
   * @default undefined: such a byte array stays output, as base64
   */
  outputMediaType?: string;
  /** Parameters in schema order. */
  parameters: ToolParameter[];
  /**
   * For a tool covering a whole command: the tool of each parameter set it covers (default set
   * first), against which a call is checked once its arguments chose one. @default undefined
   */
  parameterSetTools?: ToolDescriptor[];
  /**
   * For one parameter set of a tool covering a whole command: the name the set has as a tool of
   * its own (`ToolGranularity: ParameterSet`), by which `CommandOverrides` can name it. @default undefined
   */
  setToolName?: string;
  /**
   * `CommandOverrides` keys that name this tool's command by another name (an alias), resolved by
   * the worker at discovery (`catalog_overrides.ts`). @default undefined
   */
  overrideAliases?: string[];
  /**
   * The command's help for its help resource. @default undefined: a descriptor built by hand, or
   * a catalog cached before help was kept (the resource then shows the schema only)
   */
  help?: ToolHelp;
}

/** One argument of an MCP prompt, as `prompts/list` shows it. */
export interface McpPromptArgument {
  /** The PowerShell parameter's name. */
  name: string;
  /** Its help text, else what the schema says of its values. @default undefined */
  description?: string;
  /** Whether the parameter is mandatory. */
  required: boolean;
}

/** One MCP prompt: a command whose output becomes the prompt's messages. */
export interface McpPromptDescriptor {
  /** The prompt's name, e.g. `get_greeting`. */
  name: string;
  /** The PowerShell command, e.g. `Get-Greeting`. */
  command: string;
  /** The command's description, as its tool's. */
  description: string;
  /** The arguments, in the order of the command's parameters. */
  arguments: McpPromptArgument[];
  /**
   * The tool of the command's default parameter set, narrowed to `arguments`: what binds and
   * checks a prompt's arguments and what authorization reads (`RequiredRoles`).
   */
  tool: ToolDescriptor;
}
