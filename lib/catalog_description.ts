/**
 * Tool descriptions: help content when it is installed, else a description written from the
 * command's metadata (never the bare syntax line PowerShell makes up for help-less commands), and
 * the text cleaning and capping shared by tool and parameter descriptions.
 *
 * @module
 */
import type { DescriptionSource, ToolHelp } from "./tool_descriptor.ts";
import type { CommandMeta, ParameterSetMeta } from "./worker_protocol.ts";

/** Name PowerShell gives the one parameter set of a command that declares none. */
export const ALL_SETS = "__AllParameterSets";
/** Longest tool description, in characters. */
export const TOOL_DESCRIPTION_CAP = 1024;
/** Longest parameter description, in characters. */
export const PARAMETER_DESCRIPTION_CAP = 512;

/**
 * The description of a tool for `set` of `command` (`null`: a tool covering every set) and where
 * it came from: the help synopsis, else the help description, else one generated from metadata,
 * else the syntax line, else the bare name.
 */
export function toolDescription(
  command: CommandMeta,
  set: ParameterSetMeta | null,
): { description: string; source: DescriptionSource } {
  const synopsis = sanitize(command.help?.synopsis ?? "");
  // Get-Help invents a syntax line as the synopsis of help-less commands; that is not a description.
  if (synopsis && synopsis !== command.name && !synopsis.startsWith(`${command.name} `)) {
    return { description: cap(synopsis, TOOL_DESCRIPTION_CAP), source: "synopsis" };
  }
  const description = sanitize(command.help?.description ?? "");
  if (description) {
    return { description: cap(description, TOOL_DESCRIPTION_CAP), source: "description" };
  }
  const generated = describeFromMetadata(command, set);
  if (generated) {
    return { description: cap(generated, TOOL_DESCRIPTION_CAP), source: "generated" };
  }
  const syntax = sanitize(set?.syntax ?? "");
  if (syntax) {
    const text = syntax.startsWith(command.name) ? syntax : `${command.name} ${syntax}`;
    return { description: cap(text, TOOL_DESCRIPTION_CAP), source: "syntax" };
  }
  return { description: command.name, source: "name" };
}

/**
 * A description for a command without help content (a fresh install before `Update-Help`), written
 * from what discovery knows: verb and noun in words, the command, and the parameter set when the
 * command has several. Its parameters, required ones and accepted values are in the input schema
 * a model reads beside it; listed here too they cost each tool 100-300 bytes of `tools/list`.
 */
function describeFromMetadata(command: CommandMeta, set: ParameterSetMeta | null): string | null {
  if (!command.verb || !command.noun) return null;
  const noun = command.noun.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  const which = set && set.name !== ALL_SETS && command.parameterSets.length > 1
    ? `, parameter set ${set.name}`
    : "";
  return `${command.verb} ${noun} (${command.name}${which}).`;
}

/**
 * Cleans help text: control characters removed (whitespace controls become spaces), whitespace runs
 * collapsed within paragraphs, paragraph breaks kept as a blank line.
 */
export function sanitize(text: string): string {
  return text
    .replace(/\r\n?/g, "\n")
    .split(/\n\s*\n/)
    .map((paragraph) =>
      paragraph
        .replace(/[\t\n\v\f]/g, " ")
        .replace(/\p{Cc}/gu, "")
        .replace(/\s+/g, " ")
        .trim()
    )
    .filter(Boolean)
    .join("\n\n");
}

/** Caps text at `max` characters, cutting at a word boundary and ending with `…`. */
export function cap(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/**
 * The help a command's tools show as resources: its help text cleaned, every parameter's type, and
 * the defaults and examples help states. Code keeps its lines; only control characters go.
 */
export function commandHelp(command: CommandMeta): ToolHelp {
  const types: Record<string, string> = {};
  for (const set of command.parameterSets) {
    for (const parameter of set.parameters) types[parameter.name] ??= parameter.type;
  }
  const clean = (text: string | null | undefined) => sanitize(text ?? "") || null;
  const help = command.help;
  return {
    synopsis: clean(help?.synopsis),
    description: clean(help?.description),
    types,
    defaults: { ...help?.defaults },
    examples: (help?.examples ?? []).map((example) => ({
      code: example.code.replace(/\r\n?/g, "\n").replace(/[^\P{Cc}\n\t]/gu, ""),
      remarks: clean(example.remarks),
    })),
  };
}
