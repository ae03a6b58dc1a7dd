// The SvcFixture module as the stand-in worker serves it: metadata hand-derived from
// tests/fixtures/SvcFixture/SvcFixture.psm1 as real pwsh's Get-Command / Get-Help report it, and
// the same behaviour. Change both files together (see tests/support/README.md).

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Binding } from "./fake_pwsh_binding.ts";
import { resolveSessionPath } from "./fake_pwsh_builtins.ts";
import {
  allParameterSets,
  type CommandDef,
  type CommandHelp,
  type ParamDef,
  type SetMembership,
} from "./fake_pwsh_metadata.ts";
import {
  type ErrorInfo,
  errorRecord,
  PSCredential,
  PSCustomObject,
  PSEnum,
  PSSwitch,
  type PSValue,
  TerminatingError,
  thrownString,
} from "./fake_pwsh_model.ts";
import type { InvokeContext, ServedCommand } from "./fake_pwsh_runtime.ts";

export const fixtureModuleName = "SvcFixture";
export const fixtureModuleVersion = "1.2.0";

/** Absolute path of SvcFixture.psm1 (information records name it as their source). */
export const fixturePsm1Path = fileURLToPath(
  new URL("../fixtures/SvcFixture/SvcFixture.psm1", import.meta.url),
);

/**
 * `Import-Module -Name <m>` for the fixture: the bare name, or a path whose last segment is
 * SvcFixture, SvcFixture.psd1 or SvcFixture.psm1. Returns the module's path (PSModuleInfo.Path is
 * the root module, the .psm1) or null for any other module.
 */
export function fixtureModulePath(requested: string, location: string): string | null {
  const trimmed = requested.replace(/[\\/]+$/, "");
  const last = trimmed.split(/[\\/]/).pop() ?? "";
  const lower = last.toLowerCase();
  if (trimmed.toLowerCase() === "svcfixture" && !/[\\/]/.test(trimmed)) return fixturePsm1Path;
  if (lower === "svcfixture") return join(resolve(location, trimmed), "SvcFixture.psm1");
  if (lower === "svcfixture.psd1" || lower === "svcfixture.psm1") {
    return join(dirname(resolve(location, trimmed)), "SvcFixture.psm1");
  }
  return null;
}

let psm1Lines: string[] | null | undefined;

/**
 * Where an error raised inside a fixture function points in SvcFixture.psm1: the first line of
 * `functionName` that contains `marker` (InvocationInfo.ScriptLineNumber / OffsetInLine / Line),
 * and the matching ScriptStackTrace line. Null when the file cannot be read.
 */
function psm1Site(
  functionName: string,
  marker: string,
): Pick<ErrorInfo, "position" | "scriptStackTrace"> {
  if (psm1Lines === undefined) {
    try {
      psm1Lines = readFileSync(fixturePsm1Path, "utf8").split(/\r?\n/);
    } catch {
      psm1Lines = null;
    }
  }
  const lines = psm1Lines;
  const start = lines?.findIndex((l) => l.startsWith(`function ${functionName} `)) ?? -1;
  const index = start === -1 ? -1 : lines!.findIndex((l, i) => i > start && l.includes(marker));
  if (!lines || index === -1) return { position: null, scriptStackTrace: null };
  const text = lines[index] as string;
  return {
    position: {
      scriptName: fixturePsm1Path,
      line: index + 1,
      column: text.indexOf(marker) + 1,
      text,
    },
    scriptStackTrace: `at ${functionName}, ${fixturePsm1Path}: line ${index + 1}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Metadata

const optional: SetMembership = { mandatory: false, position: null };

function everySet(
  position: number | null = null,
  mandatory = false,
): Record<string, SetMembership> {
  return { [allParameterSets]: { mandatory, position } };
}

function fn(
  name: string,
  params: ParamDef[],
  help: CommandHelp,
  options: {
    setNames?: string[];
    defaultParameterSet?: string;
    supportsShouldProcess?: boolean;
    outputTypes?: string[];
  } = {},
): CommandDef {
  return {
    name,
    commandType: "Function",
    module: fixtureModuleName,
    moduleVersion: fixtureModuleVersion,
    setNames: options.setNames ?? [allParameterSets],
    defaultParameterSet: options.defaultParameterSet ?? null,
    supportsShouldProcess: options.supportsShouldProcess ?? false,
    outputTypes: options.outputTypes ?? [],
    params,
    help,
    errorIdSuffix: name,
  };
}

const consoleColors = [
  "Black",
  "DarkBlue",
  "DarkGreen",
  "DarkCyan",
  "DarkRed",
  "DarkMagenta",
  "DarkYellow",
  "Gray",
  "DarkGray",
  "Blue",
  "Green",
  "Cyan",
  "Red",
  "Magenta",
  "Yellow",
  "White",
];

const getFixtureItem = fn(
  "Get-FixtureItem",
  [
    {
      name: "Name",
      type: "System.String[]",
      sets: { ByName: { mandatory: true, position: 0 } },
      aliases: ["ItemName"],
      helpMessage: "One or more item names.",
    },
    { name: "Id", type: "System.Int32[]", sets: { ById: { mandatory: true, position: null } } },
    {
      name: "Kind",
      type: "System.String",
      sets: { [allParameterSets]: optional },
      validateSet: ["File", "Folder", "Link"],
      validationOrder: ["set"],
    },
  ],
  {
    synopsis: "Returns fixture items by name or by id.",
    description: "Outputs one object per name or id with the properties Name, Id and Kind. " +
      "Used by the svc tests to check parameter sets.",
    parameters: {
      Name: "One or more item names; each item gets its 1-based index as Id.",
      Id: "One or more item ids; each item is named item<id>.",
      Kind: "The kind reported for every item.",
    },
  },
  { setNames: ["ByName", "ById"], defaultParameterSet: "ByName" },
);

// No Position and no ParameterSetName anywhere: automatic positions in declaration order,
// skipping the switch.
const testFixtureBinding = fn(
  "Test-FixtureBinding",
  [
    { name: "Text", type: "System.String", sets: everySet(0) },
    {
      name: "Count",
      type: "System.Int32",
      sets: everySet(1),
      validateRange: { min: 1, max: 10 },
      validationOrder: ["range"],
    },
    { name: "Big", type: "System.Int64", sets: everySet(2) },
    { name: "Ratio", type: "System.Double", sets: everySet(3) },
    { name: "Flag", type: "System.Boolean", sets: everySet(4) },
    { name: "Force", type: "System.Management.Automation.SwitchParameter", sets: everySet() },
    { name: "Color", type: "System.ConsoleColor", sets: everySet(5), enumValues: consoleColors },
    {
      name: "Names",
      type: "System.String[]",
      sets: everySet(6),
      validateCount: { min: 1, max: 3 },
      validationOrder: ["count"],
    },
    { name: "Numbers", type: "System.Int32[]", sets: everySet(7) },
    { name: "Options", type: "System.Collections.Hashtable", sets: everySet(8) },
    {
      name: "Code",
      type: "System.String",
      sets: everySet(9),
      validateLength: { min: 2, max: 5 },
      validatePattern: "^[A-Z]+$",
      // Declared [ValidateLength][ValidatePattern]: the attribute nearest the variable runs first.
      validationOrder: ["pattern", "length"],
    },
    {
      name: "Mode",
      type: "System.String",
      sets: everySet(10),
      validateSet: ["Fast", "Slow"],
      validationOrder: ["set"],
    },
  ],
  {
    synopsis: "Reports how each argument was bound.",
    description: "Outputs one object per bound parameter (common parameters excluded), sorted " +
      "by name, with the parameter name, the .NET type of the bound value and the value.",
    parameters: {
      Text: "A string.",
      Count: "An integer from 1 to 10.",
      Big: "A 64-bit integer.",
      Ratio: "A double.",
      Flag: "A Boolean (not a switch).",
      Force: "A switch.",
      Color: "A console color (an enum).",
      Names: "One to three strings.",
      Numbers: "An array of integers.",
      Options: "A hashtable.",
      Code: "Two to five capital letters.",
      Mode: "Fast or Slow.",
    },
  },
  { supportsShouldProcess: true },
);

const testFixtureCredential = fn(
  "Test-FixtureCredential",
  [{
    name: "Credential",
    type: "System.Management.Automation.PSCredential",
    sets: everySet(0, true),
  }],
  {
    synopsis: "Reports the user name and password length of a credential.",
    description: "Outputs one object with the properties UserName and PasswordLength. Used by " +
      "the svc tests to check credential parameters.",
    parameters: { Credential: "The credential to inspect." },
  },
);

const invokeFixtureExit = fn(
  "Invoke-FixtureExit",
  [{ name: "Code", type: "System.Int32", sets: everySet(0) }],
  {
    synopsis: "Ends the worker process at once.",
    description: "Calls [Environment]::Exit with the given code, so the process exits without " +
      "answering. Used by the svc tests to check crash handling.",
    parameters: { Code: "The process exit code." },
  },
);

const writeFixtureConsole = fn("Write-FixtureConsole", [], {
  synopsis: "Writes to the process console and to the host.",
  description: "Writes a line that looks like a protocol frame to standard output, a line to " +
    "standard error and a Write-Host message, then outputs console-done.",
  parameters: {},
});

const readFixtureStdin = fn("Read-FixtureStdin", [], {
  synopsis: "Reads one line from the process's standard input.",
  description: "Outputs stdin-eof when standard input is at end of file, else stdin: followed " +
    "by the line read.",
  parameters: {},
});

const getFixtureLargeResult = fn(
  "Get-FixtureLargeResult",
  [{ name: "Kilobytes", type: "System.Int32", sets: everySet(0, true) }],
  {
    synopsis: "Returns one large string.",
    description: "Outputs a single string of Kilobytes times 1024 x characters.",
    parameters: { Kilobytes: "The size of the string in units of 1024 characters." },
  },
  { outputTypes: ["System.String"] },
);

const invokeFixtureError = fn(
  "Invoke-FixtureError",
  [
    { name: "Message", type: "System.String", sets: everySet(0, true) },
    { name: "Terminating", type: "System.Management.Automation.SwitchParameter", sets: everySet() },
  ],
  {
    synopsis: "Writes an error or throws one.",
    description: "Without -Terminating writes a non-terminating error and then outputs " +
      "after-error; with -Terminating throws the message.",
    parameters: {
      Message: "The error message.",
      Terminating: "Throw instead of writing a non-terminating error.",
    },
  },
);

const writeFixtureStreams = fn("Write-FixtureStreams", [], {
  synopsis: "Writes to the warning, information and verbose streams.",
  description: "Writes one warning, one information record tagged fixture and one verbose " +
    "message, then outputs streams-done.",
  parameters: {},
});

const readFixturePrompt = fn("Read-FixturePrompt", [], {
  synopsis: "Prompts the user for a value.",
  description: "Calls Read-Host with a prompt, which fails at once in a host without user " +
    "interaction.",
  parameters: {},
});

const getFixtureGreeting = fn(
  "Get-FixtureGreeting",
  [{ name: "Name", type: "System.String", sets: everySet(0, true) }],
  {
    synopsis: "Returns a greeting for a name.",
    description: "Builds a friendly greeting. Used by the svc tests to check descriptions.",
    parameters: { Name: "The name to greet." },
  },
  { outputTypes: ["System.String"] },
);

const invokeFixtureStuck = fn(
  "Invoke-FixtureStuck",
  [
    { name: "Seconds", type: "System.Int32", sets: everySet(0, true) },
    {
      name: "PidFile",
      type: "System.String",
      sets: everySet(1, true),
      validateNotNullOrEmpty: true,
      validationOrder: ["notNullOrEmpty"],
    },
  ],
  {
    synopsis: "Starts a child process and blocks in a call that Stop cannot interrupt.",
    description: "Starts a child process that sleeps for 300 seconds, writes its process id to " +
      "PidFile, then blocks the pipeline thread for Seconds seconds.",
    parameters: {
      Seconds: "How long to block.",
      PidFile: "The file that receives the child's process id.",
    },
  },
);

// ---------------------------------------------------------------------------------------------
// Behaviour

function object(...properties: Array<[string, PSValue]>): PSCustomObject {
  return new PSCustomObject(properties);
}

function listOf(value: PSValue | undefined): PSValue[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

function runGetFixtureItem(ctx: InvokeContext, args: Binding) {
  const kind = args.string("Kind") ?? "File";
  if (args.setName === "ByName") {
    listOf(args.get("Name")).forEach((name, index) => {
      ctx.writeOutput(object(["Name", name], ["Id", index + 1], ["Kind", kind]));
    });
  } else {
    for (const id of listOf(args.get("Id"))) {
      ctx.writeOutput(object(["Name", `item${id}`], ["Id", id], ["Kind", kind]));
    }
  }
}

/** `$PSCmdlet.ShouldProcess(target)` from a function: -WhatIf says no, -Confirm cannot prompt. */
function shouldProcess(
  ctx: InvokeContext,
  args: Binding,
  command: string,
  target: string,
): boolean {
  if (ctx.whatIf) return false;
  if (args.flag("Confirm")) {
    const prompt = "A command that prompts the user failed because the host program or the " +
      "command type does not support user interaction. The host was attempting to request " +
      `confirmation with the following message: Performing the operation "${command}" on ` +
      `target "${target}".`;
    // The HostException surfaces as a MethodInvocationException from the method call, which is
    // statement-terminating inside the function: an error record, and the function goes on.
    ctx.writeError({
      ...errorRecord({
        message: `Exception calling "ShouldProcess" with "1" argument(s): "${prompt}"`,
        errorId: "HostException",
        category: "NotSpecified",
        exceptionType: "System.Management.Automation.MethodInvocationException",
      }),
      ...psm1Site(command, "$PSCmdlet.ShouldProcess("),
    });
    return false;
  }
  return true;
}

function runTestFixtureBinding(ctx: InvokeContext, args: Binding) {
  if (!shouldProcess(ctx, args, "Test-FixtureBinding", "fixture")) return;
  const own = new Set(testFixtureBinding.params.map((p) => p.name.toLowerCase()));
  const bound = [...args.bound.values()]
    .filter((b) => own.has(b.name.toLowerCase()))
    .sort((a, b) => a.name.localeCompare(b.name, "en", { sensitivity: "base" }));
  for (const b of bound) {
    if (b.value === null) {
      // `$value.GetType()` on $null fails that statement only.
      ctx.writeError({
        ...nullMethodCall(),
        ...psm1Site("Test-FixtureBinding", "$value.GetType()"),
      });
      continue;
    }
    const shown = b.value instanceof PSSwitch
      ? b.value.isPresent
      : b.value instanceof PSEnum
      ? b.value.name
      : b.value;
    ctx.writeOutput(object(["Parameter", b.name], ["Type", b.type], ["Value", shown]));
  }
}

function nullMethodCall(): ErrorInfo {
  return errorRecord({
    message: "You cannot call a method on a null-valued expression.",
    errorId: "InvokeMethodOnNull",
    category: "InvalidOperation",
    exceptionType: "System.Management.Automation.RuntimeException",
  });
}

function runTestFixtureCredential(ctx: InvokeContext, args: Binding) {
  const credential = args.get("Credential");
  if (!(credential instanceof PSCredential)) return;
  ctx.writeOutput(
    object(["UserName", credential.userName], ["PasswordLength", credential.password.length]),
  );
}

function runInvokeFixtureExit(_ctx: InvokeContext, args: Binding) {
  // [Environment]::Exit ends the process at once, without answering the request.
  Deno.exit(args.number("Code") ?? 3);
}

function runWriteFixtureConsole(ctx: InvokeContext) {
  const encoder = new TextEncoder();
  Deno.stdout.writeSync(encoder.encode('{"id":1,"ok":true,"result":{}}\n'));
  Deno.stderr.writeSync(encoder.encode("console noise\n"));
  // Write-Host is an information record tagged PSHOST; with no host UI nothing is printed.
  ctx.writeInformation("host noise", ["PSHOST"], fixturePsm1Path);
  ctx.writeOutput("console-done");
}

/** Bytes read from stdin past the last line handed out ([Console]::In buffers the same way). */
let stdinBuffer = new Uint8Array(0);
let stdinEnded = false;

async function readStdinLine(): Promise<string | null> {
  const chunk = new Uint8Array(4096);
  while (true) {
    const newline = stdinBuffer.indexOf(10);
    if (newline !== -1) {
      const line = stdinBuffer.subarray(0, newline);
      stdinBuffer = stdinBuffer.slice(newline + 1);
      return new TextDecoder().decode(line).replace(/\r$/, "");
    }
    if (stdinEnded) {
      if (stdinBuffer.length === 0) return null;
      const rest = new TextDecoder().decode(stdinBuffer);
      stdinBuffer = new Uint8Array(0);
      return rest;
    }
    let n: number | null = null;
    try {
      n = await Deno.stdin.read(chunk);
    } catch {
      n = null;
    }
    if (n === null) {
      stdinEnded = true;
    } else {
      const merged = new Uint8Array(stdinBuffer.length + n);
      merged.set(stdinBuffer);
      merged.set(chunk.subarray(0, n), stdinBuffer.length);
      stdinBuffer = merged;
    }
  }
}

async function runReadFixtureStdin(ctx: InvokeContext) {
  // A blocking console read: a stop request does not interrupt it.
  const line = await readStdinLine();
  ctx.writeOutput(line === null ? "stdin-eof" : `stdin:${line}`);
}

function runGetFixtureLargeResult(ctx: InvokeContext, args: Binding) {
  const kilobytes = args.number("Kilobytes") ?? 0;
  ctx.writeOutput("x".repeat(Math.max(0, kilobytes) * 1024));
}

function runInvokeFixtureError(ctx: InvokeContext, args: Binding) {
  const message = args.string("Message") ?? "";
  if (args.flag("Terminating")) {
    const thrown = thrownString(message);
    throw new TerminatingError({
      ...thrown.info,
      ...psm1Site("Invoke-FixtureError", "throw $Message"),
    });
  }
  // Write-Error called from the function: the FQID gets `,Invoke-FixtureError` appended, and the
  // record carries the caller's $MyInvocation, which has no script position under AddCommand.
  ctx.writeError(errorRecord({
    message,
    errorId: "FixtureError,Invoke-FixtureError",
    category: "InvalidArgument",
    exceptionType: "Microsoft.PowerShell.Commands.WriteErrorException",
    target: "fixture-target",
  }));
  ctx.writeOutput("after-error");
}

function runWriteFixtureStreams(ctx: InvokeContext) {
  ctx.writeWarning("fixture warning");
  ctx.writeInformation("fixture info", ["fixture"], fixturePsm1Path);
  ctx.writeVerbose("fixture verbose");
  ctx.writeOutput("streams-done");
}

function runReadFixturePrompt(ctx: InvokeContext) {
  // Read-Host's HostException is statement-terminating inside the function: the caller sees a
  // non-terminating error record (POWERSHELL-NOTES §7).
  ctx.writeError({
    ...errorRecord({
      message: "A command that prompts the user failed because the host program or the command " +
        "type does not support user interaction. The host was attempting to request " +
        "confirmation with the following message: Favourite colour",
      errorId: "HostFunctionNotImplemented,Microsoft.PowerShell.Commands.ReadHostCommand",
      category: "NotImplemented",
      exceptionType: "System.Management.Automation.Host.HostException",
    }),
    ...psm1Site("Read-FixturePrompt", "Read-Host "),
  });
}

function runGetFixtureGreeting(ctx: InvokeContext, args: Binding) {
  ctx.writeOutput(`Hello, ${args.string("Name") ?? ""}!`);
}

async function runInvokeFixtureStuck(ctx: InvokeContext, args: Binding) {
  // The child is an ordinary (not detached) child of this process, like Start-Process's.
  const child = new Deno.Command("sleep", {
    args: ["300"],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  child.unref();
  child.status.catch(() => {});
  const pidFile = resolveSessionPath(ctx.session, args.string("PidFile") ?? "");
  writeFileSync(pidFile, `${child.pid}\n`);
  // [Threading.Thread]::Sleep: PowerShell's Stop cannot interrupt it, so the stop is ignored.
  const seconds = args.number("Seconds") ?? 0;
  await new Promise((done) => setTimeout(done, Math.max(0, seconds) * 1000));
}

const testSimpleText = fn(
  "Test-SimpleText",
  [],
  {
    synopsis: "Returns a fixed line of text (the conformance suite's test_simple_text).",
    description: null,
    parameters: {},
  },
  { outputTypes: ["System.String"] },
);

const testErrorHandling = fn(
  "Test-ErrorHandling",
  [],
  {
    synopsis: "Always fails (the conformance suite's test_error_handling).",
    description: null,
    parameters: {},
  },
);

function runTestSimpleText(ctx: InvokeContext) {
  ctx.writeOutput("This is a simple text response for testing.");
}

function runTestErrorHandling() {
  const message = "This tool intentionally returns an error for testing";
  throw new TerminatingError({
    ...thrownString(message).info,
    ...psm1Site("Test-ErrorHandling", "throw "),
  });
}

const getFixtureRecord = fn(
  "Get-FixtureRecord",
  [{ name: "Count", type: "System.Int32", sets: everySet(0) }],
  {
    synopsis: "Returns fixture records with a default display property set.",
    description: "Outputs Count records of type SvcFixture.Record with the properties Name, Id, " +
      "Size, Owner, Path and Notes; Name, Id and Size are the default display set. Used by the " +
      "svc tests to check output projection.",
    parameters: { Count: "How many records to return." },
  },
);

function runGetFixtureRecord(ctx: InvokeContext, args: Binding) {
  const count = args.get("Count") ?? 1;
  for (let i = 1; i <= Number(count); i++) {
    ctx.writeOutput(
      new PSCustomObject(
        [
          ["Name", `record${i}`],
          ["Id", i],
          ["Size", i * 1024],
          ["Owner", "svc"],
          ["Path", `/records/record${i}`],
          ["Notes", "x".repeat(200)],
        ],
        "SvcFixture.Record",
        ["Name", "Id", "Size"],
      ),
    );
  }
}

const writeFixtureProgress = fn(
  "Write-FixtureProgress",
  [
    { name: "Steps", type: "System.Int32", sets: everySet(0) },
    { name: "DelayMilliseconds", type: "System.Int32", sets: everySet(1) },
  ],
  {
    synopsis: "Reports progress in steps, then returns done.",
    description: "Writes one progress record per step (activity Fixture work, status step i of " +
      "Steps, PercentComplete i * 100 / Steps), waits DelayMilliseconds after each, completes " +
      "the activity and outputs done. Used by the svc tests to check progress notifications.",
    parameters: {
      Steps: "How many progress records to write.",
      DelayMilliseconds: "How long to wait after each record.",
    },
  },
);

async function runWriteFixtureProgress(ctx: InvokeContext, args: Binding) {
  const steps = Number(args.get("Steps") ?? 3);
  const delay = Number(args.get("DelayMilliseconds") ?? 250);
  for (let i = 1; i <= steps; i++) {
    const percent = Math.round(i * 100 / steps);
    ctx.writeProgress({
      activity: "Fixture work",
      status: `step ${i} of ${steps}`,
      operation: null,
      percent,
      completed: false,
    });
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  ctx.writeProgress({
    activity: "Fixture work",
    status: "Completed",
    operation: null,
    percent: -1,
    completed: true,
  });
  ctx.writeOutput("done");
}

export function fixtureCommands(): ServedCommand[] {
  const served = (def: CommandDef, run: ServedCommand["run"]): ServedCommand => ({
    def,
    fromFixture: true,
    run,
  });
  return [
    served(getFixtureItem, runGetFixtureItem),
    served(testFixtureBinding, runTestFixtureBinding),
    served(testFixtureCredential, runTestFixtureCredential),
    served(invokeFixtureExit, runInvokeFixtureExit),
    served(writeFixtureConsole, runWriteFixtureConsole),
    served(readFixtureStdin, runReadFixtureStdin),
    served(getFixtureLargeResult, runGetFixtureLargeResult),
    served(invokeFixtureError, runInvokeFixtureError),
    served(writeFixtureStreams, runWriteFixtureStreams),
    served(readFixturePrompt, runReadFixturePrompt),
    served(getFixtureGreeting, runGetFixtureGreeting),
    served(getFixtureRecord, runGetFixtureRecord),
    served(writeFixtureProgress, runWriteFixtureProgress),
    served(invokeFixtureStuck, runInvokeFixtureStuck),
    served(testSimpleText, runTestSimpleText),
    served(testErrorHandling, runTestErrorHandling),
  ];
}
