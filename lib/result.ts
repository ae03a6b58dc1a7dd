/**
 * Shapes what a worker returned into an MCP `CallToolResult`: the pipeline output as JSON text plus
 * `structuredContent`, PowerShell error records as an `isError` result that says what failed,
 * warnings and information records alongside, and the `MaxResultBytes` cap with an explicit notice.
 *
 * @module
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { ToolDescriptor } from "./catalog.ts";
import { WorkerError } from "./errors.ts";
import type { ErrorInfo, InvokeOutcome } from "./worker_protocol.ts";

/** Options of {@linkcode toCallToolResult}. */
export interface ShapeOptions {
  /** Largest output text in bytes. @default 1048576 (`ShellConfiguration:MaxResultBytes`) */
  maxResultBytes: number;
  /** The call's time limit in ms, quoted when it ran out. */
  timeoutMs: number;
}

const encoder = new TextEncoder();

/** Builds the MCP result of a finished (or stopped) call. */
export function toCallToolResult(
  tool: ToolDescriptor,
  outcome: InvokeOutcome,
  options: ShapeOptions,
): CallToolResult {
  const { result, interrupted } = outcome;
  const { errors, stderr } = splitNativeStderr(result.errors);
  const structured: Record<string, unknown> = {};
  const { text, kept, truncated } = fitOutput(result.output, options.maxResultBytes);
  structured.output = kept;
  if (truncated) structured.truncated = truncated;
  if (result.warnings.length > 0) structured.warnings = result.warnings;
  if (result.information.length > 0) structured.information = result.information;
  if (result.verbose.length > 0) structured.verbose = result.verbose;
  if (stderr.length > 0) structured.stderr = stderr;
  if (errors.length > 0) structured.errors = errors;

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
    ...result.warnings.map((w) => `WARNING: ${w}`),
    ...result.information.map((i) => `INFO: ${i.message}`),
    ...stderr.map((line) => `STDERR: ${line}`),
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

/** Builds the `isError` result of a call that failed before or outside PowerShell. */
export function failureResult(tool: ToolDescriptor | null, message: string): CallToolResult {
  void tool;
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

/** Serializes output; over the cap, keeps whole items that fit and cuts the text with a notice. */
function fitOutput(output: unknown[], maxBytes: number): {
  text: string;
  kept: unknown[];
  truncated: { bytes: number; limit: number; items: number; keptItems: number } | null;
} {
  const text = JSON.stringify(output);
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return { text, kept: output, truncated: null };
  let used = 2;
  const kept: unknown[] = [];
  for (const item of output) {
    const size = encoder.encode(JSON.stringify(item) ?? "null").length + 1;
    if (used + size > maxBytes) break;
    used += size;
    kept.push(item);
  }
  // Cut on a UTF-8 character boundary.
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  const cut = new TextDecoder().decode(bytes.subarray(0, end));
  const notice =
    `\n[svc: output truncated: ${bytes.length} bytes exceed ShellConfiguration:MaxResultBytes (${maxBytes}); ${kept.length} of ${output.length} item(s) kept in structuredContent]`;
  return {
    text: cut + notice,
    kept,
    truncated: {
      bytes: bytes.length,
      limit: maxBytes,
      items: output.length,
      keptItems: kept.length,
    },
  };
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
