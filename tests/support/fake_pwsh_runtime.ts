// Runtime of the stand-in worker: the runspace's session state (variables, location, imported
// fixture module) with its post-startup snapshot, the per-call context that collects the
// streams and applies the preference variables, and the table of served commands.

import type { Binding } from "./fake_pwsh_binding.ts";
import type { CommandDef } from "./fake_pwsh_metadata.ts";
import {
  type ErrorInfo,
  PipelineStopped,
  PSEnum,
  PSSwitch,
  psToString,
  type PSValue,
  TerminatingError,
} from "./fake_pwsh_model.ts";

export interface Variable {
  name: string;
  value: PSValue;
}

/**
 * The worker runspace's preference variables: PowerShell's defaults, except that the worker host
 * sets Verbose and Debug to Continue (so their records are collected; nothing is printed without a
 * host UI) and Progress to SilentlyContinue. The protocol document does not fix these; they mirror
 * the runspace real pwsh gets from svc's host script.
 */
const preferenceDefaults: Array<[string, string]> = [
  ["ConfirmPreference", "High"],
  ["DebugPreference", "Continue"],
  ["ErrorActionPreference", "Continue"],
  ["InformationPreference", "SilentlyContinue"],
  ["ProgressPreference", "SilentlyContinue"],
  ["VerbosePreference", "Continue"],
  ["WarningPreference", "Continue"],
];

interface SessionState {
  variables: Map<string, Variable>;
  location: string;
  fixtureLoaded: boolean;
}

/** The worker runspace's state that survives between calls until `reset` (protocol §4.5). */
export class Session {
  variables = new Map<string, Variable>();
  location: string;
  fixtureLoaded = false;
  private snapshotState: SessionState;

  constructor(location: string) {
    this.location = location;
    for (const [name, value] of preferenceDefaults) {
      const type = name === "ConfirmPreference"
        ? "System.Management.Automation.ConfirmImpact"
        : "System.Management.Automation.ActionPreference";
      this.setVariable(name, new PSEnum(type, value));
    }
    this.setVariable("WhatIfPreference", false);
    this.snapshotState = this.capture();
  }

  getVariable(name: string): Variable | undefined {
    return this.variables.get(name.toLowerCase());
  }

  /** Sets a variable, keeping the spelling of an existing name as PowerShell does. */
  setVariable(name: string, value: PSValue) {
    const existing = this.getVariable(name);
    this.variables.set(name.toLowerCase(), { name: existing?.name ?? name, value });
  }

  private capture(): SessionState {
    return {
      variables: new Map([...this.variables].map(([k, v]) => [k, { ...v }])),
      location: this.location,
      fixtureLoaded: this.fixtureLoaded,
    };
  }

  /** Records the state `reset` returns to (end of `startup`, protocol §4.1 step 3). */
  snapshot() {
    this.snapshotState = this.capture();
  }

  reset() {
    const s = this.snapshotState;
    this.variables = new Map([...s.variables].map(([k, v]) => [k, { ...v }]));
    this.location = s.location;
    this.fixtureLoaded = s.fixtureLoaded;
  }

  /** A preference variable's value as text (`Continue`, `Stop`, ...). */
  preference(name: string): string {
    const value = this.getVariable(name)?.value ?? null;
    return psToString(value);
  }
}

export interface InformationRecord {
  message: string;
  tags: string[];
  source: string | null;
}

/** Effective actions for one call: common parameters win over the preference variables. */
interface Actions {
  error: string;
  warning: string;
  information: string;
  verbose: boolean;
  debug: boolean;
  whatIf: boolean;
}

function same(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** A progress record as the worker reports it (protocol §4.4 `progress` frame). */
export interface ProgressRecord {
  activity: string;
  status: string;
  operation: string | null;
  percent: number;
  completed: boolean;
}

/** Collects one call's streams (protocol §4.4 `result`) and applies the preferences. */
export class InvokeContext {
  readonly output: PSValue[] = [];
  readonly errors: ErrorInfo[] = [];
  readonly warnings: string[] = [];
  readonly verbose: string[] = [];
  readonly debug: string[] = [];
  readonly information: InformationRecord[] = [];
  private actions: Actions;

  constructor(
    readonly session: Session,
    readonly signal: AbortSignal,
    options: { errorAction?: string } = {},
  ) {
    const pref = (name: string) => session.preference(name);
    this.actions = {
      error: options.errorAction ?? pref("ErrorActionPreference"),
      warning: pref("WarningPreference"),
      information: pref("InformationPreference"),
      verbose: ["Continue", "Inquire", "Stop"].some((v) => same(v, pref("VerbosePreference"))),
      debug: ["Continue", "Inquire", "Stop"].some((v) => same(v, pref("DebugPreference"))),
      whatIf: session.getVariable("WhatIfPreference")?.value === true,
    };
  }

  /** Applies the bound common parameters (-ErrorAction, -Verbose, -WhatIf, ...). */
  applyCommonParameters(binding: Binding) {
    const action = (name: string) => {
      const value = binding.get(name);
      return value instanceof PSEnum ? value.name : undefined;
    };
    const flag = (name: string) => {
      const value = binding.get(name);
      return value instanceof PSSwitch ? value.isPresent : undefined;
    };
    this.actions.error = action("ErrorAction") ?? this.actions.error;
    this.actions.warning = action("WarningAction") ?? this.actions.warning;
    this.actions.information = action("InformationAction") ?? this.actions.information;
    this.actions.verbose = flag("Verbose") ?? this.actions.verbose;
    this.actions.debug = flag("Debug") ?? this.actions.debug;
    this.actions.whatIf = flag("WhatIf") ?? this.actions.whatIf;
  }

  get whatIf(): boolean {
    return this.actions.whatIf;
  }

  writeOutput(value: PSValue) {
    this.output.push(value);
  }

  /** Where progress records go when svc asked for them (invoke `progress: true`). */
  onProgress: ((record: ProgressRecord) => void) | null = null;

  /** `Write-Progress`: reported only when svc asked (the worker's preference is SilentlyContinue). */
  writeProgress(record: ProgressRecord) {
    this.onProgress?.(record);
  }

  /** A non-terminating error; `-ErrorAction Stop` (or the preference) makes it terminating. */
  writeError(info: ErrorInfo) {
    const action = this.actions.error;
    if (same(action, "Stop")) throw new TerminatingError(info);
    if (same(action, "SilentlyContinue") || same(action, "Ignore")) return;
    this.errors.push({ ...info, terminating: false });
  }

  writeWarning(message: string) {
    const action = this.actions.warning;
    if (same(action, "SilentlyContinue") || same(action, "Ignore")) return;
    this.warnings.push(message);
    if (same(action, "Stop")) throw actionPreferenceStop("WarningPreference", message);
  }

  writeVerbose(message: string) {
    if (this.actions.verbose) this.verbose.push(message);
  }

  writeDebug(message: string) {
    if (this.actions.debug) this.debug.push(message);
  }

  /** Information records are kept unless the action is Ignore (MshCommandRuntime.cs). */
  writeInformation(message: string, tags: string[], source: string | null) {
    if (same(this.actions.information, "Ignore")) return;
    this.information.push({ message, tags, source });
  }

  /** Sleeps; a `stop` for this call ends the sleep with PipelineStopped. */
  sleep(milliseconds: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.signal.aborted) return reject(new PipelineStopped());
      const onAbort = () => {
        clearTimeout(timer);
        reject(new PipelineStopped());
      };
      const timer = setTimeout(() => {
        this.signal.removeEventListener("abort", onAbort);
        resolve();
      }, Math.max(0, milliseconds));
      this.signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** PowerShell checks for a requested stop between operations. */
  checkStopped() {
    if (this.signal.aborted) throw new PipelineStopped();
  }
}

function actionPreferenceStop(variable: string, message: string): TerminatingError {
  return new TerminatingError({
    message: `The running command stopped because the preference variable "${variable}" or ` +
      `common parameter is set to Stop: ${message}`,
    fullyQualifiedErrorId: "ActionPreferenceStop",
    category: "OperationStopped",
    targetName: null,
    targetType: null,
    exceptionType: "System.Management.Automation.ActionPreferenceStopException",
    scriptStackTrace: null,
    terminating: true,
    position: null,
  });
}

/** One command the stand-in serves: its metadata and its behaviour. */
export interface ServedCommand {
  def: CommandDef;
  /** Functions of SvcFixture exist only once the module is imported at startup. */
  fromFixture: boolean;
  run(ctx: InvokeContext, args: Binding): Promise<void> | void;
}

/** Looks commands up the way Get-Command -Name does (case-insensitive, `Module\Name` allowed). */
export class CommandTable {
  constructor(private readonly commands: ServedCommand[]) {}

  available(session: Session): ServedCommand[] {
    return this.commands.filter((c) => !c.fromFixture || session.fixtureLoaded);
  }

  find(session: Session, name: string): ServedCommand | undefined {
    const slash = name.lastIndexOf("\\");
    const module = slash === -1 ? null : name.slice(0, slash).toLowerCase();
    const bare = (slash === -1 ? name : name.slice(slash + 1)).toLowerCase();
    return this.available(session).find((c) =>
      c.def.name.toLowerCase() === bare &&
      (module === null || c.def.module.toLowerCase() === module)
    );
  }
}
