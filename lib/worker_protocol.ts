/**
 * The shapes of what a worker answers (docs/worker-protocol.md): command metadata, call results,
 * startup and reset results. Types only; `lib/worker.ts` speaks the protocol.
 *
 * @module
 */
import type { ConfirmLevel } from "./config_schema.ts";
import type { ErrorInfo } from "./errors.ts";

/** Metadata of one parameter, as the worker reports it (protocol §4.3). */
export interface ParamMeta {
  name: string;
  type: string;
  elementType: string | null;
  isMandatory: boolean;
  position: number | null;
  valueFromPipeline: boolean;
  valueFromRemainingArguments: boolean;
  helpMessage: string | null;
  aliases: string[];
  isSwitch: boolean;
  isCredential: boolean;
  enumValues: string[] | null;
  validateSet: string[] | null;
  validateRange: { min: number | string; max: number | string } | null;
  validateLength: { min: number; max: number } | null;
  validatePattern: string | null;
  validateCount: { min: number; max: number } | null;
  validateNotNullOrEmpty: boolean;
  isDynamic: boolean;
  /**
   * Whether PowerShell can make a value of the (element) type from a JSON string or number. Absent
   * in metadata from workers before it existed: taken as true.
   */
  fromString?: boolean;
  /**
   * Values an argument completer of the parameter suggests (`ArgumentCompletions`, e.g. the names
   * `-Encoding` takes), not a limit. Absent in metadata from workers before it existed.
   */
  completions?: string[] | null;
}

/** One parameter set of a command. */
export interface ParameterSetMeta {
  name: string;
  isDefault: boolean;
  syntax: string;
  parameters: ParamMeta[];
}

/** Help text of a command, when Get-Help found any. */
export interface HelpMeta {
  synopsis: string | null;
  description: string | null;
  parameters: Record<string, string>;
  /** Default values as help states them, by parameter name. Absent from an older worker's answer. */
  defaults?: Record<string, string>;
  /** The help's examples: code, and the remarks after it. Absent from an older worker's answer. */
  examples?: { code: string; remarks: string | null }[];
}

/** Metadata of one command (protocol §4.3). */
export interface CommandMeta {
  name: string;
  commandType: string;
  module: string | null;
  moduleVersion: string | null;
  verb: string | null;
  noun: string | null;
  defaultParameterSet: string | null;
  supportsShouldProcess: boolean;
  /**
   * A ShouldProcess command's `ConfirmImpact` (`None`..`High`): it asks for confirmation when this
   * reaches `$ConfirmPreference`. Null otherwise; absent from an older worker's answer.
   */
  confirmImpact?: ConfirmLevel | null;
  outputTypes: string[];
  parameterSets: ParameterSetMeta[];
  help: HelpMeta | null;
  /**
   * The provider whose dynamic parameters the sets include (`FileSystem`): a provider cmdlet's are
   * described for a path of that provider. Null or absent: the dynamic parameters belong to no
   * known provider and are not offered.
   */
  provider?: string | null;
}

/** Result of `invoke` (protocol §4.4). */
export interface InvokeResult {
  output: unknown[];
  errors: ErrorInfo[];
  warnings: string[];
  verbose: string[];
  debug: string[];
  information: { message: string; tags: string[]; source: string | null }[];
  hadErrors: boolean;
  stopped: boolean;
  durationMs: number;
  /** What `select` and `first` left out; present when either was given. */
  shape?: OutputShape;
  /** Present when the worker stopped sending output at `limits.outputBytes`. */
  outputCut?: OutputCut;
  /**
   * The indices in `output` of media items (a byte array as `{bytes}` in base64, an
   * `svc.EmbeddedResource` as `{uri, mimeType, text | bytes}`); absent: none.
   */
  media?: number[];
  /** Records left out per stream under `limits.streamBytes` (`errors`, `warnings`, ...); absent: none. */
  droppedRecords?: Partial<Record<StreamName, number>>;
  /**
   * Present (true) when the worker runspace is still busy once the call has ended (a format view's
   * script-block column ignored the stop at its time bound): the worker can run no later call.
   */
  runspaceBusy?: true;
}

/** The streams of a call besides its output. */
export type StreamName = "errors" | "warnings" | "verbose" | "debug" | "information";

/** What the worker left out of the output under `limits` (protocol §4.4). */
export interface OutputCut {
  /** Items the command wrote (after `first`), sent or not. */
  items: number;
  /** A lower bound of the whole output's size as a JSON array, in bytes. */
  bytes: number;
  /** True when the first item alone exceeded `outputBytes` and was sent shortened. */
  shortenedFirst: boolean;
  /**
   * Present (true) when the worker stopped the command once its output was full
   * (`limits.stopWhenFull`): `items` then counts the items written until it stopped.
   */
  stopped?: true;
}

/** What one call may send svc (protocol §4.4); svc derives it from `MaxResultBytes`. */
export interface CallLimits {
  /** Output items are sent whole while the output array's JSON stays within this many bytes. */
  outputBytes: number;
  /** A first item larger than `outputBytes` is sent shortened to about this many bytes. */
  firstItemBytes: number;
  /** The records of every stream together, the terminating error aside, in bytes of JSON. */
  streamBytes: number;
  /** Each string of a stream or progress record, in bytes of JSON. */
  textBytes: number;
  /**
   * The worker may stop the command once its output exceeds `outputBytes`, as `first` stops it. svc
   * sets it for commands that only read. @default false
   */
  stopWhenFull?: boolean;
}

/** How the output was shaped (protocol §4.4): the properties each type showed and what was left out. */
export interface OutputShape {
  /** True when `first` cut the output and more items existed. */
  moreResults: boolean;
  /**
   * Per projected type (first type name), the properties shown and those left out. Under `limits`: at
   * most 16 types and 256 names a list, `omittedCount` giving the number left out when it is more.
   */
  types?: { type: string; shown: string[]; omitted: string[]; omittedCount?: number }[];
  /** Requested names (or wildcards) that matched no property of any item. */
  unknownProperties?: string[];
  /** Items whose script-block columns were left null: computing them took longer than the worker's bound (1 s a call). */
  uncomputed?: number;
}

/** Which properties of output objects to keep (protocol §4.4). */
export interface OutputSelection {
  /** Property names or wildcards; objects keep only these. Null: decided by `display`. */
  properties: string[] | null;
  /** Reduce objects to what PowerShell would show (display set, else format view). */
  display: boolean;
}

/** Result of `reset` (protocol §4.5). */
export interface ResetResult {
  durationMs: number;
  /**
   * `fast` when nothing the reset restores had changed, `full` when the reset script ran, `retire`
   * when the call left state behind that no reset can restore (`retire` says what): the process must
   * be replaced.
   */
  path?: "fast" | "full" | "retire";
  /** Why the worker's process must be retired (only with `path: "retire"`). */
  retire?: string;
  /** The worker process's working set after the reset, in bytes. */
  workingSetBytes?: number;
  /** Milliseconds since the reset began, at the end of each step. */
  spans?: Record<string, number>;
}

/** Parameters of `invoke`. */
export interface InvokeParams {
  command: string;
  parameters: Record<string, unknown>;
  credentials: string[];
  depth: number;
  /** Projection of output objects; absent: every object whole. */
  select?: OutputSelection;
  /** Most output items; the command is stopped after one more. Absent: all. */
  first?: number;
  /** Report `Write-Progress` records while the call runs (protocol §4.4). @default false */
  progress?: boolean;
  /**
   * Send the warning, information, verbose and debug records at this level and above as `log` frames
   * while the call runs (protocol §4.4). @default none: no log frames
   */
  log?: WorkerLogLevel;
  /** What the call may send svc (protocol §4.4). @default none: everything is sent */
  limits?: CallLimits;
  /** Id of the reset the worker runs once it has answered the call (protocol §4.4). @default none */
  thenReset?: number;
  /**
   * The provider the call's dynamic arguments belong to: the worker refuses the call unless every
   * `Path` and `LiteralPath` (else the current location) is of it (protocol §4.4). @default none
   */
  provider?: { name: string; arguments: string[] };
  /**
   * The command's prompts are sent as `prompt` frames and wait for svc's `answer` notification
   * (protocol §4.4). @default false: every prompt fails at once
   */
  interactive?: boolean;
  /**
   * `$ConfirmPreference` for the call: a ShouldProcess command whose `ConfirmImpact` reaches it asks
   * for confirmation (protocol §4.4). @default the runspace's own (PowerShell's "High")
   */
  confirmPreference?: ConfirmLevel;
  /**
   * Complete `parameter` of `command` instead of running it: the worker writes how many values
   * PowerShell's completion offers for `word`, then the values; `parameters` are the other
   * arguments, as strings (protocol §4.4). @default none: the command runs
   */
  complete?: { parameter: string; word: string };
}

/** A `progress` frame: the newest progress record of a running invoke (protocol §4.4). */
export interface WorkerProgress {
  activity: string;
  status: string;
  operation: string | null;
  /** PercentComplete; -1 when the command gave none. */
  percent: number;
  /** True for the record `Write-Progress -Completed` writes. */
  completed: boolean;
}

/**
 * A `prompt` frame less its `type` and `id`: a question the running command asks its user, on an
 * interactive invoke (protocol §4.4). `confirm` is PowerShell's own confirmation (ShouldProcess,
 * ShouldContinue), `choice` any other PromptForChoice, `text` a Read-Host, `fields` $Host.UI.Prompt;
 * `refused` says what the command asked could not be answered, and why (`message`, after the
 * command's name: "asked for a credential, which svc never asks…"): a secret, a question too large
 * to send, an answer it could not use. It wants no answer, and the command has stopped. Strings are
 * cut to the call's `limits.textBytes`.
 */
export interface WorkerPrompt {
  /** The prompt's number within its call, from 1; the answer names it. */
  seq: number;
  kind: "confirm" | "choice" | "text" | "fields" | "refused";
  /**
   * The command the call runs (the invoke's `command`), whichever command inside it asks: the user
   * learns what wants an answer. Absent from a worker of an older host.
   */
  command?: string;
  /** The prompt's title ("Confirm"); may be empty. */
  caption: string;
  /** What is asked (a confirmation's operation and target); may be empty. */
  message: string;
  /** confirm and choice only: the choices, hotkey markers removed (a confirmation never offers Suspend). */
  choices?: PromptChoice[];
  /** confirm and choice only: indexes into `choices` of the default choices. */
  defaults?: number[];
  /** confirm and choice only: true when several choices may be picked. */
  multiple?: boolean;
  /** text and fields only: the values asked for. */
  fields?: PromptField[];
}

/** One choice of a `confirm` or `choice` prompt. */
export interface PromptChoice {
  label: string;
  /** Its help message; may be empty. */
  help: string;
}

/** One value a `text` or `fields` prompt asks for. */
export interface PromptField {
  /** The key of its value in the answer. */
  name: string;
  label: string;
  /** Its help message; may be empty. */
  help: string;
  type: "string" | "boolean" | "integer" | "number";
  /** Its default value, when it has one of its type. */
  default?: string | number | boolean;
}

/**
 * svc's answer to a {@linkcode WorkerPrompt}: the params of the `answer` notification less `id` and
 * `seq` (protocol §4.4). `accept` answers with `choices` (confirm, choice: indexes into its choices,
 * one unless `multiple`) or `values` (text, fields: by field name). Every other action stops the
 * call, as Ctrl+C at a console prompt does, and says why: the user declined (`decline`) or
 * cancelled (`cancel`), no answer came in time (`timeout`), or nobody can answer (`unavailable`: the
 * client cannot ask its user).
 */
export interface PromptAnswer {
  action: "accept" | "decline" | "cancel" | "timeout" | "unavailable";
  /**
   * svc's own, never sent to the worker: the caller answered, ahead of the question, where it may
   * (`PromptsAnsweredBy: Caller`). @default the user answered
   */
  by?: "caller";
  choices?: number[];
  values?: Record<string, string | number | boolean>;
}

/**
 * The lowest record a call sends as log messages: `warning` (warnings), `info` (and information
 * records), `debug` (and verbose and debug records, their preferences raised to Continue).
 */
export type WorkerLogLevel = "debug" | "info" | "warning";

/** A `log` frame: the records a running invoke wrote since the last one (protocol §4.4). */
export interface WorkerLog {
  records: { stream: "warning" | "information" | "verbose" | "debug"; message: string }[];
  /** Records the worker left out: more than it holds between two looks (64). Absent: none. */
  dropped?: number;
}

/** One module's import outcome from `startup`. */
export interface ModuleStatus {
  name: string;
  found: boolean;
  version: string | null;
  path: string | null;
  error: string | null;
}

/** Result of `startup`. */
export interface StartupResult {
  modules: ModuleStatus[];
  durationMs: number;
}

/** Parameters of `startup`. */
export interface StartupParams {
  modules: string[];
  scriptPath: string | null;
  script: string | null;
  /** Keep the native processes a call started after it ends. @default false (they are killed) */
  keepNativeProcesses?: boolean;
}

/** One candidate command from `commands`. */
export interface CommandCandidate {
  name: string;
  module: string | null;
  commandType: string;
  source: "name" | "module" | "pattern";
  via: string;
}

/** Result of `commands`. */
export interface CommandsResult {
  commands: CommandCandidate[];
  missing: string[];
}

/** Result of `describe`. */
export interface DescribeResult {
  commands: CommandMeta[];
  missing: string[];
}

/** Result of `sources`: the files the session's code comes from (absolute paths). */
export interface SourcesResult {
  files: string[];
}

/** Facts from the worker's hello frame. */
export interface WorkerInfo {
  pid: number;
  psVersion: string;
  edition: string;
  os: string;
  /**
   * The engine members a reset reads that this PowerShell lacks (`lib/host/cs/EngineMembers.cs`):
   * a process with any serves one call and is retired. Empty when it has them all.
   */
  missingMembers: string[];
}

/**
 * How an `invoke` ended when it did not simply complete: its time limit, its caller's cancel, or a
 * prompt's answer (or the lack of one) that stopped it (`prompt`; the last of `prompts` says which).
 */
export type Interruption = "timeout" | "cancelled" | "prompt";

/**
 * One prompt of a call and how it ended: the answer svc gave the worker (`accept` with the chosen
 * choices; for a confirmation "No" is an accepted choice), or `refused` for what could not be
 * answered (the prompt's `message` says why).
 */
export interface PromptRecord {
  prompt: WorkerPrompt;
  action: PromptAnswer["action"] | "refused";
  /** `accept` of a confirm or choice: the labels chosen. */
  chosen?: string[];
  /** The caller answered, ahead of the question. @default the user answered */
  by?: "caller";
}

/** The outcome of `RunspaceWorker.invoke`: the result, and whether it was stopped and why. */
export interface InvokeOutcome {
  result: InvokeResult;
  interrupted: Interruption | null;
  /** The call's prompts in order, each with how it ended. @default none: it asked nothing */
  prompts?: PromptRecord[];
}
