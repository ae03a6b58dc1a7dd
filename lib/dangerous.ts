/**
 * Exposed commands that give a caller the power of svc's own account: running code of their
 * choosing, or writing, replacing or deleting files at paths of their choosing. svc offers what the
 * configuration names; this module only makes sure nobody exposes such a command without being told
 * (a Warning at start and in doctor, with the roles that can call it).
 *
 * A command is named when it is in {@linkcode KNOWN}, when one of its tool's arguments takes code or
 * a type to instantiate by name (`Command`, `ScriptBlock`, `TypeDefinition`, `ComObject`, …), or when
 * its verb writes (`New`, `Set`, `Out`, `Export`, `Remove`, …) and an argument takes a path. Script-block parameters themselves never
 * reach a tool (JSON cannot carry them, see `UNBINDABLE_TYPE` in `lib/catalog.ts`); the commands
 * that take one are in the list for when a set without one is offered.
 *
 * @module
 */
import type { ToolDescriptor } from "./tool_descriptor.ts";
import type { AuthSettings } from "./config_auth.ts";
import type { ShellSettings } from "./config.ts";
import { overrideOf } from "./config_overrides.ts";

const CODE = "can run arbitrary code";
const FILES = "can write or delete arbitrary files";

/** Commands known to run code or write files, with what they can do. */
const KNOWN: Record<string, string> = Object.fromEntries(
  [
    ...[
      "Invoke-Expression",
      "Invoke-Command",
      "Add-Type",
      "New-Object",
      "Start-Process",
      "Start-Job",
      "Start-ThreadJob",
      "Import-Module",
      "Invoke-Item",
      "ForEach-Object",
      "Where-Object",
      "New-Module",
      "Register-ObjectEvent",
      "Register-EngineEvent",
      "Register-WmiEvent",
      "Set-Alias",
      "New-Alias",
      "Trace-Command",
      "Measure-Command",
      "Invoke-CimMethod",
      "Invoke-WmiMethod",
      "Enter-PSSession",
      "New-PSSession",
      "Set-PSBreakpoint",
      "Invoke-RestMethod",
      "Invoke-WebRequest",
    ].map((name) => [name.toLowerCase(), CODE] as const),
    ...[
      "Set-Content",
      "Add-Content",
      "Out-File",
      "Clear-Content",
      "Export-Csv",
      "Export-Clixml",
      "Export-Alias",
      "Export-FormatData",
      "Export-ModuleMember",
      "Tee-Object",
      "New-Item",
      "Set-Item",
      "Copy-Item",
      "Move-Item",
      "Rename-Item",
      "Remove-Item",
      "Expand-Archive",
      "Compress-Archive",
      "Start-Transcript",
      "Save-Module",
      "Install-Module",
      "Save-Help",
      "Update-Help",
    ].map((name) => [name.toLowerCase(), FILES] as const),
  ],
);
// Invoke-RestMethod and Invoke-WebRequest write files too (-OutFile); code is the graver power.

/** Argument names that take code, or a type or COM class to instantiate. */
const CODE_ARGUMENT =
  /^(Command|Expression|Script|ScriptBlock|FilterScript|Process|Begin|End|TypeDefinition|MemberDefinition|ComObject|TypeName|AssemblyName)$/i;
/** Argument names that take a path to write to. */
const PATH_ARGUMENT =
  /^(Path|LiteralPath|FilePath|OutFile|OutputPath|Destination|DestinationPath)$/i;

/** What {@linkcode dangerousCommands} needs of the settings. */
export interface DangerSettings {
  shell: ShellSettings;
  auth: Pick<AuthSettings, "enabled" | "requiredRoles">;
}

/** Verbs that write what a path names. */
const WRITING_VERBS = new Set(
  ["new", "set", "add", "out", "export", "copy", "move", "rename", "remove", "clear", "save"]
    .concat(["expand", "compress", "install", "publish", "write", "update"]),
);
/** Commands with such a verb and a path argument that write no file. */
const NOT_FILES = new Set(["set-location", "push-location"]);

/** One exposed command that can do what svc's account can, and who can call it. */
interface DangerousCommand {
  /** The PowerShell command. */
  command: string;
  /** What it can do, e.g. "can run arbitrary code". */
  power: string;
  /** Its tools. */
  tools: string[];
  /** Who can call them, in words: roles, any authenticated caller, or everybody. */
  callers: string;
}

/** The set tools of a tool: itself, or the sets of a tool covering a whole command. */
function setsOf(tool: ToolDescriptor): ToolDescriptor[] {
  return tool.parameterSetTools ?? [tool];
}

function powerOf(tool: ToolDescriptor): string | null {
  const known = KNOWN[tool.command.toLowerCase()];
  if (known) return known;
  const names = tool.parameters.filter((p) => p.kind !== "shaping").map((p) => p.name);
  if (names.some((n) => CODE_ARGUMENT.test(n))) return CODE;
  const verb = tool.command.split("-")[0]!.toLowerCase();
  if (
    WRITING_VERBS.has(verb) && !NOT_FILES.has(tool.command.toLowerCase()) &&
    names.some((n) => PATH_ARGUMENT.test(n))
  ) {
    return FILES;
  }
  return null;
}

/**
 * Every offered command that can run code or write files (see the module documentation), with
 * who can call it under `auth` (roles of its overrides, else the default policy's).
 */
function dangerousCommands(
  tools: ToolDescriptor[],
  settings: DangerSettings,
): DangerousCommand[] {
  const found = new Map<string, DangerousCommand & { roles: Set<string>; anyone: boolean }>();
  for (const tool of tools) {
    for (const set of setsOf(tool)) {
      const power = powerOf(set);
      if (power === null) continue;
      const key = set.command.toLowerCase();
      const entry = found.get(key) ??
        { command: set.command, power, tools: [], callers: "", roles: new Set(), anyone: false };
      if (!entry.tools.includes(tool.name)) entry.tools.push(tool.name);
      const roles = overrideOf(settings.shell, set)?.requiredRoles ?? settings.auth.requiredRoles;
      if (roles.length === 0) entry.anyone = true;
      for (const role of roles) entry.roles.add(role);
      found.set(key, entry);
    }
  }
  return [...found.values()].map(({ roles, anyone, ...entry }) => ({
    ...entry,
    callers: !settings.auth.enabled
      ? "every caller (authentication is off)"
      : anyone
      ? "any authenticated caller"
      : `callers with role ${[...roles].join(", ")}`,
  }));
}

/** One warning line per {@linkcode dangerousCommands} entry, as start and doctor print them. */
export function dangerousCommandWarnings(
  tools: ToolDescriptor[],
  settings: DangerSettings,
): string[] {
  return dangerousCommands(tools, settings).map((d) =>
    `Exposed command '${d.command}' ${d.power} as svc's account (tool ${
      d.tools.join(", ")
    }); ${d.callers} can call it`
  );
}
