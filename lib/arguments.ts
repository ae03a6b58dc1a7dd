/**
 * Checks tool-call arguments against a tool's parameters and turns them into worker `invoke`
 * parameters. Runs before any worker is involved, so a wrong type or a missing mandatory argument is
 * answered at once with a message naming the argument. Leniency, on purpose and documented: numeric
 * strings are accepted for numbers, "true"/"false" for booleans, a single value where an array is
 * expected, and ValidateSet/enum values in any letter case (PowerShell compares them that way).
 *
 * @module
 */
import type { JsonSchema, ToolDescriptor, ToolParameter } from "./tool_descriptor.ts";

/** Arguments accepted for a call, ready for the worker. */
export interface BoundArguments {
  parameters: Record<string, unknown>;
  credentials: string[];
  /** The shaping arguments given (`_RequestedProperties`, `_AllProperties`, `_MaxResults`), by name. */
  shaping: Record<string, unknown>;
  /**
   * The provider the given dynamic arguments belong to, and their names: the worker runs the call
   * only on paths of that provider (protocol §4.4). @default undefined: none given
   */
  provider?: { name: string; arguments: string[] };
}

/** The outcome of {@linkcode bindArguments}: bound arguments, or the reason they were refused. */
export type BindResult = { ok: true; value: BoundArguments } | { ok: false; message: string };

// A tool's parameters by lower-case name, built once per descriptor (descriptors are not changed).
const byNameOf = new WeakMap<ToolDescriptor, Map<string, ToolParameter>>();

function parametersByName(tool: ToolDescriptor): Map<string, ToolParameter> {
  let byName = byNameOf.get(tool);
  if (!byName) {
    byName = new Map(tool.parameters.map((p) => [p.name.toLowerCase(), p]));
    byNameOf.set(tool, byName);
  }
  return byName;
}

/** Argument names taken for secrets wherever a value could be shown: in audit lines, in questions. */
const SECRET_NAME = /pass(word)?|secret|token|key|credential/i;

/** Whether a name (an argument's, or a key's inside one) says its value is a secret. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/**
 * Whether the value of `tool`'s argument `name` is a secret, never shown: a credential, or an
 * argument whose name says it holds one.
 */
export function isSecretArgument(tool: ToolDescriptor, name: string): boolean {
  return isSecretName(name) ||
    parametersByName(tool).get(name.toLowerCase())?.kind === "credential";
}

/** Validates `args` for `tool` and converts them; never throws. */
export function bindArguments(tool: ToolDescriptor, args: unknown): BindResult {
  if (args !== undefined && args !== null && (typeof args !== "object" || Array.isArray(args))) {
    return { ok: false, message: `Arguments for tool '${tool.name}' must be a JSON object` };
  }
  const given = (args ?? {}) as Record<string, unknown>;
  const byName = parametersByName(tool);
  const parameters: Record<string, unknown> = {};
  const credentials: string[] = [];
  const shaping: Record<string, unknown> = {};
  let provider: BoundArguments["provider"];
  for (const [key, value] of Object.entries(given)) {
    const parameter = byName.get(key.toLowerCase());
    if (!parameter) {
      const known = tool.parameters.map((p) => p.name).join(", ") || "none";
      return {
        ok: false,
        message: `Unknown argument '${key}' for tool '${tool.name}' (accepted arguments: ${known})`,
      };
    }
    if (value === null || value === undefined) continue;
    const checked = checkValue(value, checkedSchema(parameter), parameter.name);
    if (!checked.ok) {
      return {
        ok: false,
        message: `Invalid argument '${parameter.name}' for tool '${tool.name}': ${checked.message}`,
      };
    }
    if (!isWellFormed(checked.value)) {
      return {
        ok: false,
        message:
          `Invalid argument '${parameter.name}' for tool '${tool.name}': it holds text with an unpaired UTF-16 surrogate, which PowerShell cannot be given`,
      };
    }
    if (parameter.kind === "shaping") {
      shaping[parameter.name] = checked.value;
      continue;
    }
    parameters[parameter.name] = checked.value;
    if (parameter.kind === "credential") credentials.push(parameter.name);
    if (parameter.provider) {
      // A tool's dynamic parameters all come from one provider (the catalog describes one).
      provider ??= { name: parameter.provider, arguments: [] };
      provider.arguments.push(parameter.name);
    }
  }
  for (const parameter of tool.parameters) {
    if (parameter.required && !(parameter.name in parameters)) {
      return {
        ok: false,
        message: `Missing required argument '${parameter.name}' for tool '${tool.name}'`,
      };
    }
  }
  return {
    ok: true,
    value: { parameters, credentials, shaping, ...(provider ? { provider } : {}) },
  };
}

/**
 * Whether every string in `value`, object keys included, is well-formed UTF-16. JSON may carry a
 * lone surrogate (`"\ud800"`), which the worker's JSON reader refuses: the call would fail with
 * no more than "the frame is not a valid JSON object".
 */
function isWellFormed(value: unknown): boolean {
  // An explicit stack: a deeply nested argument must not overflow the call stack.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "string") {
      if (!item.isWellFormed()) return false;
    } else if (Array.isArray(item)) {
      for (const inner of item) stack.push(inner);
    } else if (item !== null && typeof item === "object") {
      for (const [key, inner] of Object.entries(item)) {
        if (!key.isWellFormed()) return false;
        stack.push(inner);
      }
    }
  }
  return true;
}

/**
 * The schema an argument is checked against: its own, with every accepted value as the enum when
 * the schema lists only some of them (`ToolParameter.accepted`).
 */
function checkedSchema(parameter: ToolParameter): JsonSchema {
  const { schema, accepted } = parameter;
  if (!accepted) return schema;
  if (schema.type === "array") {
    return { ...schema, items: { ...(schema.items as JsonSchema), enum: accepted } };
  }
  return { ...schema, enum: accepted };
}

/** Accepted values a refusal lists in full; past it, the first few and the count. */
const LISTED_VALUES = 64;

type Checked = { ok: true; value: unknown } | { ok: false; message: string };

function fail(message: string): Checked {
  return { ok: false, message };
}

/**
 * What kind of value was given, never the value: refusals are logged and an argument may be a
 * secret (shown only in audit lines with `Audit:LogArguments`, redacted).
 */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string":
      return "a string";
    case "number":
      return Number.isInteger(value) ? "an integer" : "a number";
    case "boolean":
      return "true or false";
    case "object":
      return "an object";
    default:
      return typeof value;
  }
}

function checkValue(value: unknown, schema: JsonSchema, path: string): Checked {
  switch (schema.type) {
    case undefined:
      return { ok: true, value };
    case "array":
      return checkArray(value, schema, path);
    case "object":
      return checkObject(value, schema, path);
    case "boolean":
      return checkBoolean(value);
    case "integer":
    case "number":
      return checkNumber(value, schema);
    case "string":
      return checkString(value, schema);
    default:
      return { ok: true, value };
  }
}

function checkArray(value: unknown, schema: JsonSchema, path: string): Checked {
  const items = Array.isArray(value) ? value : [value];
  const itemSchema = (schema.items ?? {}) as JsonSchema;
  const out: unknown[] = [];
  for (const [i, item] of items.entries()) {
    const checked = checkValue(item, itemSchema, `${path}[${i}]`);
    if (!checked.ok) {
      // A single value stands for a one-item list: it has no item number to name.
      if (!Array.isArray(value)) return fail(`${checked.message} (or an array of such values)`);
      return fail(`item ${i}: ${checked.message}`);
    }
    out.push(checked.value);
  }
  if (typeof schema.minItems === "number" && out.length < schema.minItems) {
    return fail(`expected at least ${schema.minItems} item(s), got ${out.length}`);
  }
  if (typeof schema.maxItems === "number" && out.length > schema.maxItems) {
    return fail(`expected at most ${schema.maxItems} item(s), got ${out.length}`);
  }
  return { ok: true, value: out };
}

function checkObject(value: unknown, schema: JsonSchema, path: string): Checked {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return fail(`expected an object, got ${kindOf(value)}`);
  }
  const properties = schema.properties as Record<string, JsonSchema> | undefined;
  if (!properties) return { ok: true, value };
  const record = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(record)) {
    const name = Object.keys(properties).find((k) => k.toLowerCase() === key.toLowerCase());
    if (name === undefined) {
      if (schema.additionalProperties === false) return fail(`unknown property '${key}'`);
      out[key] = item;
      continue;
    }
    const checked = checkValue(item, properties[name]!, `${path}.${name}`);
    if (!checked.ok) return fail(`property '${name}': ${checked.message}`);
    out[name] = checked.value;
  }
  for (const name of (schema.required as string[] | undefined) ?? []) {
    if (!(name in out)) return fail(`property '${name}' is required`);
  }
  return { ok: true, value: out };
}

function checkBoolean(value: unknown): Checked {
  if (typeof value === "boolean") return { ok: true, value };
  if (value === "true" || value === "false") return { ok: true, value: value === "true" };
  return fail(`expected true or false, got ${kindOf(value)}`);
}

function checkNumber(value: unknown, schema: JsonSchema): Checked {
  const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isFinite(n)) {
    return fail(
      `expected ${schema.type === "integer" ? "an integer" : "a number"}, got ${kindOf(value)}`,
    );
  }
  if (schema.type === "integer" && !Number.isInteger(n)) {
    return fail(`expected an integer, got ${kindOf(value)}`);
  }
  if (typeof schema.minimum === "number" && n < schema.minimum) {
    return fail(`the value is less than the minimum ${schema.minimum}`);
  }
  if (typeof schema.maximum === "number" && n > schema.maximum) {
    return fail(`the value is greater than the maximum ${schema.maximum}`);
  }
  return { ok: true, value: n };
}

function checkString(value: unknown, schema: JsonSchema): Checked {
  const text = typeof value === "number" || typeof value === "boolean" ? String(value) : value;
  if (typeof text !== "string") return fail(`expected a string, got ${kindOf(value)}`);
  if (Array.isArray(schema.enum)) {
    const match = (schema.enum as string[]).find((e) => e.toLowerCase() === text.toLowerCase());
    if (match === undefined) {
      const values = schema.enum as string[];
      return fail(
        values.length <= LISTED_VALUES
          ? `the value is not one of ${values.join(", ")}`
          : `the value is not one of the ${values.length} accepted values (${
            values.filter((v) => v !== "").slice(0, 8).join(", ")
          }, …)`,
      );
    }
    return { ok: true, value: match };
  }
  if (typeof schema.minLength === "number" && text.length < schema.minLength) {
    return fail(`the value is shorter than ${schema.minLength} character(s)`);
  }
  if (typeof schema.maxLength === "number" && text.length > schema.maxLength) {
    return fail(`the value is longer than ${schema.maxLength} character(s)`);
  }
  if (typeof schema.pattern === "string" && !matchesPattern(text, schema.pattern)) {
    return fail(`the value does not match the pattern ${schema.pattern}`);
  }
  return { ok: true, value: text };
}

/** ValidatePattern compares case-insensitively by default; a .NET-only pattern is left to PowerShell. */
function matchesPattern(text: string, pattern: string): boolean {
  try {
    return new RegExp(pattern, "iu").test(text);
  } catch {
    return true;
  }
}
