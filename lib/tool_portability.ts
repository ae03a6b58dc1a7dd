/**
 * The portable subset of tool schemas: what every MCP client and the model APIs behind them
 * (Anthropic, OpenAI, Gemini's OpenAPI subset) accept in `tools/list`. svc builds only such schemas
 * (`catalog.ts`); this check says so for a catalog, in a test over the default configuration and in
 * `svc doctor` over the user's own. The rules, and why, are in `docs/tool-schemas.md`.
 *
 * @module
 */

/** Longest tool name the Anthropic and OpenAI tool APIs take. */
export const MAX_TOOL_NAME = 64;

/** What a tool name must match: MCP clients and model APIs refuse others. */
export const PORTABLE_TOOL_NAME = new RegExp(`^[a-zA-Z0-9_-]{1,${MAX_TOOL_NAME}}$`);

/**
 * Most members an enum of a tool schema lists; a longer one is left out of the schema, and the
 * value checked by svc instead (`catalog.ts`).
 */
export const ENUM_CAP = 64;

/** A tool as `tools/list` shows it, as far as the check reads it. */
export interface ListedTool {
  name: string;
  inputSchema: unknown;
  outputSchema?: unknown;
}

/**
 * Everything in `tools` outside the portable subset, one sentence each naming the tool and where in
 * its schema: the list out of name order, a name not matching {@linkcode PORTABLE_TOOL_NAME}, an
 * input schema that is not an object or has `oneOf`/`anyOf`/`allOf` at its top; anywhere a `$ref`,
 * a schema with neither `type` nor `anyOf`/`oneOf` of typed branches, or a `type` beside `anyOf` or
 * `oneOf`; and in input schemas, which clients hand to a model's typed dialect, an array without
 * `items`, an object without `properties`, a string `format` other than `date-time`, an enum member
 * that is not a non-empty string, or an enum of more than {@linkcode ENUM_CAP} members. Output
 * schemas only validate `structuredContent` and are held to the first rules alone. Empty when all
 * is portable.
 */
export function portabilityFindings(tools: ListedTool[]): string[] {
  const findings: string[] = [];
  const names = tools.map((tool) => tool.name);
  const unsorted = names.findIndex((name, i) => i > 0 && names[i - 1]! > name);
  if (unsorted > 0) {
    findings.push(
      `Tools are not listed in name order: '${names[unsorted - 1]}' comes before '${
        names[unsorted]
      }'`,
    );
  }
  for (const tool of tools) {
    if (!PORTABLE_TOOL_NAME.test(tool.name)) {
      findings.push(
        `Tool name '${tool.name}' does not match ${PORTABLE_TOOL_NAME.source}`,
      );
    }
    const input = tool.inputSchema as Record<string, unknown> | null;
    if (!isObject(input) || input.type !== "object") {
      findings.push(`Input schema of tool '${tool.name}' is not of type object`);
    }
    for (const keyword of ["oneOf", "anyOf", "allOf"]) {
      if (isObject(input) && keyword in input) {
        findings.push(`Input schema of tool '${tool.name}' has '${keyword}' at its top`);
      }
    }
    walk(input, `${tool.name} input`, true, findings);
    if (tool.outputSchema !== undefined) {
      walk(tool.outputSchema, `${tool.name} output`, false, findings);
    }
  }
  return findings;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Checks one schema and the schemas inside it; `where` names it in findings (`tool input.Path`).
 * `typed` adds the rules of the typed dialects models read (input schemas).
 */
function walk(schema: unknown, where: string, typed: boolean, findings: string[]): void {
  if (!isObject(schema)) return;
  const say = (what: string) => findings.push(`Schema ${where}: ${what}`);
  if ("$ref" in schema) say("has '$ref'");
  else if (!("type" in schema) && !("anyOf" in schema) && !("oneOf" in schema)) {
    say("says no type (an untyped schema accepts anything, and typed dialects refuse it)");
  }
  if ("type" in schema && ("anyOf" in schema || "oneOf" in schema)) {
    say("has 'type' beside 'anyOf' or 'oneOf'");
  }
  if (typed) {
    if (schema.type === "array" && !("items" in schema)) say("is an array without 'items'");
    if (schema.type === "object" && !("properties" in schema)) {
      say("is an object without 'properties'");
    }
    if (typeof schema.format === "string" && schema.format !== "date-time") {
      say(`has format '${schema.format}' (only 'date-time' is portable)`);
    }
    if (Array.isArray(schema.enum)) {
      if (schema.enum.some((member) => typeof member !== "string" || member === "")) {
        say("has an enum member that is not a non-empty string");
      }
      if (schema.enum.length > ENUM_CAP) {
        say(`has an enum of ${schema.enum.length} members (at most ${ENUM_CAP})`);
      }
    }
  }
  if (isObject(schema.properties)) {
    for (const [name, property] of Object.entries(schema.properties)) {
      walk(property, `${where}.${name}`, typed, findings);
    }
  }
  walk(schema.items, `${where}[]`, typed, findings);
  for (const keyword of ["anyOf", "oneOf", "allOf"]) {
    const list = schema[keyword];
    if (Array.isArray(list)) {
      list.forEach((s, i) => walk(s, `${where}/${keyword}[${i}]`, typed, findings));
    }
  }
}
