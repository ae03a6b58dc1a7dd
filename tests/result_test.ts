import assert from "node:assert/strict";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { WorkerError } from "../lib/errors.ts";
import {
  describeErrors,
  failureResult,
  STRUCTURED_OUTPUT_LIMIT,
  toCallToolResult,
  workerFailureMessage,
} from "../lib/result.ts";
import type { ErrorInfo, InvokeResult } from "../lib/worker_protocol.ts";
import { toolOf } from "./support/descriptors.ts";

const tool = toolOf("get_thing", [], { command: "Get-Thing" });
const OPTIONS = { maxResultBytes: 1_048_576, timeoutMs: 300_000 };

function result(extra: Partial<InvokeResult> = {}): InvokeResult {
  return {
    output: [],
    errors: [],
    warnings: [],
    verbose: [],
    debug: [],
    information: [],
    hadErrors: false,
    stopped: false,
    durationMs: 1,
    ...extra,
  };
}

function record(message: string, extra: Partial<ErrorInfo> = {}): ErrorInfo {
  return {
    message,
    fullyQualifiedErrorId: null,
    category: null,
    targetName: null,
    targetType: null,
    exceptionType: null,
    scriptStackTrace: null,
    terminating: false,
    position: null,
    ...extra,
  };
}

/** `structuredContent` of a result, as a plain record. */
function structured(shaped: CallToolResult): Record<string, unknown> {
  return shaped.structuredContent as Record<string, unknown>;
}

function texts(shaped: CallToolResult): string[] {
  return shaped.content.map((block) => (block as { text: string }).text);
}

Deno.test("toCallToolResult() gives output as JSON text and structuredContent, with nothing else when there is nothing else", () => {
  const shaped = toCallToolResult(tool, {
    result: result({ output: [{ Id: 1 }, "two"] }),
    interrupted: null,
  }, OPTIONS);
  assert.deepEqual(shaped, {
    content: [{ type: "text", text: '[{"Id":1},"two"]' }],
    structuredContent: { output: [{ Id: 1 }, "two"] },
  });
});

Deno.test("toCallToolResult() carries large output in the text block only, and says so", () => {
  const output = ["x".repeat(STRUCTURED_OUTPUT_LIMIT)];
  const shaped = toCallToolResult(tool, { result: result({ output }), interrupted: null }, OPTIONS);
  assert.deepEqual(shaped.structuredContent, { outputInText: true });
  assert.equal(texts(shaped)[0], JSON.stringify(output));
});

Deno.test("toCallToolResult() reports error records as an error result naming the command, output still given", () => {
  const shaped = toCallToolResult(tool, {
    result: result({
      output: [1],
      errors: [record("Cannot find path '/nope'", {
        category: "ObjectNotFound",
        targetName: "/nope",
        fullyQualifiedErrorId: "PathNotFound,Get-Thing",
      })],
      hadErrors: true,
    }),
    interrupted: null,
  }, OPTIONS);
  assert.equal(shaped.isError, true);
  assert.deepEqual(texts(shaped), [
    "Command 'Get-Thing' reported an error:\n- Cannot find path '/nope' [category ObjectNotFound; target /nope; error id PathNotFound,Get-Thing]",
    "[1]",
  ]);
  assert.equal((structured(shaped).errors as ErrorInfo[]).length, 1);
});

Deno.test("toCallToolResult() turns a native program's stderr lines into stderr, not errors", () => {
  const shaped = toCallToolResult(tool, {
    result: result({
      errors: [
        record("warning: something", { fullyQualifiedErrorId: "NativeCommandError" }),
        record("more", { fullyQualifiedErrorId: "NativeCommandErrorMessage" }),
        record("fatal", { fullyQualifiedErrorId: "NativeCommandError", terminating: true }),
      ],
    }),
    interrupted: null,
  }, OPTIONS);
  assert.equal(shaped.isError, true, "a terminating one is still an error");
  assert.deepEqual(structured(shaped).stderr, ["warning: something", "more"]);
  assert.equal((structured(shaped).errors as ErrorInfo[])[0]!.message, "fatal");
  assert.equal(texts(shaped).at(-1), "STDERR: warning: something\nSTDERR: more");

  const quiet = toCallToolResult(tool, {
    result: result({ errors: [record("note", { fullyQualifiedErrorId: "NativeCommandError" })] }),
    interrupted: null,
  }, OPTIONS);
  assert.equal(quiet.isError, undefined, "stderr alone is no failure");
});

Deno.test("toCallToolResult() says a call timed out after its limit, or was cancelled", () => {
  const timedOut = toCallToolResult(tool, { result: result(), interrupted: "timeout" }, {
    ...OPTIONS,
    timeoutMs: 1500,
  });
  assert.equal(timedOut.isError, true);
  assert.equal(structured(timedOut).stopped, "timeout");
  assert.equal(
    texts(timedOut)[0],
    "Command 'Get-Thing' timed out after 1.5 s and was stopped: that is the limit ShellConfiguration:ToolCallTimeout sets, so raise it there if the command needs longer",
  );
  const whole = toCallToolResult(tool, { result: result(), interrupted: "timeout" }, {
    ...OPTIONS,
    timeoutSetting: "ShellConfiguration:CommandOverrides:Get-Thing:ToolCallTimeout",
  });
  assert.match(
    texts(whole)[0]!,
    /timed out after 300 s .*limit ShellConfiguration:CommandOverrides:Get-Thing:ToolCallTimeout sets/,
  );
  const cancelled = toCallToolResult(tool, { result: result(), interrupted: "cancelled" }, OPTIONS);
  assert.equal(texts(cancelled)[0], "Command 'Get-Thing' was cancelled and stopped");
  assert.equal(structured(cancelled).stopped, "cancelled");
});

Deno.test("toCallToolResult() adds warnings, information and shaping notes in one text block", () => {
  const omitted = Array.from({ length: 14 }, (_, i) => `P${i}`);
  const shaped = toCallToolResult(tool, {
    result: result({
      warnings: ["careful"],
      information: [{ message: "fyi", tags: [], source: null }],
      verbose: ["detail"],
      shape: {
        moreResults: true,
        types: [
          { type: "System.Thing", shown: ["Id"], omitted },
          { type: "System.Other", shown: [], omitted: ["A"] },
          { type: "System.Full", shown: ["B"], omitted: [] },
        ],
        unknownProperties: ["Nope", "Ni*"],
      },
    }),
    interrupted: null,
  }, OPTIONS);
  assert.equal(shaped.isError, undefined);
  assert.deepEqual(texts(shaped)[1]!.split("\n"), [
    "SHOWN: System.Thing objects show Id; left out: P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, and 2 more. Name properties in _RequestedProperties, or set _AllProperties to true.",
    "SHOWN: System.Other objects show no properties; left out: A. Name properties in _RequestedProperties, or set _AllProperties to true.",
    "SHOWN: no output object has a property matching 'Nope', 'Ni*'.",
    "SHOWN: more results exist than _MaxResults allowed; raise _MaxResults to see them.",
    "WARNING: careful",
    "INFO: fyi",
  ]);
  const content = structured(shaped);
  assert.deepEqual(content.omitted, {
    properties: [
      { type: "System.Thing", shown: ["Id"], omitted },
      { type: "System.Other", shown: [], omitted: ["A"] },
    ],
    unknownProperties: ["Nope", "Ni*"],
    moreResults: true,
  });
  assert.deepEqual(content.verbose, ["detail"]);
  assert.equal(content.debug, undefined, "debug records are not passed on");
});

Deno.test("toCallToolResult() says which records the worker left out, and counts omitted names it did not list", () => {
  const shaped = toCallToolResult(tool, {
    result: result({
      errors: [record("first")],
      warnings: ["kept"],
      droppedRecords: { errors: 40, warnings: 7, verbose: 2 },
      shape: {
        moreResults: false,
        types: [{ type: "Wide", shown: ["A"], omitted: ["B", "C"], omittedCount: 900 }],
      },
    }),
    interrupted: null,
  }, OPTIONS);
  assert.equal(shaped.isError, true);
  assert.deepEqual(structured(shaped).droppedRecords, { errors: 40, warnings: 7, verbose: 2 });
  const notes = texts(shaped)[2]!.split("\n");
  assert.equal(
    notes[0],
    "SHOWN: Wide objects show A; left out: B, C, and 888 more. Name properties in _RequestedProperties, or set _AllProperties to true.",
  );
  assert.equal(
    notes[notes.length - 1],
    "[svc: 40 error, 7 warning and 2 verbose record(s) were left out: the call's records together exceeded ShellConfiguration:MaxResultBytes (1048576).]",
  );
  const none = toCallToolResult(tool, { result: result(), interrupted: null }, OPTIONS);
  assert.equal(structured(none).droppedRecords, undefined);
});

Deno.test("describeErrors() counts errors, gives their position and explains prompts", () => {
  const text = describeErrors("Read-Thing", [
    record("first", { position: { scriptName: "/s.ps1", line: 3, column: 7, text: null } }),
    record("second", { position: { scriptName: null, line: 1, column: 2, text: null } }),
    record("no position", { position: { scriptName: null, line: 0, column: 0, text: null } }),
    record("prompted", { fullyQualifiedErrorId: "HostFunctionNotImplemented" }),
    record("PowerShell is in NonInteractive mode. Read and Prompt functionality is not available."),
  ]);
  const hint =
    " (svc workers are non-interactive: pass every value as an argument instead of being prompted)";
  assert.deepEqual(text.split("\n"), [
    "Command 'Read-Thing' reported 5 errors:",
    "- first [at /s.ps1:3:7]",
    "- second [at <script>:1:2]",
    "- no position",
    `- prompted${hint} [error id HostFunctionNotImplemented]`,
    `- PowerShell is in NonInteractive mode. Read and Prompt functionality is not available.${hint}`,
  ]);
});

Deno.test("workerFailureMessage() explains an exited worker, passes worker errors on, and names the command otherwise", () => {
  assert.equal(
    workerFailureMessage(tool, new WorkerError("EXITED", "x", { exitCode: 137 })),
    "PowerShell worker exited with code 137 while running 'Get-Thing'; the next call gets a new worker (session state is lost)",
  );
  assert.equal(
    workerFailureMessage(tool, new WorkerError("TIMEOUT", "The worker did not answer")),
    "The worker did not answer",
  );
  assert.equal(
    workerFailureMessage(tool, new Error("socket closed")),
    "Calling 'Get-Thing' failed: socket closed",
  );
  assert.equal(workerFailureMessage(tool, "odd"), "Calling 'Get-Thing' failed: odd");
});

Deno.test("failureResult() is an error result with the message as its only text", () => {
  assert.deepEqual(failureResult("No such tool"), {
    content: [{ type: "text", text: "No such tool" }],
    isError: true,
  });
});
