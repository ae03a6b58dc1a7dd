// Value and error model of the stand-in worker (tests/support/fake-pwsh).
//
// PowerShell values are modelled just far enough to reproduce what real pwsh sends back over the
// worker protocol: how a value converts to a string (LanguagePrimitives.ConvertTo<string>), how
// `ConvertTo-Json -Depth <n> -Compress -EnumsAsStrings` renders it, and its .NET type name.
// This module imports nothing from lib/ on purpose (see tests/support/README.md).

/** A Hashtable: what a JSON object in `invoke` params becomes (docs/worker-protocol.md §4.4). */
export class PSHashtable {
  constructor(readonly entries: Map<string, PSValue>) {}
}

/** A `[pscustomobject]@{...}` with its note properties in order. */
export class PSCustomObject {
  /**
   * `typeName` is its PSTypeName (TypeNames[0]); `displaySet` the DefaultDisplayPropertySet its
   * type data declares, if any.
   */
  constructor(
    readonly properties: Array<[string, PSValue]>,
    readonly typeName = "System.Management.Automation.PSCustomObject",
    readonly displaySet: string[] | null = null,
  ) {}
}

/** A PSCredential built from `{"UserName", "Password"}` (protocol §4.4 `credentials`). */
export class PSCredential {
  constructor(readonly userName: string, readonly password: string) {}
}

/** A System.DateTime; `utc` is its Kind (Utc or Local). */
export class PSDateTime {
  constructor(readonly date: Date, readonly utc: boolean) {}
}

/** A System.TimeSpan in milliseconds. */
export class PSTimeSpan {
  constructor(readonly milliseconds: number) {}
}

/** A value of an enum type, e.g. System.ConsoleColor 'Red'. */
export class PSEnum {
  constructor(readonly typeName: string, readonly name: string) {}
}

/** A System.Management.Automation.SwitchParameter. */
export class PSSwitch {
  constructor(readonly isPresent: boolean) {}
}

/** A System.Exception (Write-Error -Exception 'text' converts a string through the constructor). */
export class PSException {
  constructor(readonly message: string) {}
}

export type PSValue =
  | null
  | string
  | number
  | boolean
  | PSValue[]
  | PSHashtable
  | PSCustomObject
  | PSCredential
  | PSDateTime
  | PSTimeSpan
  | PSEnum
  | PSSwitch
  | PSException;

export type JsonValue = null | string | number | boolean | JsonValue[] | {
  [key: string]: JsonValue;
};

/** Converts a decoded request value: objects become Hashtables, arrays object[] (protocol §4.4). */
export function fromJson(value: unknown): PSValue {
  if (value === null || value === undefined) return null;
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
    return value;
  }
  if (Array.isArray(value)) return value.map(fromJson);
  if (typeof value === "object") {
    const entries = new Map<string, PSValue>();
    for (const [key, item] of Object.entries(value)) entries.set(key, fromJson(item));
    return new PSHashtable(entries);
  }
  return String(value);
}

/** The .NET full type name of a value as it would arrive from the host's JSON parsing. */
export function dotNetTypeName(value: PSValue): string {
  if (value === null) return "System.Object";
  if (typeof value === "string") return "System.String";
  if (typeof value === "boolean") return "System.Boolean";
  if (typeof value === "number") return Number.isInteger(value) ? "System.Int64" : "System.Double";
  if (Array.isArray(value)) return "System.Object[]";
  if (value instanceof PSHashtable) return "System.Collections.Hashtable";
  if (value instanceof PSCustomObject) return "System.Management.Automation.PSCustomObject";
  if (value instanceof PSCredential) return "System.Management.Automation.PSCredential";
  if (value instanceof PSDateTime) return "System.DateTime";
  if (value instanceof PSTimeSpan) return "System.TimeSpan";
  if (value instanceof PSEnum) return value.typeName;
  if (value instanceof PSSwitch) return "System.Management.Automation.SwitchParameter";
  return "System.Exception";
}

/** Formats a number the way .NET's invariant ToString() does for the common cases. */
export function numberToString(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "Infinity";
  if (value === -Infinity) return "-Infinity";
  return String(value);
}

/** LanguagePrimitives.ConvertTo<string>: what `"$value"` or a [string] parameter makes of a value. */
export function psToString(value: PSValue): string {
  if (value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "number") return numberToString(value);
  // Arrays join their elements with $OFS (a space by default).
  if (Array.isArray(value)) return value.map(psToString).join(" ");
  if (value instanceof PSHashtable) return "System.Collections.Hashtable";
  if (value instanceof PSCustomObject) {
    const inner = value.properties.map(([name, item]) => `${name}=${psToString(item)}`);
    return `@{${inner.join("; ")}}`;
  }
  if (value instanceof PSCredential) return "System.Management.Automation.PSCredential";
  if (value instanceof PSDateTime) return invariantDateString(value);
  if (value instanceof PSTimeSpan) return timeSpanString(value.milliseconds);
  if (value instanceof PSEnum) return value.name;
  if (value instanceof PSSwitch) return value.isPresent ? "True" : "False";
  return value.message;
}

function pad(value: number, width = 2): string {
  return String(value).padStart(width, "0");
}

/** DateTime.ToString() under the invariant culture: `MM/dd/yyyy HH:mm:ss`. */
function invariantDateString(value: PSDateTime): string {
  const d = value.date;
  const [y, mo, day, h, mi, s] = value.utc
    ? [
      d.getUTCFullYear(),
      d.getUTCMonth() + 1,
      d.getUTCDate(),
      d.getUTCHours(),
      d.getUTCMinutes(),
      d.getUTCSeconds(),
    ]
    : [
      d.getFullYear(),
      d.getMonth() + 1,
      d.getDate(),
      d.getHours(),
      d.getMinutes(),
      d.getSeconds(),
    ];
  return `${pad(mo)}/${pad(day)}/${pad(y, 4)} ${pad(h)}:${pad(mi)}:${pad(s)}`;
}

/** TimeSpan.ToString(): `[-][d.]hh:mm:ss[.fffffff]`. */
export function timeSpanString(milliseconds: number): string {
  const sign = milliseconds < 0 ? "-" : "";
  let rest = Math.abs(milliseconds);
  const days = Math.floor(rest / 86_400_000);
  rest -= days * 86_400_000;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const fraction = Math.round((rest - seconds * 1000) * 10_000);
  const dayPart = days > 0 ? `${days}.` : "";
  const fractionPart = fraction > 0 ? `.${String(fraction).padStart(7, "0")}` : "";
  return `${sign}${dayPart}${pad(hours)}:${pad(minutes)}:${pad(seconds)}${fractionPart}`;
}

/**
 * Json.NET's ISO form for a DateTime (`yyyy-MM-ddTHH:mm:ss.FFFFFFFK`): trailing fraction zeros are
 * dropped, Utc ends in `Z`, Local in the offset.
 */
export function isoDateString(value: PSDateTime): string {
  const d = value.date;
  const offsetMinutes = value.utc ? 0 : -d.getTimezoneOffset();
  const shifted = new Date(d.getTime() + offsetMinutes * 60_000);
  const base = shifted.toISOString().slice(0, 19);
  const ms = shifted.getUTCMilliseconds();
  const fraction = ms === 0 ? "" : `.${String(ms).padStart(3, "0").replace(/0+$/, "")}`;
  return `${base}${fraction}${value.utc ? "Z" : offsetString(offsetMinutes)}`;
}

/** `+hh:mm` / `-hh:mm` for an offset east of UTC in minutes. */
export function offsetString(offsetMinutes: number): string {
  const sign = offsetMinutes < 0 ? "-" : "+";
  const abs = Math.abs(offsetMinutes);
  return `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/**
 * One output object as `ConvertTo-Json -Depth <depth> -Compress -EnumsAsStrings` renders it. The top
 * object is level 0; a container deeper than `depth` becomes its string form, as in JsonObject.cs.
 */
export function toJsonValue(value: PSValue, depth: number, level = 0): JsonValue {
  if (value === null) return null;
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    // Json.NET writes NaN and the infinities as strings.
    return Number.isFinite(value) ? value : numberToString(value);
  }
  if (value instanceof PSDateTime) return isoDateString(value);
  if (value instanceof PSEnum) return value.name;
  if (level > depth) return psToString(value);
  const next = level + 1;
  if (Array.isArray(value)) return value.map((item) => toJsonValue(item, depth, next));
  if (value instanceof PSHashtable) {
    const result: Record<string, JsonValue> = {};
    for (const [key, item] of value.entries) result[key] = toJsonValue(item, depth, next);
    return result;
  }
  if (value instanceof PSCustomObject) {
    const result: Record<string, JsonValue> = {};
    for (const [key, item] of value.properties) result[key] = toJsonValue(item, depth, next);
    return result;
  }
  if (value instanceof PSCredential) {
    // A SecureString serializes as its only public property.
    return { UserName: value.userName, Password: { Length: value.password.length } };
  }
  if (value instanceof PSTimeSpan) return timeSpanJson(value.milliseconds);
  if (value instanceof PSSwitch) return { IsPresent: value.isPresent };
  return { Message: value.message, Data: {}, InnerException: null, HelpLink: null, Source: null };
}

function timeSpanJson(milliseconds: number): JsonValue {
  const ticks = Math.round(milliseconds * 10_000);
  const whole = (unit: number) => Math.trunc(milliseconds / unit);
  return {
    Ticks: ticks,
    Days: whole(86_400_000),
    Hours: whole(3_600_000) % 24,
    Milliseconds: Math.trunc(milliseconds) % 1000,
    Microseconds: 0,
    Nanoseconds: 0,
    Minutes: whole(60_000) % 60,
    Seconds: whole(1000) % 60,
    TotalDays: milliseconds / 86_400_000,
    TotalHours: milliseconds / 3_600_000,
    TotalMilliseconds: milliseconds,
    TotalMicroseconds: milliseconds * 1000,
    TotalNanoseconds: milliseconds * 1_000_000,
    TotalMinutes: milliseconds / 60_000,
    TotalSeconds: milliseconds / 1000,
  };
}

/** PowerShell wildcard (`*`, `?`, `[abc]`, backtick escapes) as a case-insensitive RegExp. */
export function wildcardToRegExp(pattern: string): RegExp {
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    if (ch === "`" && i + 1 < pattern.length) {
      source += escapeRegExp(pattern[++i] as string);
    } else if (ch === "*") {
      source += ".*";
    } else if (ch === "?") {
      source += ".";
    } else if (ch === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end === -1) {
        source += "\\[";
      } else {
        source += `[${pattern.slice(i + 1, end).replace(/\\/g, "\\\\")}]`;
        i = end;
      }
    } else {
      source += escapeRegExp(ch);
    }
  }
  return new RegExp(`^${source}$`, "is");
}

export function hasWildcard(text: string): boolean {
  return /[*?[]/.test(text);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

// ---------------------------------------------------------------------------------------------
// Errors

/** ErrorInfo exactly as in docs/worker-protocol.md §4.4. */
export interface ErrorInfo {
  message: string;
  fullyQualifiedErrorId: string | null;
  category: string | null;
  targetName: string | null;
  targetType: string | null;
  exceptionType: string | null;
  scriptStackTrace: string | null;
  terminating: boolean;
  position: { scriptName: string | null; line: number; column: number; text: string | null } | null;
}

export interface ErrorRecordInit {
  message: string;
  errorId: string;
  category: string;
  exceptionType: string;
  target?: PSValue;
  terminating?: boolean;
}

/** Builds an ErrorInfo the way an ErrorRecord reports itself (CategoryInfo target name/type). */
export function errorRecord(init: ErrorRecordInit): ErrorInfo {
  const hasTarget = init.target !== undefined && init.target !== null;
  return {
    message: init.message,
    fullyQualifiedErrorId: init.errorId,
    category: init.category,
    targetName: hasTarget ? psToString(init.target as PSValue) : null,
    targetType: hasTarget ? shortTypeName(dotNetTypeName(init.target as PSValue)) : null,
    exceptionType: init.exceptionType,
    scriptStackTrace: null,
    terminating: init.terminating ?? false,
    position: null,
  };
}

function shortTypeName(fullName: string): string {
  const dot = fullName.lastIndexOf(".");
  return dot === -1 ? fullName : fullName.slice(dot + 1);
}

/** A terminating error: ends the command; reported as the last `errors` entry (protocol §4.4). */
export class TerminatingError extends Error {
  readonly info: ErrorInfo;
  constructor(info: ErrorInfo) {
    super(info.message);
    this.info = { ...info, terminating: true };
  }
}

/** Thrown when a `stop` notification ended the running pipeline. */
export class PipelineStopped extends Error {
  constructor() {
    super("The pipeline has been stopped.");
  }
}

/** `The term 'x' is not recognized ...` (SMA/resources/DiscoveryExceptions.resx, 7.x wording). */
export function commandNotFound(name: string): TerminatingError {
  return new TerminatingError(errorRecord({
    message: `The term '${name}' is not recognized as a name of a cmdlet, function, script file, ` +
      "or executable program.\nCheck the spelling of the name, or if a path was included, verify " +
      "that the path is correct and try again.",
    errorId: "CommandNotFoundException",
    category: "ObjectNotFound",
    exceptionType: "System.Management.Automation.CommandNotFoundException",
    target: name,
  }));
}

/** What `throw 'text'` produces: FQID = the text, category OperationStopped, RuntimeException. */
export function thrownString(message: string): TerminatingError {
  return new TerminatingError(errorRecord({
    message,
    errorId: message,
    category: "OperationStopped",
    exceptionType: "System.Management.Automation.RuntimeException",
    target: message,
  }));
}
