/**
 * A tool's help as a resource: one Markdown document (`svc://help/<tool>`) with what `Get-Help`
 * would tell a person, the synopsis, description, every parameter with its type, whether it is
 * required, its default and accepted values, and the examples, for a client that lets its user or
 * model read more than the tool's description before calling it.
 *
 * @module
 */
import type { ToolDescriptor, ToolParameter } from "./tool_descriptor.ts";

/** The URI template of every tool's help; `{tool}` is the tool's name. */
export const HELP_TEMPLATE = "svc://help/{tool}";
const HELP_PREFIX = "svc://help/";

/** The URI of a tool's help. */
export function helpUri(tool: string): string {
  return `${HELP_PREFIX}${tool}`;
}

/** The tool a help URI names, or null when it is no help URI. */
export function helpToolOf(uri: string): string | null {
  if (!uri.startsWith(HELP_PREFIX)) return null;
  const name = uri.slice(HELP_PREFIX.length);
  return /^[a-z0-9_]+$/.test(name) ? name : null;
}

/** The help document of `tool`, in Markdown. */
export function helpDocument(tool: ToolDescriptor): string {
  const help = tool.help;
  const where = [
    `Runs \`${tool.command}\``,
    tool.module ? ` from module \`${tool.module}\`` : "",
    tool.parameterSetTools
      ? `, parameter sets ${tool.parameterSet}`
      : tool.parameterSet === "__AllParameterSets"
      ? ""
      : `, parameter set \`${tool.parameterSet}\``,
    ".",
  ].join("");
  const lines = [`# ${tool.name}`, "", where, ""];
  const synopsis = help?.synopsis ?? tool.description;
  lines.push(synopsis, "");
  if (help?.description && help.description !== synopsis) lines.push(help.description, "");
  lines.push("## Parameters", "");
  if (tool.parameters.length === 0) lines.push("None.", "");
  else {
    lines.push(
      "| Name | Type | Required | Default | Description |",
      "| --- | --- | --- | --- | --- |",
    );
    for (const parameter of tool.parameters) lines.push(parameterRow(tool, parameter));
    lines.push("");
  }
  const examples = help?.examples ?? [];
  if (examples.length > 0) {
    lines.push("## Examples", "");
    for (const [i, example] of examples.entries()) {
      const fence = "`".repeat(Math.max(3, longestRun(example.code, "`") + 1));
      lines.push(`### Example ${i + 1}`, "", `${fence}powershell`, example.code, fence, "");
      if (example.remarks) lines.push(example.remarks, "");
    }
  }
  return lines.join("\n");
}

function parameterRow(tool: ToolDescriptor, parameter: ToolParameter): string {
  const schema = parameter.schema;
  const psType = tool.help?.types[parameter.name];
  const jsonType = typeof schema.type === "string"
    ? schema.type === "array" && typeof (schema.items as { type?: unknown })?.type === "string"
      ? `${(schema.items as { type: string }).type}[]`
      : schema.type
    : "any";
  const type = psType ? `${jsonType} (${psType})` : jsonType;
  const values = parameter.accepted ?? (schema.enum as string[] | undefined) ??
    ((schema.items as { enum?: string[] } | undefined)?.enum);
  const description = [
    typeof schema.description === "string" ? schema.description : "",
    values ? `One of: ${values.join(", ")}.` : "",
  ].filter(Boolean).join(" ");
  const cells = [
    `\`${parameter.name}\``,
    type,
    parameter.required ? "yes" : "no",
    tool.help?.defaults[parameter.name] ?? "",
    description,
  ];
  return `| ${cells.map(cell).join(" | ")} |`;
}

/** A table cell: a pipe would end it and a line break would end the row. */
function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");
}

function longestRun(text: string, char: string): number {
  let longest = 0;
  let run = 0;
  for (const c of text) {
    run = c === char ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  return longest;
}
