/**
 * The human decides: when a command asks a person (a confirmation, Read-Host, a choice), only that
 * person's answer counts. This module holds the rules around a call's prompts that are svc's, not
 * PowerShell's:
 *
 * - who may answer them (`PromptsAnsweredBy`: the client's user only, or the caller too), and so
 *   whether a caller may pass `Confirm: false` and answers ahead of the questions;
 * - which calls are refused before they run because they would ask and the client cannot ask its
 *   user;
 * - the question svc itself asks before a `ConfirmBeforeRun` tool runs, naming the command and its
 *   arguments as they will run (secrets masked);
 * - the audit line of every question and its outcome (never what the user typed), and the
 *   sentences a result carries about them ("The user declined: …").
 *
 * What each answer does inside PowerShell (any answer but an accepted one stops the command) is the
 * worker's (`lib/host/cs/Prompter.cs`); the mapping to MCP forms is `lib/elicitation.ts`.
 *
 * @module
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { ShellSettings } from "./config.ts";
import type { ConfirmLevel } from "./config_schema.ts";
import {
  overrideOf,
  overrideSettingOf,
  type OverrideSource,
  type PromptsAnsweredBy,
} from "./config_overrides.ts";
import { isSecretArgument, isSecretName } from "./arguments.ts";
import { toElicitation } from "./elicitation.ts";
import { logger } from "./log.ts";
import type { JsonSchema, ToolDescriptor } from "./tool_descriptor.ts";
import type { PromptAnswer, PromptRecord, WorkerPrompt } from "./worker_protocol.ts";

const log = logger("mcp");

/** Who answers a tool's prompts, and whether svc asks before it runs. */
export interface PromptPolicy {
  /** Only the client's user, or the caller too. */
  answeredBy: PromptsAnsweredBy;
  /** The key that decides `answeredBy`, named to operators in refusals. */
  answeredBySetting: string;
  /** svc asks the user before each call runs (`CommandOverrides:<command>:ConfirmBeforeRun`). */
  confirmBeforeRun: boolean;
}

/** What the policy reads of the shell settings. */
export type PromptSettings =
  & OverrideSource
  & Pick<ShellSettings, "promptsAnsweredBy" | "confirmPreference" | "userInputTimeoutMs">;

/** The policy of `tool`: its `CommandOverrides` entry, else the shell's. */
export function promptPolicyOf(shell: PromptSettings, tool: ToolDescriptor): PromptPolicy {
  const override = overrideOf(shell, tool);
  return {
    answeredBy: override?.promptsAnsweredBy ?? shell.promptsAnsweredBy,
    answeredBySetting: overrideSettingOf(
      shell,
      tool,
      "promptsAnsweredBy",
      "ShellConfiguration:PromptsAnsweredBy",
    ),
    confirmBeforeRun: override?.confirmBeforeRun ?? false,
  };
}

const LEVELS: readonly ConfirmLevel[] = ["None", "Low", "Medium", "High"];

/** Whether a command of `impact` asks for confirmation under `$ConfirmPreference` `threshold`. */
function reachesThreshold(impact: ConfirmLevel, threshold: ConfirmLevel): boolean {
  return threshold !== "None" && impact !== "None" &&
    LEVELS.indexOf(impact) >= LEVELS.indexOf(threshold);
}

/**
 * Who answers `tool`'s prompts and when it asks, in a few words for `svc doctor`: "the user only",
 * or "the caller too (<key>)"; then whether svc asks before each run, and whether the command asks
 * to confirm by its `ConfirmImpact` under `ConfirmPreference`.
 */
export function promptSummary(shell: PromptSettings, tool: ToolDescriptor): string {
  const policy = promptPolicyOf(shell, tool);
  const parts = [
    policy.answeredBy === "User"
      ? "answered by the user only"
      : `answered by the caller too (${policy.answeredBySetting})`,
  ];
  if (policy.confirmBeforeRun) parts.push("svc asks before each run");
  const impact = tool.confirmImpact;
  if (impact !== undefined && reachesThreshold(impact, shell.confirmPreference)) {
    parts.push(`confirms each action (ConfirmImpact ${impact})`);
  }
  return parts.join("; ");
}

const CONFIRM = "confirm";

// A tool's input schema as a caller sees it, one per descriptor and policy (descriptors are not
// changed).
const userOnlySchemas = new WeakMap<ToolDescriptor, JsonSchema>();

/**
 * `tool`'s input schema as the caller sees it: where only the user answers its prompts, `Confirm`
 * is described as taking only `true` (false is refused when called; an `enum` of booleans is not
 * in the schema subset every client accepts, `docs/tool-schemas.md`).
 */
export function offeredSchema(tool: ToolDescriptor, policy: PromptPolicy): JsonSchema {
  const properties = tool.inputSchema.properties as Record<string, JsonSchema> | undefined;
  const confirm = Object.keys(properties ?? {}).find((name) => name.toLowerCase() === CONFIRM);
  if (policy.answeredBy === "Caller" || confirm === undefined) return tool.inputSchema;
  let schema = userOnlySchemas.get(tool);
  if (!schema) {
    schema = {
      ...tool.inputSchema,
      properties: {
        ...properties,
        [confirm]: {
          type: "boolean",
          description:
            "true: ask the user before each action, even where PowerShell would not ask. Whether the command goes ahead is its user's decision, so false is not accepted.",
        },
      },
    };
    userOnlySchemas.set(tool, schema);
  }
  return schema;
}

/** A call about to run: its tool, bound arguments and whether its client can ask its user. */
export interface PendingCall {
  tool: ToolDescriptor;
  parameters: Record<string, unknown>;
  policy: PromptPolicy;
  /** The client can ask its user during this call. */
  canAsk: boolean;
  /** Why nobody can be asked, where `canAsk` is false. @default that it declared no form elicitation */
  whyNobodyAsks?: string;
}

/** Why nobody can be asked during a call whose client declared no form elicitation. */
const CLIENT_CANNOT_ASK =
  "this client cannot ask its user (it declared no form elicitation for this request)";

/** Why a call must not run: its arguments (`invalid`), or a question nobody could answer. */
export interface Refusal {
  /** The arguments were refused (`Confirm: false`), not the call as it stands. */
  invalid: boolean;
  /** One sentence. */
  message: string;
}

/**
 * Why the call must not run, or null. Where only the user answers: `Confirm: false` is refused,
 * and so is a call that would ask (the caller passed `Confirm: true`, or the command's
 * `ConfirmImpact` reaches `ConfirmPreference` without `WhatIf`) from a client that cannot ask its
 * user. A `ConfirmBeforeRun` tool always needs a client that can ask its user. No refusal tells the
 * caller how to go ahead without the user.
 */
export function refusalBeforeRun(call: PendingCall, shell: PromptSettings): Refusal | null {
  const { tool, parameters, policy } = call;
  const confirm = parameters["Confirm"];
  if (policy.answeredBy === "User" && confirm === false) {
    return {
      invalid: true,
      message:
        `Argument 'Confirm' of tool '${tool.name}' may only be true: whether ${tool.command} goes ahead is its user's decision, asked while it runs`,
    };
  }
  if (call.canAsk) return null;
  const cannot = call.whyNobodyAsks ?? CLIENT_CANNOT_ASK;
  if (policy.confirmBeforeRun) {
    const setting = overrideSettingOf(shell, tool, "confirmBeforeRun", "ConfirmBeforeRun");
    return {
      invalid: false,
      message:
        `Tool '${tool.name}' runs only once its user confirms the call (${setting}), and ${cannot}, so it was not run`,
    };
  }
  if (policy.answeredBy === "Caller" || parameters["WhatIf"] === true) return null;
  const impact = tool.confirmImpact;
  const asksByImpact = impact !== undefined && reachesThreshold(impact, shell.confirmPreference);
  if (confirm !== true && !asksByImpact) return null;
  const why = confirm === true
    ? "Confirm is true"
    : `its ConfirmImpact ${impact} reaches ShellConfiguration:ConfirmPreference ${shell.confirmPreference}`;
  return {
    invalid: false,
    message:
      `${tool.command} asks its user to confirm before it acts (${why}), and ${cannot}, so it was not run; only an operator can let callers answer for the user (${policy.answeredBySetting})`,
  };
}

/** The seq of svc's own question before a `ConfirmBeforeRun` tool runs; the worker's start at 1. */
export const RUN_QUESTION_SEQ = 0;

/** The labels of svc's own question, the answer that runs the command first. */
const RUN_CHOICES = ["Yes", "No"] as const;

/** Longest rendering of one argument value in svc's own question, in characters. */
const VALUE_CHARS = 200;

/**
 * svc's own question before `tool` runs with `parameters`: a confirmation naming the command and
 * its arguments as they will run, PowerShell-quoted, secrets masked. Its default is No.
 */
function runQuestion(
  tool: ToolDescriptor,
  parameters: Record<string, unknown>,
): WorkerPrompt {
  return {
    seq: RUN_QUESTION_SEQ,
    kind: "confirm",
    command: tool.command,
    caption: "Confirm",
    message: `Run this command?\n${commandLine(tool, parameters)}`,
    choices: RUN_CHOICES.map((label) => ({ label, help: "" })),
    defaults: [1],
    multiple: false,
  };
}

/** `Verb-Noun -Name 'value' -Switch`, with secret values masked and long ones cut. */
function commandLine(tool: ToolDescriptor, parameters: Record<string, unknown>): string {
  const parts = [tool.command];
  for (const [name, value] of Object.entries(parameters)) {
    if (isSecretArgument(tool, name)) parts.push(`-${name} ********`);
    else if (value === true && isSwitch(tool, name)) parts.push(`-${name}`);
    else if (typeof value === "boolean") parts.push(`-${name}:${value ? "$true" : "$false"}`);
    else parts.push(`-${name} ${cut(literal(value))}`);
  }
  return parts.join(" ");
}

function isSwitch(tool: ToolDescriptor, name: string): boolean {
  return tool.parameters.some((p) => p.name === name && p.kind === "switch");
}

function cut(text: string): string {
  return text.length <= VALUE_CHARS
    ? text
    : `${text.slice(0, VALUE_CHARS)}… (${text.length - VALUE_CHARS} more characters)`;
}

// Characters that would make a question read otherwise than it is: controls, line separators and
// the invisible and direction-changing format characters.
const UNSEEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
/** Invisible and direction-changing characters (and line and paragraph separators), everywhere. */
const INVISIBLE = /[\p{Cf}\p{Zl}\p{Zp}]/gu;

/** `text` with its unseen characters as PowerShell escapes (`` `u{202e} ``). */
function escaped(text: string): string {
  return [...text].map((c) => UNSEEN.test(c) ? `\`u{${c.codePointAt(0)!.toString(16)}}` : c).join(
    "",
  );
}

/**
 * A value as PowerShell would take it: strings quoted (escaped when they hold unseen characters),
 * and the values of hashtable keys whose names say they hold a secret masked, at any depth.
 */
function literal(value: unknown): string {
  if (typeof value === "string") {
    if (!UNSEEN.test(value)) return `'${value.replaceAll("'", "''")}'`;
    const inner = [...value].map((c) => c === '"' || c === "`" || c === "$" ? `\`${c}` : c)
      .join("");
    return `"${escaped(inner)}"`;
  }
  if (typeof value === "boolean") return value ? "$true" : "$false";
  if (typeof value === "number") return String(value);
  if (value === null || value === undefined) return "$null";
  if (Array.isArray(value)) {
    // An array inside another is one item, as PowerShell writes it.
    return value.length === 0
      ? "@()"
      : value.map((item) => Array.isArray(item) ? `@(${literal(item)})` : literal(item)).join(", ");
  }
  const entries = Object.entries(value as Record<string, unknown>)
    .map(([key, inner]) => `${literal(key)} = ${isSecretName(key) ? "********" : literal(inner)}`);
  return `@{${entries.join("; ")}}`;
}

/** Who is asked, for the audit lines, and the call's arguments. */
export interface PromptAudience {
  tool: ToolDescriptor;
  principal: string;
  /** The call's bound arguments: text of the caller's in a question is shown escaped. @default none */
  parameters?: Record<string, unknown>;
}

/** How a call's prompts are asked and heard, for `RunspaceWorker.invoke` and svc's own question. */
export interface CallPrompts {
  /** Asks the user, or answers `unavailable` at once where the client cannot ask. */
  onPrompt: (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>;
  /** Logs how each prompt ended. */
  onPromptEnd: (record: PromptRecord) => void;
}

/**
 * The prompts of one call, audited at Information: every question when it is asked (with the
 * correlation id from the log context, the principal, the tool and command), and its outcome
 * (accepted with the label chosen for a confirmation or choice, else only "accepted"; declined,
 * cancelled, timed out, not asked). What a user typed is never logged.
 */
export function callPrompts(
  ask: ((prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>) | undefined,
  audience: PromptAudience,
): CallPrompts {
  const disarm = disarming(audience.parameters ?? {});
  const fields = (prompt: WorkerPrompt) => ({
    Tool: audience.tool.name,
    Command: audience.tool.command,
    Principal: audience.principal,
    Question: questionOf(disarm(prompt)),
  });
  return {
    onPrompt(prompt, signal) {
      if (!ask) return Promise.resolve({ action: "unavailable" });
      log.info("Tool call {Tool} ({Command}) by {Principal} asks its user: {Question}", {
        ...fields(prompt),
      });
      return ask(disarm(prompt), signal);
    },
    onPromptEnd(record) {
      log.info("Tool call {Tool} ({Command}) by {Principal}, question {Question}: {Outcome}.", {
        ...fields(record.prompt),
        Outcome: outcomeOf(record),
      });
    },
  };
}

/**
 * What makes a prompt's text safe to show: PowerShell's questions quote the caller's arguments (a
 * confirmation's target is the caller's `Path`), and a line break, a direction override or an
 * invisible character there could make the question read as something else ("…\nsvc: this one is
 * safe"). Every argument string holding such characters is shown escaped wherever it appears;
 * invisible and direction-changing characters, which PowerShell's own text never has, everywhere;
 * and a confirmation's line breaks past its first (ShouldProcess's text has one, between its
 * question and its operation), since a command may change the caller's text before it quotes it
 * (a path resolved, trimmed). Field names stay as they are: the answer is keyed by them.
 */
function disarming(parameters: Record<string, unknown>): (prompt: WorkerPrompt) => WorkerPrompt {
  const risky = new Map<string, string>();
  const stack: unknown[] = [parameters];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === "string") {
      if (UNSEEN.test(value) && value.length > 0) risky.set(value, escaped(value));
    } else if (value !== null && typeof value === "object") {
      stack.push(...Object.values(value as Record<string, unknown>));
    }
  }
  const shown = (text: string) => {
    let out = text;
    for (const [raw, safe] of risky) out = out.replaceAll(raw, safe);
    return out.replace(INVISIBLE, (c) => `\`u{${c.codePointAt(0)!.toString(16)}}`);
  };
  const oneBreak = (text: string) => {
    const first = text.indexOf("\n");
    return first < 0
      ? text
      : text.slice(0, first + 1) + text.slice(first + 1).replace(/[\r\n]/g, (c) => escaped(c));
  };
  return (prompt) => ({
    ...prompt,
    caption: escaped(shown(prompt.caption)),
    message: prompt.kind === "confirm" ? oneBreak(shown(prompt.message)) : shown(prompt.message),
    ...(prompt.choices
      ? { choices: prompt.choices.map((c) => ({ label: shown(c.label), help: shown(c.help) })) }
      : {}),
    ...(prompt.fields
      ? { fields: prompt.fields.map((f) => ({ ...f, label: shown(f.label), help: shown(f.help) })) }
      : {}),
  });
}

/** The text a user is shown for `prompt` (for a refused one, what the command asked and why). */
function questionOf(prompt: WorkerPrompt): string {
  if (prompt.kind === "refused") return `${prompt.command ?? "The command"} ${prompt.message}`;
  return toElicitation(prompt).params.message;
}

const OUTCOMES: Record<PromptRecord["action"], string> = {
  accept: "accepted",
  decline: "declined",
  cancel: "cancelled",
  timeout: "timed out",
  unavailable: "not asked (the client cannot ask its user)",
  refused: "not asked, or its answer not usable: the command was stopped",
};

function outcomeOf(record: PromptRecord): string {
  const chosen = record.chosen?.join(", ");
  const outcome = record.action === "accept" && chosen
    ? `answered ${chosen}`
    : OUTCOMES[record.action];
  return record.by === "caller" ? `${outcome} by the caller, ahead of the question` : outcome;
}

/** Labels of a confirmation that go ahead; any other answer is said in the result. */
const GOING_AHEAD = new Set(["Yes", "Yes to All"]);

/** Options of {@linkcode promptNotes}. */
export interface PromptNoteOptions {
  /** The call was stopped by its last prompt's answer (`interrupted: "prompt"`). */
  stopped: boolean;
  /** The time for each answer, in ms (`ShellConfiguration:UserInputTimeout`). */
  userInputTimeoutMs: number;
  /** The key deciding who may answer, named when nobody could be asked. */
  answeredBySetting: string;
  /** Why nobody could be asked. @default "this client cannot ask its user" */
  whyNobodyAsks?: string;
  /** What the command did: "was stopped", or "was not run" for svc's own question. */
  ending?: string;
  /** The call's bound arguments, to quote each question as its user was shown it. @default none */
  parameters?: Record<string, unknown>;
}

/**
 * What a result says about its call's prompts, for both of its halves: each confirmation answered
 * otherwise than Yes ("The user answered No to: …"), and why the last one stopped the call ("The
 * user declined: …; the command was stopped").
 */
export function promptNotes(records: PromptRecord[], options: PromptNoteOptions): string[] {
  const shown = disarming(options.parameters ?? {});
  const notes: string[] = [];
  for (const record of records) {
    const label = record.chosen?.[0];
    if (
      record.action === "accept" && record.prompt.kind === "confirm" && label !== undefined &&
      !GOING_AHEAD.has(label)
    ) {
      const who = record.by === "caller" ? "The caller" : "The user";
      notes.push(`${who} answered ${label} to: ${questionOf(shown(record.prompt))}`);
    }
  }
  const last = records.at(-1);
  if (options.stopped && last && last.action !== "accept") {
    notes.push(stopNote(last, questionOf(shown(last.prompt)), options));
  }
  return notes;
}

function stopNote(record: PromptRecord, question: string, options: PromptNoteOptions): string {
  const ending = `the command ${options.ending ?? "was stopped"}`;
  switch (record.action) {
    case "decline":
      return `The user declined: ${question}; ${ending}`;
    case "cancel":
      return `The user cancelled: ${question}; ${ending}`;
    case "timeout":
      return `No answer came within ${
        options.userInputTimeoutMs / 1000
      } s (ShellConfiguration:UserInputTimeout) to: ${question}; ${ending}`;
    case "refused":
      return `${question}, so ${ending}`;
    default:
      return `The command asked its user: ${question}; ${
        options.whyNobodyAsks ?? "this client cannot ask its user"
      }, so ${ending}; only an operator can let callers answer for the user (${options.answeredBySetting})`;
  }
}

/** `structuredContent.stopped` of a call its last prompt stopped. */
export function stoppedValue(records: PromptRecord[]): "declined" | "cancelled" | "unanswered" {
  const action = records.at(-1)?.action;
  return action === "decline" ? "declined" : action === "cancel" ? "cancelled" : "unanswered";
}

/**
 * Asks svc's own question before a `ConfirmBeforeRun` call runs, within `UserInputTimeout`.
 * Returns null when the user answered Yes (the call runs), else the result of the call that did not
 * run: an answer of No is said without an error, any other outcome is an error.
 */
export async function confirmRun(
  prompts: CallPrompts,
  call: { tool: ToolDescriptor; parameters: Record<string, unknown>; signal: AbortSignal },
  options: Pick<PromptNoteOptions, "userInputTimeoutMs" | "answeredBySetting" | "whyNobodyAsks">,
): Promise<CallToolResult | null> {
  const prompt = runQuestion(call.tool, call.parameters);
  const timer = AbortSignal.timeout(options.userInputTimeoutMs);
  const signal = AbortSignal.any([call.signal, timer]);
  let answer: PromptAnswer;
  try {
    answer = await prompts.onPrompt(prompt, signal);
  } catch {
    answer = { action: "cancel" };
  }
  if (timer.aborted) answer = { action: "timeout" };
  const chosen = answer.action === "accept"
    ? (answer.choices ?? []).map((i) => RUN_CHOICES[i]).filter((l) => l !== undefined)
    : undefined;
  const record: PromptRecord = {
    prompt,
    action: answer.action === "accept" && chosen?.length !== 1 ? "decline" : answer.action,
    ...(chosen ? { chosen } : {}),
  };
  prompts.onPromptEnd(record);
  if (record.action === "accept" && chosen?.[0] === "Yes") return null;
  if (record.action === "accept") {
    const note = `The user answered No to: ${questionOf(prompt)}; the command was not run`;
    return {
      content: [{ type: "text", text: note }],
      structuredContent: { output: [], notes: [note] },
    };
  }
  const [note] = promptNotes([record], {
    ...options,
    stopped: true,
    ending: "was not run",
    parameters: call.parameters,
  });
  return {
    content: [{ type: "text", text: note! }],
    structuredContent: { output: [], notes: [note!], stopped: stoppedValue([record]) },
    isError: true,
  };
}
