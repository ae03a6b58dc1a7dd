/**
 * Typed reads of one merged settings tree: each read checks the value's type, takes the key's
 * default and minimum from lib/config_schema.ts unless the caller computes them, records where the
 * value came from (for doctor), and keeps a problem naming the key and the file or environment
 * variable that set it (reading goes on, so that every problem is reported at once). Relative
 * paths are resolved here, by one rule (`Reader.path`).
 *
 * @module
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { settingOf } from "./config_schema.ts";
import { ConfigError } from "./errors.ts";

/** A parsed configuration object. */
export type Tree = Record<string, unknown>;

/** Where a setting came from. */
export type SettingSource = "flag" | "environment" | "file" | "embedded default" | "default";

/** True for a JSON object (not an array, not null). */
export function isTree(value: unknown): value is Tree {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Case-insensitive lookup of a `:`-separated key path. */
export function lookup(tree: Tree, path: string): unknown {
  let node: unknown = tree;
  for (const part of path.split(":")) {
    if (!isTree(node)) return undefined;
    const key = Object.keys(node).find((k) => k.toLowerCase() === part.toLowerCase());
    if (key === undefined) return undefined;
    node = node[key];
  }
  return node;
}

const KEY_ENTRY = /^(Authentication:Schemes:[^:]+:Keys:)([^:]+)(.*)$/i;

/**
 * `path` as a message may show it. An API-key entry's name may be the key itself (PoshMcp's form):
 * unless the entry gives its secret in `Value` or `Sha256`, its name is replaced by its position,
 * `[entry 2]`. Every other path is returned as is.
 */
export function safeKeyPath(tree: Tree, path: string): string {
  const match = KEY_ENTRY.exec(path);
  if (!match) return path;
  const [, keys, id, rest] = match;
  const entry = lookup(tree, `${keys}${id}`);
  const named = isTree(entry) && Object.keys(entry).some((k) => /^(Value|Sha256)$/i.test(k));
  if (named) return path;
  const siblings = lookup(tree, keys!.slice(0, -1));
  const index = isTree(siblings) ? Object.keys(siblings).indexOf(id!) + 1 : 0;
  return `${keys}[entry ${index || "?"}]${rest}`;
}

/** True for a path whose value is an API key or its digest: messages never show the value. */
export function isSecretPath(path: string): boolean {
  return KEY_ENTRY.test(path) && /:(Value|Sha256)$/i.test(path);
}

/** Parses a .NET-style time span (`hh:mm:ss`, `d.hh:mm:ss`, `hh:mm:ss.fff`) into milliseconds. */
export function parseTimeSpan(text: string): number | null {
  const match = /^(?:(\d+)\.)?(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,7}))?$/.exec(text.trim());
  if (!match) return null;
  const [, days = "0", hours, minutes, seconds, fraction = "0"] = match;
  if (Number(minutes) > 59 || Number(seconds) > 59) return null;
  const ms = Number(`0.${fraction}`) * 1000;
  return ((Number(days) * 24 + Number(hours)) * 60 + Number(minutes)) * 60_000 +
    Number(seconds) * 1000 + Math.round(ms);
}

/** Writes milliseconds as a .NET time span, `hh:mm:ss` (with `.fff` when needed). */
export function formatTimeSpan(ms: number): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  const seconds = Math.floor(ms / 1000);
  const text = `${pad(Math.floor(seconds / 3600))}:${pad(Math.floor(seconds / 60) % 60)}:${
    pad(seconds % 60)
  }`;
  return ms % 1000 === 0 ? text : `${text}.${String(ms % 1000).padStart(3, "0")}`;
}

/**
 * More words for a wrong value where a likely meaning is plain: a number of seconds given for a
 * time span gets the span that means it (`60` → "00:01:00"). Empty when there is none.
 */
export function hintFor(key: string, value: unknown): string {
  if (settingOf(key)?.kind !== "timeSpan") return "";
  const seconds = typeof value === "number"
    ? value
    : typeof value === "string" && /^\d+$/.test(value.trim())
    ? Number(value)
    : null;
  if (seconds === null || !Number.isInteger(seconds) || seconds <= 0) return "";
  return `; ${seconds} seconds is "${formatTimeSpan(seconds * 1000)}"`;
}

/**
 * `value` made absolute against `base` (the folder the rule of `Reader.path` picks); with
 * `bareIsName`, a value without a path separator is returned as given (a name to look up).
 */
function resolveSettingPath(
  value: string,
  base: string,
  options: { bareIsName?: boolean } = {},
): string {
  const separated = value.includes("/") || (Deno.build.os === "windows" && value.includes("\\"));
  if (options.bareIsName && !separated) return value;
  return isAbsolute(value) ? value : resolve(base, value);
}

const stringList = z.array(z.string());

/** Reads typed settings from the merged tree, tracking the source of each key. */
export class Reader {
  /** Deprecation warnings, one per deprecated key present. */
  readonly warnings: string[] = [];
  /** Every configuration problem found while reading, in the order found (see `report`). */
  readonly problems: ConfigError[] = [];
  /** The keys (lowercase) whose problem is kept, so each is reported once. */
  #reported = new Set<string>();
  /** Where each key read came from. */
  readonly sources: Record<string, SettingSource> = {};
  /** The value of each key read, as written (undefined when unset). */
  readonly values: Record<string, unknown> = {};

  /**
   * @param tree the merged settings
   * @param layers the environment layer alone, and the file read (null for the embedded default),
   * so each key's source can be told and named in errors
   */
  constructor(readonly tree: Tree, readonly layers: { env: Tree; file: string | null }) {}

  #record(name: string, value: unknown): void {
    this.values[name] = value === "" || value === null ? undefined : value;
    if (value === undefined || value === null || value === "") {
      this.sources[name] ??= "default";
    } else if (lookup(this.layers.env, name) !== undefined) {
      this.sources[name] = "environment";
    } else {
      this.sources[name] = this.layers.file === null ? "embedded default" : "file";
    }
  }

  /** Where the value of `key` was set, in words: an environment variable or the file. */
  originOf(key: string): string {
    if (lookup(this.layers.env, key) !== undefined) {
      return `environment variable ${safeKeyPath(this.tree, key).replaceAll(":", "__")}`;
    }
    return this.layers.file === null
      ? "the embedded default configuration"
      : `'${this.layers.file}'`;
  }

  /** A configuration error about `key`, naming where its value was set. */
  invalid(key: string, message: string): ConfigError {
    return new ConfigError(
      "INVALID_VALUE",
      `Invalid configuration value for '${safeKeyPath(this.tree, key)}' in ${
        this.originOf(key)
      }: ${message}`,
    );
  }

  /** Records the default a key takes when unset, so doctor can show it; returns it. */
  #effective<T>(name: string, fallback: T): T {
    this.values[name] = fallback;
    return fallback;
  }

  /**
   * The default of `key` in lib/config_schema.ts (of the type its kind says, which
   * tests/settings_test.ts checks); a key read without one is a mistake in svc.
   */
  #default<T>(key: string): T {
    const value = settingOf(key)?.default;
    if (value === undefined) throw new Error(`'${key}' has no default in config_schema.ts`);
    return value as T;
  }

  /** The smallest value of `key` in lib/config_schema.ts; an integer without one is a mistake. */
  #min(key: string): number {
    const min = settingOf(key)?.min;
    if (min === undefined) throw new Error(`'${key}' has no minimum in config_schema.ts`);
    return min;
  }

  /**
   * Records that `key` holds `value` where `expected` was wanted, and returns `fallback` so that
   * reading goes on and every problem of the file is reported at once.
   */
  #fail<T>(key: string, value: unknown, expected: string, fallback: T): T {
    const got = isSecretPath(key) ? `a ${typeof value}` : JSON.stringify(value);
    this.report(this.invalid(key, `expected ${expected}, got ${got}${hintFor(key, value)}`), key);
    return fallback;
  }

  /**
   * Keeps a configuration problem for the end of reading (each key's first one only: the shape
   * check and a read may both find it). `key` defaults to the whole message.
   */
  report(error: ConfigError, key: string = error.message): void {
    const id = key.toLowerCase();
    if (this.#reported.has(id)) return;
    this.#reported.add(id);
    this.problems.push(error);
  }

  /**
   * `read()`, or `fallback` with its configuration error kept for the end: a section's cross-key
   * checks throw, and the file's other sections are still read.
   */
  attempt<T>(read: () => T, fallback: T): T {
    try {
      return read();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      this.report(error);
      return fallback;
    }
  }

  /**
   * A path setting, absolute: a relative one is resolved against the folder of the configuration
   * file that set it, else (environment, embedded default) against `cwd`. The one home of that
   * rule (docs/configuration-rules.md, "Paths"). With `bareIsName`, a value without a separator is a
   * name to look up (a module, `pwsh` on PATH) and is returned as given.
   */
  path(key: string, cwd: string, options: { bareIsName?: boolean } = {}): string | null {
    const value = this.optionalString(key);
    if (value === null) return null;
    return resolveSettingPath(value, this.baseFor(key, cwd), options);
  }

  /** A list of path settings, each made absolute by the rule of {@linkcode Reader.path}. */
  paths(key: string, cwd: string, options: { bareIsName?: boolean } = {}): string[] {
    const base = this.baseFor(key, cwd);
    return this.strings(key).map((value) => resolveSettingPath(value, base, options));
  }

  /** The folder a relative path in `key` is resolved against: the file's that set it, else `cwd`. */
  baseFor(key: string, cwd: string): string {
    const fromFile = this.sources[this.raw(key)[0]] === "file" && this.layers.file !== null;
    return fromFile ? dirname(this.layers.file!) : cwd;
  }

  /** Shell keys are read from `ShellConfiguration` first, then PoshMcp's `PowerShellConfiguration`. */
  raw(key: string): [string, unknown] {
    let found: [string, unknown] = [key, lookup(this.tree, key)];
    if (found[1] === undefined && key.startsWith("ShellConfiguration:")) {
      const alias = key.replace("ShellConfiguration:", "PowerShellConfiguration:");
      const value = lookup(this.tree, alias);
      if (value !== undefined) found = [alias, value];
    }
    this.#record(found[0], found[1]);
    return found;
  }

  strings(key: string): string[] {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null) return this.#effective(name, []);
    const parsed = stringList.safeParse(value);
    if (!parsed.success) {
      return this.#fail(name, value, 'an array of strings, like ["Get-Date"]', []);
    }
    return parsed.data.filter((s) => s.trim() !== "");
  }

  optionalString(key: string): string | null {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null || value === "") return null;
    if (typeof value !== "string") return this.#fail(name, value, "a string", null);
    return value;
  }

  /** Text with a default: the key's value, else the default of its setting. */
  text(key: string): string {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null || value === "") {
      return this.#effective(name, this.#default<string>(key));
    }
    if (typeof value !== "string") return this.#fail(name, value, "a string", this.#default(key));
    return value;
  }

  /** One of `choices`, matched case-insensitively and returned as spelled there. */
  choice<T extends string>(key: string, choices: readonly T[], fallback?: T): T {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null || value === "") {
      return this.#effective(name, fallback ?? this.#default<T>(key));
    }
    const found = choices.find((c) =>
      typeof value === "string" && c.toLowerCase() === value.toLowerCase()
    );
    if (found === undefined) {
      const expected = choices.map((c) => `"${c}"`).join(" or ");
      return this.#fail(name, value, expected, fallback ?? this.#default<T>(key));
    }
    return found;
  }

  /** An integer; `fallback` and `min` are the setting's unless given (a computed default). */
  integer(key: string, fallback?: number, min: number = this.#min(key)): number {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null || value === "") {
      return this.#effective(name, fallback ?? this.#default<number>(key));
    }
    const n = typeof value === "string" ? Number(value) : value;
    if (typeof n !== "number" || !Number.isInteger(n) || n < min) {
      return this.#fail(
        name,
        value,
        `an integer >= ${min}`,
        fallback ?? this.#default<number>(key),
      );
    }
    return n;
  }

  /** True or false; `fallback` is the setting's default unless given. */
  boolean(key: string, fallback?: boolean): boolean {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null || value === "") {
      return this.#effective(name, fallback ?? this.#default<boolean>(key));
    }
    if (typeof value === "boolean") return value;
    if (typeof value === "string" && /^(true|false)$/i.test(value)) {
      return value.toLowerCase() === "true";
    }
    return this.#fail(name, value, "true or false", fallback ?? this.#default<boolean>(key));
  }

  /** A time span in ms; `fallbackMs` is the setting's default unless given. */
  timeSpan(key: string, fallbackMs?: number): number {
    const [name, value] = this.raw(key);
    if (value === undefined || value === null || value === "") {
      const ms = fallbackMs ?? parseTimeSpan(this.#default<string>(key))!;
      this.values[name] = formatTimeSpan(ms);
      return ms;
    }
    const ms = typeof value === "string" ? parseTimeSpan(value) : null;
    if (ms === null || ms <= 0) {
      const fallback = fallbackMs ?? parseTimeSpan(this.#default<string>(key))!;
      return this.#fail(name, value, 'a positive time span like "00:05:00" (hh:mm:ss)', fallback);
    }
    return ms;
  }
}
