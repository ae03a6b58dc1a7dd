// Parameter binding of the stand-in worker: names (exact, alias, unique prefix), parameter set
// resolution, argument conversion and validation, with PowerShell's own error texts
// (SMA/resources/ParameterBinderStrings.resx, Metadata.resx). Every failure is a terminating
// ParameterBindingException, as it is for a command run with AddCommand (POWERSHELL-NOTES §6).

import {
  bindableParameters,
  type CommandDef,
  credentialType,
  elementTypeOf,
  membership,
  type ParamDef,
  switchType,
} from "./fake_pwsh_metadata.ts";
import {
  dotNetTypeName,
  errorRecord,
  PSCredential,
  PSDateTime,
  PSEnum,
  PSException,
  PSHashtable,
  PSSwitch,
  PSTimeSpan,
  psToString,
  type PSValue,
  TerminatingError,
} from "./fake_pwsh_model.ts";

export interface BoundParameter {
  name: string;
  /** The declared .NET type the value was converted to. */
  type: string;
  value: PSValue;
}

export class Binding {
  constructor(readonly setName: string, readonly bound: Map<string, BoundParameter>) {}

  has(name: string): boolean {
    return this.bound.has(name.toLowerCase());
  }

  get(name: string): PSValue | undefined {
    return this.bound.get(name.toLowerCase())?.value;
  }

  /** True when a switch (or boolean) parameter is bound and set. */
  flag(name: string): boolean {
    const value = this.get(name);
    return value instanceof PSSwitch ? value.isPresent : value === true;
  }

  string(name: string): string | undefined {
    const value = this.get(name);
    return value === undefined || value === null ? undefined : psToString(value);
  }

  number(name: string): number | undefined {
    const value = this.get(name);
    return typeof value === "number" ? value : undefined;
  }
}

/** The arguments of one call: named ones from `invoke`, plus positional ones in startup lines. */
export interface CallArguments {
  named: Array<[string, PSValue]>;
  positional?: PSValue[];
}

export function bindArguments(def: CommandDef, args: CallArguments): Binding {
  const binder = new Binder(def);
  const named: Array<{ param: ParamDef; value: PSValue }> = [];
  const seen = new Set<string>();
  for (const [given, value] of args.named) {
    const param = binder.resolveName(given);
    if (seen.has(param.name)) throw binder.error("ParameterAlreadyBound", alreadyBound(param.name));
    seen.add(param.name);
    named.push({ param, value });
  }

  // Bind named arguments in the order given: conversion and validation errors surface first.
  const bound = new Map<string, BoundParameter>();
  for (const { param, value } of named) {
    bound.set(param.name.toLowerCase(), binder.bind(param, value));
  }

  const candidates = binder.candidateSets([...seen]);
  if (candidates.length === 0) throw binder.ambiguousSet();

  if (args.positional && args.positional.length > 0) {
    binder.bindPositional(args.positional, candidates, bound);
  }

  const setName = binder.chooseSet(candidates, bound);
  const missing = def.params.filter((p) =>
    membership(p, setName)?.mandatory && !bound.has(p.name.toLowerCase())
  );
  if (missing.length > 0) {
    throw binder.error(
      "MissingMandatoryParameter",
      `Cannot process command because of one or more missing mandatory parameters: ${
        missing.map((p) => p.name).join(" ")
      }.`,
    );
  }
  return new Binding(setName, bound);
}

function alreadyBound(name: string): string {
  return `Cannot bind parameter because parameter '${name}' is specified more than once. To ` +
    "provide multiple values to parameters that can accept multiple values, use the array " +
    'syntax. For example, "-parameter value1,value2,value3".';
}

/** A conversion failure before it is wrapped with the parameter name. */
class ConversionFailure extends Error {
  constructor(message: string, readonly kind: "convert" | "cast" | "bool") {
    super(message);
  }
}

class Binder {
  readonly all: ParamDef[];
  readonly isCmdlet: boolean;

  constructor(readonly def: CommandDef) {
    this.all = bindableParameters(def);
    this.isCmdlet = def.commandType === "Cmdlet";
  }

  error(
    id: string,
    message: string,
    category = "InvalidArgument",
    exception = "ParameterBindingException",
  ): TerminatingError {
    return new TerminatingError(errorRecord({
      message,
      errorId: `${id},${this.def.errorIdSuffix}`,
      category,
      exceptionType: `System.Management.Automation.${exception}`,
    }));
  }

  /** Exact name or alias, else a unique prefix of a name or alias (case-insensitive). */
  resolveName(given: string): ParamDef {
    const lower = given.toLowerCase();
    const exact = this.all.find((p) =>
      p.name.toLowerCase() === lower || (p.aliases ?? []).some((a) => a.toLowerCase() === lower)
    );
    if (exact) return exact;
    const hits = this.all.filter((p) =>
      [p.name, ...(p.aliases ?? [])].some((n) => n.toLowerCase().startsWith(lower))
    );
    if (hits.length === 1) return hits[0] as ParamDef;
    if (hits.length > 1) {
      throw this.error(
        "AmbiguousParameter",
        `Parameter cannot be processed because the parameter name '${given}' is ambiguous. ` +
          `Possible matches include: ${hits.map((p) => `-${p.name}`).join(" ")}.`,
      );
    }
    throw this.error(
      "NamedParameterNotFound",
      `A parameter cannot be found that matches parameter name '${given}'.`,
    );
  }

  candidateSets(boundNames: string[]): string[] {
    const own = boundNames.map((n) => this.def.params.find((p) => p.name === n))
      .filter((p): p is ParamDef => p !== undefined);
    return this.def.setNames.filter((set) => own.every((p) => membership(p, set) !== undefined));
  }

  ambiguousSet(): TerminatingError {
    return this.error(
      "AmbiguousParameterSet",
      "Parameter set cannot be resolved using the specified named parameters. One or more " +
        "parameters issued cannot be used together or an insufficient number of parameters " +
        "were provided.",
    );
  }

  /** Several sets fit: the default set wins, else the only one whose mandatory set is complete. */
  chooseSet(candidates: string[], bound: Map<string, BoundParameter>): string {
    if (candidates.length === 1) return candidates[0] as string;
    if (this.def.defaultParameterSet && candidates.includes(this.def.defaultParameterSet)) {
      return this.def.defaultParameterSet;
    }
    const complete = candidates.filter((set) =>
      this.def.params.every((p) =>
        !membership(p, set)?.mandatory || bound.has(p.name.toLowerCase())
      )
    );
    if (complete.length === 1) return complete[0] as string;
    throw this.ambiguousSet();
  }

  /** Startup lines only: positional arguments fill the preferred set's positions in order. */
  bindPositional(values: PSValue[], candidates: string[], bound: Map<string, BoundParameter>) {
    const set = this.def.defaultParameterSet && candidates.includes(this.def.defaultParameterSet)
      ? this.def.defaultParameterSet
      : candidates[0] as string;
    const open = this.def.params
      .map((p) => ({ p, position: membership(p, set)?.position ?? null }))
      .filter((x) => x.position !== null && !bound.has(x.p.name.toLowerCase()))
      .sort((a, b) => (a.position ?? 0) - (b.position ?? 0));
    values.forEach((value, index) => {
      const slot = open[index];
      if (!slot) {
        throw this.error(
          "PositionalParameterNotFound",
          `A positional parameter cannot be found that accepts argument '${psToString(value)}'.`,
        );
      }
      bound.set(slot.p.name.toLowerCase(), this.bind(slot.p, value));
    });
  }

  /** Null/empty checks, conversion to the declared type, then the validation attributes. */
  bind(param: ParamDef, raw: PSValue): BoundParameter {
    const mandatory = Object.values(param.sets).some((m) => m.mandatory);
    if (mandatory && !param.allowNull) this.checkNotEmpty(param, raw);
    let value: PSValue;
    try {
      value = convertArgument(param, raw, this.isCmdlet);
    } catch (e) {
      if (e instanceof ConversionFailure) throw this.conversionError(param, raw, e);
      throw e;
    }
    this.validate(param, value);
    return { name: param.name, type: param.type, value };
  }

  checkNotEmpty(param: ParamDef, raw: PSValue) {
    const fail = (id: string, what: string) =>
      this.error(
        `ParameterArgumentValidationError${id}`,
        `Cannot bind argument to parameter '${param.name}' because it is ${what}.`,
        "InvalidData",
        "ParameterBindingValidationException",
      );
    if (raw === null) throw fail("NullNotAllowed", "null");
    if (raw === "" && !param.allowEmptyString && param.type === "System.String") {
      throw fail("EmptyStringNotAllowed", "an empty string");
    }
    if (Array.isArray(raw) && raw.length === 0 && !param.allowEmptyCollection) {
      if (elementTypeOf(param.type) !== null) throw fail("EmptyArrayNotAllowed", "an empty array");
    }
  }

  conversionError(param: ParamDef, raw: PSValue, failure: ConversionFailure): TerminatingError {
    if (this.isCmdlet) {
      if (Array.isArray(raw) && elementTypeOf(param.type) === null) {
        return this.error(
          "CannotConvertArgument",
          `Cannot convert '${dotNetTypeName(raw)}' to the type '${param.type}' required by ` +
            `parameter '${param.name}'. Specified method is not supported.`,
        );
      }
      return this.error(
        "CannotConvertArgumentNoMessage",
        `Cannot bind parameter '${param.name}'. ${failure.message}`,
      );
    }
    return this.error(
      "ParameterArgumentTransformationError",
      `Cannot process argument transformation on parameter '${param.name}'. ${failure.message}`,
      "InvalidData",
      "ParameterBindingArgumentTransformationException",
    );
  }

  validate(param: ParamDef, value: PSValue) {
    const elements = Array.isArray(value) ? value : [value];
    for (const kind of param.validationOrder ?? []) {
      const reason = kind === "count"
        ? validateCount(param, value)
        : kind === "notNullOrEmpty"
        ? validateNotNullOrEmpty(value)
        : elements.map((element) => validateElement(param, kind, element)).find((r) => r);
      if (reason) {
        throw this.error(
          "ParameterArgumentValidationError",
          `Cannot validate argument on parameter '${param.name}'. ${reason}`,
          "InvalidData",
          "ParameterBindingValidationException",
        );
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Validation (Metadata.resx texts)

function validateElement(param: ParamDef, kind: string, element: PSValue): string | undefined {
  if (element === null) return undefined;
  const text = psToString(element);
  if (kind === "set" && param.validateSet) {
    // ValidateSet ignores case by default and joins the set with the list separator ",".
    const ok = param.validateSet.some((v) => v.toLowerCase() === text.toLowerCase());
    if (!ok) {
      return `The argument "${text}" does not belong to the set "${param.validateSet.join(",")}" ` +
        "specified by the ValidateSet attribute. Supply an argument that is in the set and then " +
        "try the command again.";
    }
  }
  if (kind === "range" && param.validateRange && typeof element === "number") {
    const { min, max } = param.validateRange;
    if (typeof min === "number" && element < min) {
      return `The ${text} argument is less than the minimum allowed range of ${min}. Supply an ` +
        `argument that is greater than or equal to ${min} and then try the command again.`;
    }
    if (typeof max === "number" && element > max) {
      return `The ${text} argument is greater than the maximum allowed range of ${max}. Supply ` +
        `an argument that is less than or equal to ${max} and then try the command again.`;
    }
  }
  if (kind === "length" && param.validateLength) {
    const { min, max } = param.validateLength;
    if (text.length < min) {
      return `The character length (${text.length}) of the argument is too short. Specify an ` +
        `argument with a length that is greater than or equal to "${min}", and then try the ` +
        "command again.";
    }
    if (text.length > max) {
      return `The character length of the ${text.length} argument is too long. Shorten the ` +
        `character length of the argument so it is fewer than or equal to "${max}" characters, ` +
        "and then try the command again.";
    }
  }
  if (kind === "pattern" && param.validatePattern) {
    // ValidatePattern's default RegexOptions is IgnoreCase.
    if (!new RegExp(param.validatePattern, "i").test(text)) {
      return `The argument "${text}" does not match the "${param.validatePattern}" pattern. ` +
        `Supply an argument that matches "${param.validatePattern}" and try the command again.`;
    }
  }
  return undefined;
}

function validateCount(param: ParamDef, value: PSValue): string | undefined {
  if (!param.validateCount || value === null) return undefined;
  const count = Array.isArray(value) ? value.length : 1;
  const { min, max } = param.validateCount;
  if (count >= min && count <= max) return undefined;
  if (min === max) {
    return `The parameter requires exactly ${min} value(s) - ${count} value(s) were provided.`;
  }
  return `The parameter requires at least ${min} value(s) and no more than ${max} value(s) - ` +
    `${count} value(s) were provided.`;
}

function validateNotNullOrEmpty(value: PSValue): string | undefined {
  if (value === null || value === "") {
    return "The argument is null or empty. Provide an argument that is not null or empty, and " +
      "then try the command again.";
  }
  if (Array.isArray(value) && (value.length === 0 || value.some((v) => v === null || v === ""))) {
    return "The argument is null, empty, or an element of the argument collection contains a " +
      "null value. Supply a collection that does not contain any null values and then try the " +
      "command again.";
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Conversion (LanguagePrimitives, as far as the served commands need it)

const int32Range = { min: -2147483648, max: 2147483647, name: "Int32" };
const int64Range = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER, name: "Int64" };

function convertArgument(param: ParamDef, raw: PSValue, isCmdlet: boolean): PSValue {
  if (param.bindAsGiven) return raw;
  const element = elementTypeOf(param.type);
  if (element !== null) {
    if (raw === null) return null;
    const items = Array.isArray(raw) ? raw : [raw];
    return items.map((item) => convertScalar(element, item, param, isCmdlet));
  }
  if (raw === null) return isCmdlet ? null : scriptDefault(param.type);
  return convertScalar(param.type, raw, param, isCmdlet);
}

/** What a type-constrained script parameter holds when given $null. */
function scriptDefault(type: string): PSValue {
  switch (type) {
    case "System.String":
      return "";
    case "System.Int32":
    case "System.Int64":
    case "System.Double":
      return 0;
    case "System.Boolean":
      return false;
    case switchType:
      return new PSSwitch(false);
    default:
      return null;
  }
}

function cannotConvertValue(value: PSValue, type: string, inner: string): ConversionFailure {
  return new ConversionFailure(
    `Cannot convert value "${psToString(value)}" to type "${type}". Error: "${inner}"`,
    "convert",
  );
}

function cannotCast(value: PSValue, type: string): ConversionFailure {
  return new ConversionFailure(
    `Cannot convert the "${psToString(value)}" value of type "${dotNetTypeName(value)}" to type ` +
      `"${type}".`,
    "cast",
  );
}

function notBoolean(value: PSValue, type: string): ConversionFailure {
  return new ConversionFailure(
    `Cannot convert value "${dotNetTypeName(value)}" to type "${type}". Boolean parameters ` +
      "accept only Boolean values and numbers, such as $True, $False, 1 or 0.",
    "bool",
  );
}

function convertScalar(type: string, value: PSValue, param: ParamDef, isCmdlet: boolean): PSValue {
  if (param.enumValues) return convertEnum(type, value, param.enumValues);
  switch (type) {
    case "System.Object":
    case "System.Management.Automation.PSObject":
      return value;
    case "System.String":
      if (Array.isArray(value) && isCmdlet) throw cannotCast(value, type);
      return value === null ? null : psToString(value);
    case "System.Int32":
      return toInteger(value, type, int32Range);
    case "System.Int64":
      return toInteger(value, type, int64Range);
    case "System.Double":
      return toDouble(value, type);
    case "System.Boolean":
      if (typeof value === "boolean") return value;
      if (typeof value === "number") return value !== 0;
      if (value instanceof PSSwitch) return value.isPresent;
      throw notBoolean(value, type);
    case switchType:
      if (value instanceof PSSwitch) return value;
      if (typeof value === "boolean") return new PSSwitch(value);
      if (typeof value === "number") return new PSSwitch(value !== 0);
      throw notBoolean(value, type);
    case "System.Collections.Hashtable":
      if (value instanceof PSHashtable) return value;
      throw cannotCast(value, type);
    case credentialType:
      if (value instanceof PSCredential) return value;
      // A string asks the host for the password, which fails without a UI (POWERSHELL-NOTES §7).
      throw new ConversionFailure(
        "A command that prompts the user failed because the host program or the command type " +
          "does not support user interaction. The host was attempting to request confirmation " +
          "with the following message: Enter your credentials.",
        "convert",
      );
    case "System.DateTime":
      return toDateTime(value, type);
    case "System.TimeSpan":
      return toTimeSpan(value, type);
    case "System.Exception":
      if (value instanceof PSException) return value;
      if (typeof value === "string") return new PSException(value);
      throw cannotCast(value, type);
    default:
      throw cannotCast(value, type);
  }
}

/** [int]2.5 is 2: .NET rounds half to even. */
function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const diff = value - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

function parseNumber(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return 0;
  if (/^[+-]?0x[0-9a-f]+$/i.test(trimmed)) {
    const negative = trimmed.startsWith("-");
    const magnitude = parseInt(trimmed.replace(/^[+-]?0x/i, ""), 16);
    return negative ? -magnitude : magnitude;
  }
  if (/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(trimmed)) return Number(trimmed);
  return undefined;
}

function toInteger(
  value: PSValue,
  type: string,
  range: { min: number; max: number; name: string },
): number {
  let n: number | undefined;
  if (typeof value === "number") n = value;
  else if (typeof value === "boolean") n = value ? 1 : 0;
  else if (value instanceof PSSwitch) n = value.isPresent ? 1 : 0;
  else if (value instanceof PSEnum) throw cannotCast(value, type);
  else if (typeof value === "string") {
    n = parseNumber(value);
    if (n === undefined) {
      throw cannotConvertValue(
        value,
        type,
        `The input string '${value}' was not in a correct format.`,
      );
    }
  } else throw cannotCast(value, type);
  const rounded = roundHalfEven(n);
  if (!Number.isFinite(rounded) || rounded < range.min || rounded > range.max) {
    throw cannotConvertValue(
      value,
      type,
      `Value was either too large or too small for an ${range.name}.`,
    );
  }
  return rounded;
}

function toDouble(value: PSValue, type: string): number {
  if (typeof value === "number") return value;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "string") {
    const n = parseNumber(value);
    if (n === undefined) {
      throw cannotConvertValue(
        value,
        type,
        `The input string '${value}' was not in a correct format.`,
      );
    }
    return n;
  }
  throw cannotCast(value, type);
}

function toDateTime(value: PSValue, type: string): PSDateTime {
  if (value instanceof PSDateTime) return value;
  if (typeof value !== "string") throw cannotCast(value, type);
  const text = value.trim();
  // A date without a time or offset is local midnight in .NET (JavaScript would read it as UTC).
  const dateOnly = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  const parsed = dateOnly
    ? new Date(Number(dateOnly[1]), Number(dateOnly[2]) - 1, Number(dateOnly[3]))
    : new Date(text);
  if (Number.isNaN(parsed.getTime())) {
    throw cannotConvertValue(
      value,
      type,
      `String '${value}' was not recognized as a valid DateTime.`,
    );
  }
  return new PSDateTime(parsed, false);
}

function toTimeSpan(value: PSValue, type: string): PSTimeSpan {
  if (value instanceof PSTimeSpan) return value;
  // A number converts through TimeSpan(long ticks).
  if (typeof value === "number" && Number.isInteger(value)) return new PSTimeSpan(value / 10_000);
  if (typeof value === "string") {
    const m = /^\s*(-)?(?:(\d+)\.)?(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,7}))?)?\s*$/.exec(
      value,
    );
    if (m) {
      const [, minus, d, h, mi, s, f] = m;
      const ms = Number(d ?? 0) * 86_400_000 + Number(h) * 3_600_000 + Number(mi) * 60_000 +
        Number(s ?? 0) * 1000 + Number(`0.${f ?? "0"}`) * 1000;
      return new PSTimeSpan(minus ? -ms : ms);
    }
    throw cannotConvertValue(
      value,
      type,
      `String '${value}' was not recognized as a valid TimeSpan.`,
    );
  }
  throw cannotCast(value, type);
}

function convertEnum(type: string, value: PSValue, names: string[]): PSEnum {
  if (value instanceof PSEnum && value.typeName === type) return value;
  if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value < names.length) {
    return new PSEnum(type, names[value] as string);
  }
  if (typeof value === "string") {
    // A flags value such as "ReadOnly, Private" keeps its parts; each must be a member.
    const parts = value.split(",").map((p) => p.trim());
    const matched = parts.map((p) => names.find((n) => n.toLowerCase() === p.toLowerCase()));
    if (matched.every((m) => m !== undefined)) return new PSEnum(type, matched.join(", "));
    const bad = parts[matched.findIndex((m) => m === undefined)] ?? value;
    throw cannotConvertValue(
      value,
      type,
      `Unable to match the identifier name ${bad} to a valid enumerator name. Specify one of the ` +
        `following enumerator names and try again:\n${names.join(", ")}`,
    );
  }
  throw cannotCast(value, type);
}
