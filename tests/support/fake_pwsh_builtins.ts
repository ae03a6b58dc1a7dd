// The PowerShell 7.4 built-in cmdlets the stand-in serves. Their metadata comes from the
// documented structure (tests/fixtures/cmdlets-7.4.json) through cmdletFromData; their
// behaviour is a small, faithful subset described in tests/support/README.md.

import { statSync } from "node:fs";
import { homedir } from "node:os";
import { resolve } from "node:path";
import type { Binding } from "./fake_pwsh_binding.ts";
import { formatDotNet, formatUnix } from "./fake_pwsh_dates.ts";
import { type CmdletData, type CmdletExtras, cmdletFromData } from "./fake_pwsh_metadata.ts";
import {
  errorRecord,
  hasWildcard,
  PSCustomObject,
  PSDateTime,
  PSEnum,
  PSException,
  PSTimeSpan,
  psToString,
  type PSValue,
  TerminatingError,
  wildcardToRegExp,
} from "./fake_pwsh_model.ts";
import type { InvokeContext, ServedCommand, Session, Variable } from "./fake_pwsh_runtime.ts";

const utilityVersion = "7.0.0.0";
const managementVersion = "7.0.0.0";

function extras(
  implementingType: string,
  moduleVersion: string,
  synopsis: string,
  outputTypes: string[],
  overrides?: CmdletExtras["overrides"],
): CmdletExtras {
  return {
    implementingType: `Microsoft.PowerShell.Commands.${implementingType}`,
    moduleVersion,
    synopsis,
    outputTypes,
    ...(overrides ? { overrides } : {}),
  };
}

export function builtinCommands(data: CmdletData): ServedCommand[] {
  const cmdlet = (name: string, x: CmdletExtras, run: ServedCommand["run"]): ServedCommand => ({
    def: cmdletFromData(data, name, x),
    fromFixture: false,
    run,
  });
  return [
    cmdlet(
      "Get-Date",
      extras("GetDateCommand", utilityVersion, "Gets the current date and time.", [
        "System.DateTime",
        "System.String",
      ]),
      getDate,
    ),
    cmdlet(
      "Start-Sleep",
      extras(
        "StartSleepCommand",
        utilityVersion,
        "Suspends the activity in a script or session for the specified period of time.",
        [],
        {
          // [ValidateRange(0.0, (double)(int.MaxValue / 1000))] and [ValidateRange(0, int.MaxValue)].
          Seconds: { validateRange: { min: 0, max: 2147483 }, validationOrder: ["range"] },
          Milliseconds: { validateRange: { min: 0, max: 2147483647 }, validationOrder: ["range"] },
        },
      ),
      startSleep,
    ),
    cmdlet(
      "Write-Output",
      extras(
        "WriteOutputCommand",
        utilityVersion,
        "Writes the specified objects to the pipeline.",
        [],
        {
          // [AllowNull][AllowEmptyCollection], ValueFromRemainingArguments (WriteOutputCommand.cs).
          InputObject: {
            allowNull: true,
            allowEmptyCollection: true,
            valueFromRemainingArguments: true,
            bindAsGiven: true,
          },
        },
      ),
      writeOutput,
    ),
    cmdlet(
      "Write-Error",
      extras("WriteErrorCommand", utilityVersion, "Writes an object to the error stream.", []),
      (ctx, args) => writeErrorCommand(ctx, args, null),
    ),
    cmdlet(
      "Set-Variable",
      extras(
        "SetVariableCommand",
        utilityVersion,
        "Sets the value of a variable. Creates the variable if one with the requested name does " +
          "not exist.",
        ["System.Management.Automation.PSVariable"],
        { Value: { allowNull: true } },
      ),
      setVariable,
    ),
    cmdlet(
      "Get-Variable",
      extras(
        "GetVariableCommand",
        utilityVersion,
        "Gets the variables in the current console.",
        ["System.Management.Automation.PSVariable"],
      ),
      getVariable,
    ),
    cmdlet(
      "Get-Location",
      extras(
        "GetLocationCommand",
        managementVersion,
        "Gets information about the current working location or a location stack.",
        ["System.Management.Automation.PathInfo", "System.Management.Automation.PathInfoStack"],
      ),
      getLocation,
    ),
    cmdlet(
      "Set-Location",
      extras(
        "SetLocationCommand",
        managementVersion,
        "Sets the current working location to a specified location.",
        ["System.Management.Automation.PathInfo", "System.Management.Automation.PathInfoStack"],
      ),
      setLocation,
    ),
  ];
}

// ---------------------------------------------------------------------------------------------

function getDate(ctx: InvokeContext, args: Binding) {
  const input = args.get("Date");
  const unix = args.number("UnixTimeSeconds");
  const date = input instanceof PSDateTime
    ? new Date(input.date.getTime())
    : unix !== undefined
    ? new Date(unix * 1000)
    : new Date();
  // -Year, -Month, ... replace one field of the local date each (GetDateCommand adds offsets).
  const setters: Array<[string, (n: number) => void]> = [
    ["Year", (n) => date.setFullYear(n)],
    ["Month", (n) => date.setMonth(n - 1)],
    ["Day", (n) => date.setDate(n)],
    ["Hour", (n) => date.setHours(n)],
    ["Minute", (n) => date.setMinutes(n)],
    ["Second", (n) => date.setSeconds(n)],
    ["Millisecond", (n) => date.setMilliseconds(n)],
  ];
  for (const [name, set] of setters) {
    const n = args.number(name);
    if (n !== undefined) set(n);
  }
  const value = new PSDateTime(date, args.flag("AsUTC"));
  const format = args.string("Format");
  const uformat = args.string("UFormat");
  if (format !== undefined) ctx.writeOutput(formatDotNet(value, format));
  else if (uformat !== undefined) ctx.writeOutput(formatUnix(value, uformat));
  else ctx.writeOutput(value);
}

async function startSleep(ctx: InvokeContext, args: Binding) {
  const duration = args.get("Duration");
  const milliseconds = args.setName === "Milliseconds"
    ? args.number("Milliseconds") ?? 0
    : args.setName === "FromTimeSpan"
    ? duration instanceof PSTimeSpan ? duration.milliseconds : 0
    : (args.number("Seconds") ?? 0) * 1000;
  await ctx.sleep(milliseconds);
}

function writeOutput(ctx: InvokeContext, args: Binding) {
  const input = args.get("InputObject") ?? null;
  // Arrays are enumerated one level, like WriteObject(InputObject, enumerateCollection: true).
  if (Array.isArray(input) && !args.flag("NoEnumerate")) input.forEach((v) => ctx.writeOutput(v));
  else ctx.writeOutput(input);
}

/**
 * Write-Error's record. At the top of a hosted pipeline the FQID is the error id alone; called
 * from a function it gets `,<function name>` appended (ErrorRecord.SetInvocationInfo).
 */
export function writeErrorCommand(ctx: InvokeContext, args: Binding, caller: string | null) {
  const exception = args.get("Exception");
  const message = args.string("Message") ??
    (exception instanceof PSException ? exception.message : "");
  const category = args.get("Category");
  const errorId = args.string("ErrorId") ??
    (exception instanceof PSException
      ? "System.Exception"
      : "Microsoft.PowerShell.Commands.WriteErrorException");
  const info = errorRecord({
    message,
    errorId: caller ? `${errorId},${caller}` : errorId,
    category: category instanceof PSEnum ? category.name : "NotSpecified",
    exceptionType: exception instanceof PSException
      ? "System.Exception"
      : "Microsoft.PowerShell.Commands.WriteErrorException",
    target: args.get("TargetObject") ?? null,
  });
  const targetName = args.string("CategoryTargetName");
  const targetType = args.string("CategoryTargetType");
  ctx.writeError({
    ...info,
    ...(targetName !== undefined ? { targetName } : {}),
    ...(targetType !== undefined ? { targetType } : {}),
  });
}

/** A PSVariable as ConvertTo-Json renders it. */
function variableObject(variable: Variable): PSCustomObject {
  return new PSCustomObject([
    ["Name", variable.name],
    ["Description", ""],
    ["Value", variable.value],
    [
      "Visibility",
      new PSEnum("System.Management.Automation.SessionStateEntryVisibility", "Public"),
    ],
    ["Module", null],
    ["ModuleName", ""],
    ["Options", new PSEnum("System.Management.Automation.ScopedItemOptions", "None")],
    ["Attributes", []],
  ]);
}

function stringList(value: PSValue | undefined): string[] {
  if (value === undefined || value === null) return [];
  return (Array.isArray(value) ? value : [value]).map(psToString);
}

function setVariable(ctx: InvokeContext, args: Binding) {
  const value = args.has("Value") ? args.get("Value") ?? null : null;
  if (ctx.whatIf) return;
  for (const name of stringList(args.get("Name"))) {
    if (args.flag("Confirm")) {
      // ShouldProcess must prompt, and the host has no UI: the cmdlet ends with a HostException.
      throw new TerminatingError(errorRecord({
        message: "A command that prompts the user failed because the host program or the " +
          "command type does not support user interaction. The host was attempting to request " +
          `confirmation with the following message: Performing the operation "Set variable" on ` +
          `target "Name: ${name} Value: ${psToString(value)}".`,
        errorId: "HostFunctionNotImplemented,Microsoft.PowerShell.Commands.SetVariableCommand",
        category: "NotImplemented",
        exceptionType: "System.Management.Automation.Host.HostException",
      }));
    }
    ctx.session.setVariable(name, value);
    if (args.flag("PassThru")) {
      ctx.writeOutput(variableObject(ctx.session.getVariable(name) as Variable));
    }
  }
}

function matchesAny(name: string, patterns: string[]): boolean {
  return patterns.some((p) => wildcardToRegExp(p).test(name));
}

function getVariable(ctx: InvokeContext, args: Binding) {
  const names = args.has("Name") ? stringList(args.get("Name")) : ["*"];
  const include = stringList(args.get("Include"));
  const exclude = stringList(args.get("Exclude"));
  const found: Variable[] = [];
  for (const name of names) {
    let matches: Variable[];
    if (hasWildcard(name)) {
      const pattern = wildcardToRegExp(name);
      matches = [...ctx.session.variables.values()]
        .filter((v) => pattern.test(v.name))
        .sort((a, b) => a.name.localeCompare(b.name, "en", { sensitivity: "base" }));
    } else {
      const variable = ctx.session.getVariable(name);
      if (!variable) {
        ctx.writeError(errorRecord({
          message: `Cannot find a variable with the name '${name}'.`,
          errorId: "VariableNotFound,Microsoft.PowerShell.Commands.GetVariableCommand",
          category: "ObjectNotFound",
          exceptionType: "System.Management.Automation.ItemNotFoundException",
          target: name,
        }));
        continue;
      }
      matches = [variable];
    }
    for (const v of matches) {
      if (include.length > 0 && !matchesAny(v.name, include)) continue;
      if (exclude.length > 0 && matchesAny(v.name, exclude)) continue;
      found.push(v);
    }
  }
  for (const v of found) ctx.writeOutput(args.flag("ValueOnly") ? v.value : variableObject(v));
}

/** A PathInfo; Drive and Provider are flattened to their names (see README "Differences"). */
function pathInfo(location: string): PSCustomObject {
  return new PSCustomObject([
    ["Drive", "/"],
    ["Provider", "Microsoft.PowerShell.Core\\FileSystem"],
    ["ProviderPath", location],
    ["Path", location],
  ]);
}

function getLocation(ctx: InvokeContext, args: Binding) {
  if (args.setName === "Stack") return;
  ctx.writeOutput(pathInfo(ctx.session.location));
}

export function resolveSessionPath(session: Session, path: string): string {
  const expanded = path === "~" || path.startsWith("~/") ? homedir() + path.slice(1) : path;
  return resolve(session.location, expanded);
}

function setLocation(ctx: InvokeContext, args: Binding) {
  if (args.setName === "Stack") return;
  const given = args.string("Path") ?? args.string("LiteralPath") ?? "~";
  const target = resolveSessionPath(ctx.session, given);
  let isDirectory = false;
  try {
    isDirectory = statSync(target).isDirectory();
  } catch {
    isDirectory = false;
  }
  if (!isDirectory) {
    ctx.writeError(errorRecord({
      message: `Cannot find path '${target}' because it does not exist.`,
      errorId: "PathNotFound,Microsoft.PowerShell.Commands.SetLocationCommand",
      category: "ObjectNotFound",
      exceptionType: "System.Management.Automation.ItemNotFoundException",
      target,
    }));
    return;
  }
  ctx.session.location = target;
  if (args.flag("PassThru")) ctx.writeOutput(pathInfo(target));
}
