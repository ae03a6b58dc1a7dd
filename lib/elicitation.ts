/**
 * The mapping between a worker's prompt (a ShouldProcess confirmation, PromptForChoice, Read-Host or
 * `$Host.UI.Prompt`) and an MCP form elicitation, used by both protocol eras: `elicitation/create`
 * during the call (2025-11-25) and the input requests of an `input_required` result (2026-07-28).
 * Pure: no I/O, no SDK calls.
 *
 * @module
 */
import type {
  ClientCapabilities,
  ElicitRequestFormParams,
  ElicitResult,
} from "@modelcontextprotocol/server";
import type { PromptAnswer, PromptChoice, PromptField, WorkerPrompt } from "./worker_protocol.ts";

/**
 * The first protocol revision that asks through `input_required` results (SEP-2322) instead of
 * `elicitation/create` requests during the call.
 */
export const INPUT_REQUIRED_REVISION = "2026-07-28";

/**
 * Whether a client declared form elicitation: `elicitation.form`, or a bare `elicitation: {}` (how
 * clients before form and URL modes declared forms); a client may declare URL mode alone.
 */
export function asksForms(capabilities: ClientCapabilities | undefined): boolean {
  const elicitation = capabilities?.elicitation;
  if (elicitation === undefined || elicitation === null) return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}

/** A prompt as an MCP form elicitation, with the key naming it among a call's input requests. */
export interface Elicitation {
  /**
   * The input-request key: the caption when it is a plain name, else the single field's name when it
   * is a plain name, else the prompt's kind ("confirm", "choice", "text", "fields").
   */
  key: string;
  /** The `elicitation/create` params (form mode). */
  params: ElicitRequestFormParams;
}

type Property = ElicitRequestFormParams["requestedSchema"]["properties"][string];

const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** The one property of a confirm/choice form. */
const ANSWER = "answer";

/** The form that asks `prompt`'s question, and its input-request key. */
export function toElicitation(prompt: WorkerPrompt): Elicitation {
  const fields = fieldsOf(prompt);
  const key = PLAIN_NAME.test(prompt.caption)
    ? prompt.caption
    : fields.length === 1 && PLAIN_NAME.test(fields[0]!.name)
    ? fields[0]!.name
    : prompt.kind;
  const properties: Record<string, Property> = {};
  if (fields.length === 0) {
    properties[ANSWER] = choiceProperty(prompt);
  } else {
    propertyNames(fields).forEach((name, i) => properties[name] = fieldProperty(fields[i]!));
  }
  return {
    key,
    params: {
      mode: "form",
      message: messageOf(prompt, fields),
      requestedSchema: { type: "object", properties, required: Object.keys(properties) },
    },
  };
}

/**
 * The worker's answer to `prompt` from the client's elicitation result. An accepted form whose content
 * lacks a valid answer (a missing, unknown or mistyped value) counts as declined: never the default,
 * because ShouldProcess's default is Yes. A single-question form whose content holds exactly one value
 * of the right type under another name takes that value.
 */
export function toPromptAnswer(prompt: WorkerPrompt, result: ElicitResult): PromptAnswer {
  if (result.action !== "accept") return { action: result.action };
  const content: Record<string, unknown> = result.content ?? {};
  const fields = fieldsOf(prompt);
  if (fields.length === 0) {
    const labels = uniqueLabels(prompt.choices ?? []);
    const indexes = chosenIndexes(
      labels,
      prompt.multiple === true,
      pick(content, ANSWER, 1, (v) => chosenIndexes(labels, prompt.multiple === true, v) !== null),
    );
    return indexes === null ? { action: "decline" } : { action: "accept", choices: indexes };
  }
  const names = propertyNames(fields);
  const values: Record<string, string | number | boolean> = {};
  for (const [i, field] of fields.entries()) {
    const value = pick(content, names[i]!, fields.length, (v) => fits(field.type, v));
    if (!fits(field.type, value)) return { action: "decline" };
    values[field.name] = value;
  }
  return { action: "accept", values };
}

/** The fields a text/fields prompt asks; Read-Host without -Prompt asks one unnamed string. */
function fieldsOf(prompt: WorkerPrompt): PromptField[] {
  if (prompt.kind === "confirm" || prompt.kind === "choice") return [];
  const fields = prompt.fields ?? [];
  return fields.length > 0 ? fields : [{ name: "", label: "", help: "", type: "string" }];
}

/**
 * "command: caption: message", or without the empty ones; Read-Host -Prompt has neither caption nor
 * message, so its one field's label (the prompt) is the question.
 */
function messageOf(prompt: WorkerPrompt, fields: PromptField[]): string {
  const parts = [prompt.caption, prompt.message].filter((p) => p.trim() !== "");
  const only = fields.length === 1 ? fields[0]!.label || fields[0]!.name : "";
  const question = parts.length > 0
    ? parts.join(": ")
    : only.trim() !== ""
    ? only
    : "PowerShell asks for input.";
  // The command the call runs comes first, as PowerShell names the cmdlet in its own prompts: the
  // user learns what wants the answer, not only what the (caller-chosen) target is.
  const command = prompt.command?.trim();
  return command ? `${command}: ${question}` : question;
}

/**
 * The property name of each field: its own name, "answer" for an unnamed one, made unique by a
 * " (2)" suffix so every answer maps back to one field.
 */
function propertyNames(fields: PromptField[]): string[] {
  return unique(fields.map((f) => f.name === "" ? ANSWER : f.name));
}

/** Labels made unique the same way, so the chosen label names one index. */
function uniqueLabels(choices: PromptChoice[]): string[] {
  return unique(choices.map((c) => c.label));
}

function unique(names: string[]): string[] {
  const seen = new Set<string>();
  return names.map((name) => {
    let candidate = name;
    for (let n = 2; seen.has(candidate); n++) candidate = `${name} (${n})`;
    seen.add(candidate);
    return candidate;
  });
}

function choiceProperty(prompt: WorkerPrompt): Property {
  const choices = prompt.choices ?? [];
  const labels = uniqueLabels(choices);
  const options = labels.map((label) => ({ const: label, title: label }));
  const defaults = (prompt.defaults ?? []).map((i) => labels[i])
    .filter((l): l is string => l !== undefined);
  const helps = choices.flatMap((c, i) => c.help.trim() === "" ? [] : [`${labels[i]}: ${c.help}`]);
  const described = {
    title: "Answer",
    ...(helps.length > 0 ? { description: helps.join("\n") } : {}),
  };
  if (prompt.multiple === true) {
    return {
      type: "array",
      ...described,
      items: { anyOf: options },
      ...(defaults.length > 0 ? { default: defaults } : {}),
    };
  }
  return {
    type: "string",
    ...described,
    oneOf: options,
    ...(defaults[0] === undefined ? {} : { default: defaults[0] }),
  };
}

function fieldProperty(field: PromptField): Property {
  const described = {
    ...(field.label.trim() !== "" ? { title: field.label } : {}),
    ...(field.help.trim() !== "" ? { description: field.help } : {}),
  };
  const value = field.default;
  switch (field.type) {
    case "boolean":
      return {
        type: "boolean",
        ...described,
        ...(typeof value === "boolean" ? { default: value } : {}),
      };
    case "integer":
    case "number":
      return {
        type: field.type,
        ...described,
        ...(fits(field.type, value) ? { default: value as number } : {}),
      };
    default:
      return {
        type: "string",
        ...described,
        ...(typeof value === "string" ? { default: value } : {}),
      };
  }
}

/**
 * The value under `name`, or, when the form asks one question (`count` 1) and `name` is absent, the
 * only value in the content when it fits.
 */
function pick(
  content: Record<string, unknown>,
  name: string,
  count: number,
  fitsHere: (value: unknown) => boolean,
): unknown {
  if (Object.hasOwn(content, name) || count !== 1) return content[name];
  const values = Object.values(content);
  return values.length === 1 && fitsHere(values[0]) ? values[0] : undefined;
}

function fits(type: PromptField["type"], value: unknown): value is string | number | boolean {
  switch (type) {
    case "boolean":
      return typeof value === "boolean";
    case "integer":
      return Number.isSafeInteger(value);
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    default:
      return typeof value === "string";
  }
}

/** The indexes of the chosen labels; null when the value is not a valid choice. */
function chosenIndexes(labels: string[], multiple: boolean, value: unknown): number[] | null {
  if (!multiple) {
    const i = typeof value === "string" ? labels.indexOf(value) : -1;
    return i < 0 ? null : [i];
  }
  if (!Array.isArray(value)) return null;
  const indexes: number[] = [];
  for (const item of value) {
    const i = typeof item === "string" ? labels.indexOf(item) : -1;
    if (i < 0) return null;
    if (!indexes.includes(i)) indexes.push(i);
  }
  return indexes;
}
