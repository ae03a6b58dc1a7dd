/**
 * Shapes what a worker returned into an MCP `CallToolResult`: the pipeline output as JSON text plus
 * `structuredContent`, PowerShell error records as an `isError` result that says what failed,
 * warnings and information records alongside, and the `MaxResultBytes` cap with an explicit notice.
 * Clients differ in which half they show a model (docs/results.md), so each half says everything:
 * the output, what was cut or left out and how to ask for it, and why a call failed.
 *
 * @module
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { ToolDescriptor } from "./tool_descriptor.ts";
import { type ErrorInfo, WorkerError } from "./errors.ts";
import { DEFAULT_USER_INPUT_TIMEOUT_MS } from "./worker_prompts.ts";
import type { InvokeOutcome, InvokeResult, OutputShape, StreamName } from "./worker_protocol.ts";
import { fitOutput } from "./result_fit.ts";
import { promptNotes, stoppedValue } from "./prompt_policy.ts";
import { mediaOutput } from "./result_media.ts";

/** Options of {@linkcode toCallToolResult}. */
export interface ShapeOptions {
  /** Largest output text in bytes. @default 24576 (`ShellConfiguration:MaxResultBytes`) */
  maxResultBytes: number;
  /** The call's time limit in ms, quoted when it ran out. */
  timeoutMs: number;
  /** The key that set it, named when it ran out. @default "ShellConfiguration:ToolCallTimeout" */
  timeoutSetting?: string;
  /**
   * The caller named the properties (`_RequestedProperties`): which others each type left out is not
   * said, since the caller chose them. @default false
   */
  propertiesChosen?: boolean;
  /** The time for each answer of the user, in ms. @default 120000 (`ShellConfiguration:UserInputTimeout`) */
  userInputTimeoutMs?: number;
  /**
   * The key deciding who may answer the tool's prompts, named when nobody could be asked.
   * @default "ShellConfiguration:PromptsAnsweredBy"
   */
  answeredBySetting?: string;
  /** Why nobody could be asked. @default that the client declared no form elicitation */
  whyNobodyAsks?: string;
  /** The call's bound arguments, to quote its questions as the user was shown them. @default none */
  parameters?: Record<string, unknown>;
}

/**
 * Output JSON up to this many bytes is carried whole in the text block as well as in
 * `structuredContent.output`; above it (only under a `MaxResultBytes` raised above it) the text
 * block shows the items that fit, with a notice, so a client that reads both halves never reads a
 * large output twice, and one that reads only the text still gets valid JSON and the counts.
 */
export const TEXT_OUTPUT_LIMIT = 65_536;

const strings = { type: "array", items: { type: "string" } };

/**
 * `outputSchema` of every PowerShell tool: the two keys of `structuredContent` a model reads first.
 * The others (`truncated`, `omitted`, `errors`, `warnings`, `stopped`, ...) are present only when
 * they apply and `notes` says what they mean in sentences; docs/results.md lists them, and svc's
 * server instructions (`SERVER_INSTRUCTIONS`) describe them once for the whole list. Described per
 * tool, they were 1.1 KB of each tool's 2 KB in `tools/list`.
 */
export const RESULT_OUTPUT_SCHEMA = {
  type: "object",
  properties: { output: { type: "array" }, notes: strings },
} as const;

/**
 * What every tool shares, said once in the `initialize` result's `instructions` (clients such as
 * Claude Code put them beside the tool list) rather than in each tool: the shape of a result and
 * the arguments that shape output.
 */
export const SERVER_INSTRUCTIONS =
  "Each tool runs one PowerShell command. structuredContent.output holds one item per object the command wrote; notes says in sentences what the user answered to a question and what svc cut or left out and how to ask for it. truncated, omitted, errors, warnings, information, verbose, stderr, droppedRecords and stopped appear when they apply. Every tool also takes _RequestedProperties (the output properties to keep, names or wildcards; default: what PowerShell shows), _AllProperties (keep every property) and _MaxResults (stop after that many items).";

/**
 * The `_meta["anthropic/maxResultSizeChars"]` of every tool under a `MaxResultBytes` raised above
 * its default `defaultBytes`, else null. Claude Code keeps a result of up to about 25k tokens in
 * the conversation and writes a larger one to a file unless the tool declares its results may be
 * larger; a raised cap is the operator saying they may. The value is the most a result holds: the
 * output and the call's records, each within the cap (a character takes at least a byte).
 */
export function resultSizeHint(maxResultBytes: number, defaultBytes: number): number | null {
  return maxResultBytes > defaultBytes ? 2 * maxResultBytes : null;
}

/** Names listed in a text note before it says how many more there are. */
const LISTED_NAMES = 12;

/** Builds the MCP result of a finished (or stopped) call. */
export function toCallToolResult(
  tool: ToolDescriptor,
  outcome: InvokeOutcome,
  options: ShapeOptions,
): CallToolResult {
  const { result, interrupted } = outcome;
  const records = outcome.prompts ?? [];
  const byPrompt = interrupted === "prompt";
  const asked = promptNotes(records, {
    stopped: byPrompt,
    userInputTimeoutMs: options.userInputTimeoutMs ?? DEFAULT_USER_INPUT_TIMEOUT_MS,
    answeredBySetting: options.answeredBySetting ?? "ShellConfiguration:PromptsAnsweredBy",
    ...(options.whyNobodyAsks ? { whyNobodyAsks: options.whyNobodyAsks } : {}),
    ...(options.parameters ? { parameters: options.parameters } : {}),
  });
  const { errors, stderr } = splitNativeStderr(result.errors);
  const fitted = fitOutput(result.output, options.maxResultBytes, result.outputCut ?? null);
  const shape = options.propertiesChosen ? withoutTypeOmissions(result.shape) : result.shape;
  const dropped = droppedNote(result.droppedRecords, options.maxResultBytes);
  const stoppedText = interrupted === "timeout"
    ? `Command '${tool.command}' timed out after ${
      seconds(options.timeoutMs)
    } and was stopped: that is the limit ${
      options.timeoutSetting ?? "ShellConfiguration:ToolCallTimeout"
    } sets, so raise it there if the command needs longer`
    : byPrompt
    ? asked.at(-1) ?? `Command '${tool.command}' was stopped at a question to its user`
    : interrupted
    ? `Command '${tool.command}' was cancelled and stopped`
    : null;
  const shapeLines = shape ? shapeNotes(shape) : [];
  // The sentences both halves carry; the records themselves are fields of their own in each.
  const notes = [
    ...(byPrompt ? asked.slice(0, -1) : asked),
    ...(stoppedText ? [stoppedText] : []),
    ...(fitted.notice ? [fitted.notice] : []),
    ...shapeLines,
    ...(dropped ? [dropped] : []),
    ...(errors.some(isPromptError) ? [PROMPT_NOTE] : []),
    ...(errors.length > 0 && !failed(interrupted, errors, result.output.length)
      ? [
        `'${tool.command}' wrote ${errors.length} error record(s) and went on: the output is what it wrote besides them (the errors are listed with it)`,
      ]
      : []),
  ];

  // The blocks before the output's: the user's answers, then why the call stopped or its errors.
  const leading = (byPrompt ? asked.length - 1 : asked.length) +
    (stoppedText || errors.length > 0 ? 1 : 0);
  const media = result.media && result.media.length > 0
    ? mediaOutput(fitted.kept, {
      media: result.media,
      sent: result.output,
      maxResultBytes: options.maxResultBytes,
      declared: tool.outputMediaType,
      firstBlock: leading,
      text: (items) => outputText(JSON.stringify(items), items, null),
    })
    : null;

  const structured: Record<string, unknown> = { output: media ? media.output : fitted.kept };
  if (fitted.truncated) structured.truncated = fitted.truncated;
  const omitted = omissions(shape);
  if (omitted) structured.omitted = omitted;
  if (result.warnings.length > 0) structured.warnings = result.warnings;
  if (result.information.length > 0) structured.information = result.information;
  if (result.verbose.length > 0) structured.verbose = result.verbose;
  if (stderr.length > 0) structured.stderr = stderr;
  if (errors.length > 0) structured.errors = errors;
  if (dropped) structured.droppedRecords = result.droppedRecords;
  if (interrupted) structured.stopped = byPrompt ? stoppedValue(records) : interrupted;
  if (notes.length > 0) structured.notes = notes;

  const content: CallToolResult["content"] = [];
  // The user's answers first: a model must not read "No" as "nothing to do".
  for (const note of byPrompt ? asked.slice(0, -1) : asked) {
    content.push({ type: "text", text: note });
  }
  if (stoppedText) content.push({ type: "text", text: stoppedText });
  else if (errors.length > 0) {
    content.push({ type: "text", text: describeErrors(tool.command, errors) });
  }
  if (media) {
    content.push(...media.blocks);
    if (fitted.notice) content.push({ type: "text", text: fitted.notice });
  } else {
    content.push({ type: "text", text: outputText(fitted.json, fitted.kept, fitted.notice) });
  }
  const lines = [
    ...shapeLines,
    ...result.warnings.map((w) => `WARNING: ${w}`),
    ...result.information.map((i) => `INFO: ${i.message}`),
    ...result.verbose.map((v) => `VERBOSE: ${v}`),
    ...stderr.map((line) => `STDERR: ${line}`),
    ...(dropped ? [dropped] : []),
  ];
  if (lines.length > 0) content.push({ type: "text", text: lines.join("\n") });
  const shaped: CallToolResult = { content, structuredContent: structured };
  if (failed(interrupted, errors, result.output.length)) shaped.isError = true;
  return shaped;
}

/**
 * Whether a call failed, as `isError` says: it was stopped, a terminating error ended it, or it
 * wrote errors and nothing else. A command that writes an error for one item and goes on with the
 * others (a non-terminating `Write-Error`) succeeded for those: its result is not an error, and
 * says what went wrong beside its output.
 */
function failed(
  interrupted: InvokeOutcome["interrupted"],
  errors: ErrorInfo[],
  outputCount: number,
): boolean {
  if (interrupted) return true;
  return errors.some((e) => e.terminating) || (errors.length > 0 && outputCount === 0);
}

/**
 * The text block of the output (or of a run of it between media items): its JSON and the fitted
 * output's notice, or, past
 * {@linkcode TEXT_OUTPUT_LIMIT}, the items that fit it with a notice saying where the rest is.
 */
function outputText(json: string, kept: readonly unknown[], fittedNotice: string | null): string {
  const notice = fittedNotice ? `\n${fittedNotice}` : "";
  if (withinBytes(json, TEXT_OUTPUT_LIMIT)) return `${json}${notice}`;
  const view = fitOutput([...kept], TEXT_OUTPUT_LIMIT);
  const total = kept.length;
  const shown = view.truncated?.shortenedFirst
    ? "the first item, shortened"
    : `the first ${view.kept.length} of ${total} item(s)`;
  return `${view.json}\n[svc: this text shows ${shown}, to stay within ${TEXT_OUTPUT_LIMIT} bytes; structuredContent.output carries all ${total}.]${notice}`;
}

const encoder = new TextEncoder();

/** Whether `text` takes at most `limit` bytes of UTF-8, encoding it only when its length cannot say. */
function withinBytes(text: string, limit: number): boolean {
  // A UTF-16 unit takes one to three bytes, a surrogate pair four.
  if (text.length > limit) return false;
  if (text.length * 3 <= limit) return true;
  return encoder.encode(text).length <= limit;
}

/** What the caller's own choice of properties makes needless to say: the properties each type left out. */
function withoutTypeOmissions(shape: OutputShape | undefined): OutputShape | undefined {
  if (!shape?.types) return shape;
  const { types: _, ...rest } = shape;
  return rest;
}

/**
 * PowerShell hands each stderr line of a native program to a hosted runspace as an error record
 * (`NativeCommandError`, `NativeCommandErrorMessage`), yet since 7.2 such lines do not obey
 * `$ErrorActionPreference`, and a native program's success is its exit code: they are its
 * diagnostics, not failures. Reporting them as errors would make every `git` or `curl` call an
 * error, so they become `stderr` lines.
 */
function splitNativeStderr(records: ErrorInfo[]): { errors: ErrorInfo[]; stderr: string[] } {
  const errors: ErrorInfo[] = [];
  const stderr: string[] = [];
  for (const record of records) {
    const id = record.fullyQualifiedErrorId ?? "";
    if (
      !record.terminating && (id === "NativeCommandError" || id === "NativeCommandErrorMessage")
    ) {
      stderr.push(record.message);
    } else {
      errors.push(record);
    }
  }
  return { errors, stderr };
}

const STREAM_WORDS: Record<StreamName, string> = {
  errors: "error",
  warnings: "warning",
  information: "information",
  verbose: "verbose",
  debug: "debug",
};

/** The note saying which records the worker left out (protocol §4.4), or null when none. */
function droppedNote(
  dropped: InvokeResult["droppedRecords"],
  maxResultBytes: number,
): string | null {
  const counts = Object.entries(dropped ?? {}).filter(([, count]) => count && count > 0)
    .map(([stream, count]) => `${count} ${STREAM_WORDS[stream as StreamName] ?? stream}`);
  if (counts.length === 0) return null;
  const list = counts.length === 1
    ? counts[0]
    : `${counts.slice(0, -1).join(", ")} and ${counts[counts.length - 1]}`;
  return `[svc: ${list} record(s) were left out: the call's records together exceeded ShellConfiguration:MaxResultBytes (${maxResultBytes}).]`;
}

/** `structuredContent.omitted`: what projection and `_MaxResults` left out; null when nothing. */
function omissions(shape: OutputShape | undefined): Record<string, unknown> | null {
  if (!shape) return null;
  const out: Record<string, unknown> = {};
  const types = (shape.types ?? []).filter((t) => t.omitted.length > 0);
  if (types.length > 0) out.properties = types;
  if (shape.unknownProperties && shape.unknownProperties.length > 0) {
    out.unknownProperties = shape.unknownProperties;
  }
  if (shape.moreResults) out.moreResults = true;
  if (shape.uncomputed) out.uncomputed = shape.uncomputed;
  return Object.keys(out).length > 0 ? out : null;
}

/** One line per omission, telling the model how to ask for what was left out. */
function shapeNotes(shape: OutputShape): string[] {
  const notes: string[] = [];
  for (const { type, shown, omitted, omittedCount } of shape.types ?? []) {
    if (omitted.length === 0) continue;
    const listed = omitted.slice(0, LISTED_NAMES).join(", ");
    // Under the call's limits the worker lists at most 256 names and counts the rest.
    const total = omittedCount ?? omitted.length;
    const more = total > LISTED_NAMES ? `, and ${total - LISTED_NAMES} more` : "";
    notes.push(
      `SHOWN: ${type} objects show ${
        shown.join(", ") || "no properties"
      }; left out: ${listed}${more}. Name properties in _RequestedProperties, or set _AllProperties to true.`,
    );
  }
  if (shape.unknownProperties && shape.unknownProperties.length > 0) {
    notes.push(
      `SHOWN: no output object has a property matching ${
        shape.unknownProperties.map((p) => `'${p}'`).join(", ")
      }.`,
    );
  }
  if (shape.moreResults) {
    notes.push(
      "SHOWN: more results exist than _MaxResults allowed; raise _MaxResults to see them.",
    );
  }
  if (shape.uncomputed) {
    notes.push(
      `SHOWN: the computed columns of ${shape.uncomputed} item(s) are null: computing them took more than the 1 second a call allows; ask for fewer items with _MaxResults, or for properties with _RequestedProperties.`,
    );
  }
  return notes;
}

/**
 * Builds the `isError` result of a call that failed before or outside PowerShell: the sentence in the
 * text and in `structuredContent.notes`, for clients that show a model only the one or the other.
 */
export function failureResult(message: string): CallToolResult {
  return {
    content: [{ type: "text", text: message }],
    structuredContent: { notes: [message] },
    isError: true,
  };
}

/** Explains a worker failure during a call in one sentence. */
export function workerFailureMessage(tool: ToolDescriptor, error: unknown): string {
  if (error instanceof WorkerError) {
    if (error.code === "EXITED") {
      return `PowerShell worker exited with code ${error.exitCode} while running '${tool.command}'; the next call gets a new worker (session state is lost)`;
    }
    return error.message;
  }
  return `Calling '${tool.command}' failed: ${
    error instanceof Error ? error.message : String(error)
  }`;
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** One readable paragraph per error record: message, category, target, id and script position. */
export function describeErrors(command: string, errors: ErrorInfo[]): string {
  const lines = errors.map((e) => {
    const facts: string[] = [];
    if (e.category) facts.push(`category ${e.category}`);
    if (e.targetName) facts.push(`target ${e.targetName}`);
    if (e.fullyQualifiedErrorId) facts.push(`error id ${e.fullyQualifiedErrorId}`);
    if (e.position && e.position.line > 0) {
      facts.push(
        `at ${e.position.scriptName ?? "<script>"}:${e.position.line}:${e.position.column}`,
      );
    }
    const prompt = isPromptError(e) ? ` (${PROMPT_NOTE})` : "";
    return `- ${e.message}${prompt}${facts.length > 0 ? ` [${facts.join("; ")}]` : ""}`;
  });
  const count = errors.length === 1 ? "an error" : `${errors.length} errors`;
  return `Command '${command}' reported ${count}:\n${lines.join("\n")}`;
}

const PROMPT_NOTE = "the command asked for input where nobody can answer it";

/**
 * A prompt that failed without the worker's own sentence (lib/host/cs/ErrorInfo.cs writes one for
 * the prompts it sees, which says so already: the note is given once).
 */
function isPromptError(error: ErrorInfo): boolean {
  if (/but nobody can answer a prompt there/.test(error.message)) return false;
  return (error.fullyQualifiedErrorId ?? "").startsWith("HostFunction") ||
    /does not support user interaction|NonInteractive mode/.test(error.message);
}
