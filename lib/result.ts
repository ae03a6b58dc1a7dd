/**
 * Shapes what a worker returned into an MCP `CallToolResult`: the pipeline output as JSON text plus
 * `structuredContent`, PowerShell error records as an `isError` result that says what failed,
 * warnings and information records alongside, and the `MaxResultBytes` cap with an explicit notice.
 *
 * @module
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { ToolDescriptor } from "./tool_descriptor.ts";
import { WorkerError } from "./errors.ts";
import type {
  ErrorInfo,
  InvokeOutcome,
  InvokeResult,
  OutputShape,
  StreamName,
} from "./worker_protocol.ts";
import { fitOutput } from "./result_fit.ts";

/** Options of {@linkcode toCallToolResult}. */
export interface ShapeOptions {
  /** Largest output text in bytes. @default 1048576 (`ShellConfiguration:MaxResultBytes`) */
  maxResultBytes: number;
  /** The call's time limit in ms, quoted when it ran out. */
  timeoutMs: number;
}

/**
 * Output JSON up to this many characters is carried both as text and in `structuredContent.output`
 * (the MCP spec asks for both); above it, only the text block carries it and
 * `structuredContent.outputInText` says so.
 */
export const STRUCTURED_OUTPUT_LIMIT = 65_536;

const strings = { type: "array", items: { type: "string" } };

/** `outputSchema` of every PowerShell tool: the shape of `structuredContent` on success. */
export const RESULT_OUTPUT_SCHEMA = {
  type: "object",
  properties: {
    output: { type: "array", description: "Pipeline output, one item per object written." },
    outputInText: {
      type: "boolean",
      description: "true when the output is too large to repeat here: read it from the text block.",
    },
    truncated: {
      type: "object",
      description: "Present when the output exceeded MaxResultBytes: sizes and items kept.",
    },
    droppedRecords: {
      type: "object",
      description:
        "Present when the call's error and other records exceeded MaxResultBytes: records left out per stream.",
    },
    omitted: {
      type: "object",
      description:
        "Properties left out per type, requested properties that matched nothing, whether _MaxResults cut the output, and how many items' computed columns the time bound left null.",
    },
    warnings: strings,
    verbose: strings,
    information: { type: "array" },
    stderr: strings,
    errors: { type: "array" },
    stopped: { type: "string", enum: ["timeout", "cancelled"] },
  },
} as const;

/** Names listed in a text note before it says how many more there are. */
const LISTED_NAMES = 12;

/** Builds the MCP result of a finished (or stopped) call. */
export function toCallToolResult(
  tool: ToolDescriptor,
  outcome: InvokeOutcome,
  options: ShapeOptions,
): CallToolResult {
  const { result, interrupted } = outcome;
  const { errors, stderr } = splitNativeStderr(result.errors);
  const structured: Record<string, unknown> = {};
  const { text, kept, truncated } = fitOutput(
    result.output,
    options.maxResultBytes,
    result.outputCut ?? null,
  );
  // Past this size the text block alone carries the output, so a large answer is not sent twice.
  if (text.length <= STRUCTURED_OUTPUT_LIMIT) structured.output = kept;
  else structured.outputInText = true;
  if (truncated) structured.truncated = truncated;
  const omitted = omissions(result.shape);
  if (omitted) structured.omitted = omitted;
  if (result.warnings.length > 0) structured.warnings = result.warnings;
  if (result.information.length > 0) structured.information = result.information;
  if (result.verbose.length > 0) structured.verbose = result.verbose;
  if (stderr.length > 0) structured.stderr = stderr;
  if (errors.length > 0) structured.errors = errors;
  const dropped = droppedNote(result.droppedRecords, options.maxResultBytes);
  if (dropped) structured.droppedRecords = result.droppedRecords;

  const content: CallToolResult["content"] = [];
  let isError = false;
  if (interrupted) {
    isError = true;
    structured.stopped = interrupted;
    content.push({
      type: "text",
      text: interrupted === "timeout"
        ? `Command '${tool.command}' timed out after ${
          seconds(options.timeoutMs)
        } (ShellConfiguration:ToolCallTimeout) and was stopped`
        : `Command '${tool.command}' was cancelled and stopped`,
    });
  } else if (errors.length > 0) {
    isError = true;
    content.push({ type: "text", text: describeErrors(tool.command, errors) });
  }
  content.push({ type: "text", text });
  const notes = [
    ...(result.shape ? shapeNotes(result.shape) : []),
    ...result.warnings.map((w) => `WARNING: ${w}`),
    ...result.information.map((i) => `INFO: ${i.message}`),
    ...stderr.map((line) => `STDERR: ${line}`),
    ...(dropped ? [dropped] : []),
  ];
  if (notes.length > 0) content.push({ type: "text", text: notes.join("\n") });
  const shaped: CallToolResult = { content, structuredContent: structured };
  if (isError) shaped.isError = true;
  return shaped;
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

/** Builds the `isError` result of a call that failed before or outside PowerShell. */
export function failureResult(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
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
    const prompt = isPromptError(e)
      ? " (svc workers are non-interactive: pass every value as an argument instead of being prompted)"
      : "";
    return `- ${e.message}${prompt}${facts.length > 0 ? ` [${facts.join("; ")}]` : ""}`;
  });
  const count = errors.length === 1 ? "an error" : `${errors.length} errors`;
  return `Command '${command}' reported ${count}:\n${lines.join("\n")}`;
}

function isPromptError(error: ErrorInfo): boolean {
  return (error.fullyQualifiedErrorId ?? "").startsWith("HostFunction") ||
    /does not support user interaction|NonInteractive mode/.test(error.message);
}
