import assert from "node:assert/strict";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { type ErrorInfo, WorkerError } from "../lib/errors.ts";
import {
  describeErrors,
  failureResult,
  resultSizeHint,
  TEXT_OUTPUT_LIMIT,
  toCallToolResult,
  workerFailureMessage,
} from "../lib/result.ts";
import type { InvokeResult } from "../lib/worker_protocol.ts";
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

Deno.test("toCallToolResult() carries the whole output in structuredContent, and in the text only what fits 64 KiB, saying where the rest is", () => {
  // 100 items of about 1 KB: 100 KB, within a raised cap of 1 MiB but past TEXT_OUTPUT_LIMIT.
  const output = Array.from({ length: 100 }, (_, i) => ({ Id: i, Text: "x".repeat(1000) }));
  const shaped = toCallToolResult(tool, { result: result({ output }), interrupted: null }, OPTIONS);
  assert.deepEqual(
    structured(shaped).output,
    output,
    "a client reading structuredContent gets it all",
  );
  const [json, notice] = texts(shaped)[0]!.split("\n");
  const shown = JSON.parse(json!) as unknown[];
  assert.ok(new TextEncoder().encode(json).length <= TEXT_OUTPUT_LIMIT);
  assert.deepEqual(
    shown,
    output.slice(0, shown.length),
    "the text shows whole items from the start",
  );
  assert.equal(
    notice,
    `[svc: this text shows the first ${shown.length} of 100 item(s), to stay within 65536 bytes; structuredContent.output carries all 100.]`,
  );
  // Output that fits is carried whole in both: a client reading either loses nothing.
  const small = toCallToolResult(tool, {
    result: result({ output: output.slice(0, 10) }),
    interrupted: null,
  }, OPTIONS);
  assert.equal(texts(small)[0], JSON.stringify(output.slice(0, 10)));
  assert.deepEqual(structured(small).output, output.slice(0, 10));
});

Deno.test("toCallToolResult() says what MaxResultBytes cut in both halves: the text's notice is structuredContent's note", () => {
  const output = Array.from({ length: 50 }, (_, i) => ({ Id: i, Text: "y".repeat(100) }));
  const shaped = toCallToolResult(tool, {
    result: result({
      output,
      outputCut: { items: 900, bytes: 90_000, shortenedFirst: false, stopped: true },
    }),
    interrupted: null,
  }, { ...OPTIONS, maxResultBytes: 2048 });
  const content = structured(shaped);
  const truncated = content.truncated as Record<string, unknown>;
  assert.equal(truncated.stopped, true);
  assert.equal(truncated.items, 900);
  const notice = texts(shaped)[0]!.split("\n")[1]!;
  assert.match(
    notice,
    /^\[svc: output truncated: at least 90000 bytes exceed ShellConfiguration:MaxResultBytes \(2048\); the first \d+ item\(s\) are kept whole, and the command was stopped after 900, as no more could be kept\. Ask for less with _MaxResults or _RequestedProperties\.\]$/,
  );
  assert.deepEqual(content.notes, [notice]);
  assert.equal((content.output as unknown[]).length, truncated.keptItems);
});

Deno.test("toCallToolResult() reports error records naming the command; only a failed call is isError", () => {
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
  // A non-terminating error beside output: reported, and the call is not a failure.
  assert.equal(shaped.isError, undefined);
  assert.deepEqual(texts(shaped), [
    "Command 'Get-Thing' reported an error:\n- Cannot find path '/nope' [category ObjectNotFound; target /nope; error id PathNotFound,Get-Thing]",
    "[1]",
  ]);
  assert.equal((structured(shaped).errors as ErrorInfo[]).length, 1);
  assert.match(String(structured(shaped).notes), /wrote 1 error record\(s\) and went on/);
  // Errors and nothing else, or a terminating one: the call failed.
  const only = (errors: ErrorInfo[], output: unknown[]) =>
    toCallToolResult(tool, {
      result: result({ output, errors, hadErrors: true }),
      interrupted: null,
    }, OPTIONS)
      .isError;
  assert.equal(only([record("gone")], []), true);
  assert.equal(only([record("stop", { terminating: true })], [1]), true);
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
  assert.deepEqual(structured(timedOut).notes, [texts(timedOut)[0]]);
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
    "VERBOSE: detail",
  ]);
  const content = structured(shaped);
  assert.deepEqual(content.notes, texts(shaped)[1]!.split("\n").slice(0, 4));
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

Deno.test("describeErrors() counts errors, gives their position and says when nobody could answer a prompt", () => {
  const text = describeErrors("Read-Thing", [
    record("first", { position: { scriptName: "/s.ps1", line: 3, column: 7, text: null } }),
    record("second", { position: { scriptName: null, line: 1, column: 2, text: null } }),
    record("no position", { position: { scriptName: null, line: 0, column: 0, text: null } }),
    record("prompted", { fullyQualifiedErrorId: "HostFunctionNotImplemented" }),
    record("PowerShell is in NonInteractive mode. Read and Prompt functionality is not available."),
    record(
      'Read-Host asked for user input (prompt "Name") at: Read-Host Name, but nobody can answer a prompt there: svc asks a user only while a tool call runs.',
      { fullyQualifiedErrorId: "HostFunctionNotImplemented" },
    ),
  ]);
  const hint = " (the command asked for input where nobody can answer it)";
  assert.deepEqual(text.split("\n"), [
    "Command 'Read-Thing' reported 6 errors:",
    "- first [at /s.ps1:3:7]",
    "- second [at <script>:1:2]",
    "- no position",
    `- prompted${hint} [error id HostFunctionNotImplemented]`,
    `- PowerShell is in NonInteractive mode. Read and Prompt functionality is not available.${hint}`,
    '- Read-Host asked for user input (prompt "Name") at: Read-Host Name, but nobody can answer a prompt there: svc asks a user only while a tool call runs. [error id HostFunctionNotImplemented]',
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

Deno.test("toCallToolResult() leaves the properties each type left out unsaid when the caller named the properties", () => {
  const shape = {
    moreResults: false,
    types: [{ type: "System.Thing", shown: ["Id"], omitted: ["A", "B"] }],
    unknownProperties: ["Nope"],
  };
  const chosen = toCallToolResult(tool, {
    result: result({ output: [{ Id: 1 }], shape }),
    interrupted: null,
  }, { ...OPTIONS, propertiesChosen: true });
  assert.deepEqual(texts(chosen), [
    '[{"Id":1}]',
    "SHOWN: no output object has a property matching 'Nope'.",
  ]);
  assert.deepEqual(structured(chosen).omitted, { unknownProperties: ["Nope"] });
  assert.deepEqual(structured(chosen).notes, [
    "SHOWN: no output object has a property matching 'Nope'.",
  ]);
  const display = toCallToolResult(tool, {
    result: result({ output: [{ Id: 1 }], shape }),
    interrupted: null,
  }, OPTIONS);
  assert.match(texts(display)[1]!, /^SHOWN: System\.Thing objects show Id; left out: A, B\./);
});

Deno.test("toCallToolResult() says in structuredContent too that nobody could answer a prompt", () => {
  const shaped = toCallToolResult(tool, {
    result: result({
      errors: [record("x", { fullyQualifiedErrorId: "HostFunctionNotImplemented" })],
    }),
    interrupted: null,
  }, OPTIONS);
  assert.deepEqual(structured(shaped).notes, [
    "the command asked for input where nobody can answer it",
  ]);
});

Deno.test("failureResult() is an error result with the message as its text and its note", () => {
  assert.deepEqual(failureResult("No such tool"), {
    content: [{ type: "text", text: "No such tool" }],
    structuredContent: { notes: ["No such tool"] },
    isError: true,
  });
});

Deno.test("resultSizeHint() is given only above the default cap, as the output and records it allows", () => {
  assert.equal(resultSizeHint(24_576, 24_576), null);
  assert.equal(resultSizeHint(1024, 24_576), null);
  assert.equal(resultSizeHint(1_048_576, 24_576), 2_097_152);
});
