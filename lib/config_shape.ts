/**
 * Checks a configuration tree against the schema of lib/config_schema.ts: unknown keys become
 * warnings (with a "did you mean"), every wrong value an error naming its key path and the form
 * wanted, and keys are spelled as the schema spells them.
 *
 * @module
 */
import { isSecretPath, safeKeyPath } from "./config_reader.ts";
import { appSettingsSchema, defOf, settingOf, unwrap } from "./config_schema.ts";
import { closestNames } from "./suggest.ts";
import type { z } from "zod";

/** One wrong value {@linkcode checkConfigShape} found. */
export interface ShapeError {
  /** Its key path, as the schema spells it (an API-key entry's name hidden). */
  path: string;
  /** What was expected, in words: "expected …". */
  message: string;
  /** The value, or a stand-in where it may be a secret. */
  value: unknown;
}

/** What {@linkcode checkConfigShape} found. */
export interface ShapeReport {
  /** Unknown keys, each with a suggestion when a known key is close. */
  warnings: string[];
  /** Every wrong value, in the file's order (one per key). */
  errors: ShapeError[];
  /** The tree with keys spelled as the schema spells them, unknown keys left out. */
  canonical: Record<string, unknown>;
}

/** Options of {@linkcode checkConfigShape}. */
export interface ShapeOptions {
  /** Read a string where a list is expected as a one-item list (environment variables). @default false */
  listsFromScalars?: boolean;
}

/** Walks a configuration tree against the schema: unknown keys become warnings, wrong values errors. */
export function checkConfigShape(
  tree: Record<string, unknown>,
  origin: string,
  options: ShapeOptions = {},
): ShapeReport {
  const warnings: string[] = [];
  const walk = {
    root: tree,
    warnings,
    origin,
    listsFromScalars: options.listsFromScalars ?? false,
  };
  const canonical = canonicalize(tree, appSettingsSchema, [], walk) as Record<string, unknown>;
  const parsed = appSettingsSchema.safeParse(canonical);
  if (parsed.success) return { warnings, errors: [], canonical };
  const errors: ShapeError[] = [];
  const seen = new Set<string>();
  for (const issue of parsed.error.issues) {
    const path = issue.path.map(String).join(":");
    if (seen.has(path)) continue;
    seen.add(path);
    let value: unknown = canonical;
    for (const part of issue.path) {
      value = (value as Record<string, unknown> | undefined)?.[String(part)];
    }
    // A key or its digest is never shown, and neither is an entry name that may be the key: nor
    // is any value where one may be (`Keys` given as a list, a scheme or `Schemes` malformed, an
    // entry given as the key itself: `"Keys": {"ops": "<key>"}`).
    if (isSecretPath(path) || (mayHoldKeys(path) && value !== null && value !== undefined)) {
      value = `[${Array.isArray(value) ? "list" : typeof value}]`;
    }
    errors.push({
      path: safeKeyPath(canonical, path),
      message: expectation(path, issue.message),
      value,
    });
  }
  return { warnings, errors, canonical };
}

/**
 * What a key wants, in the words of its kind (`a time span like "00:05:00" (hh:mm:ss)`) rather than
 * the validator's ("Invalid input: expected string, received number"); a key that is no setting
 * keeps the validator's words, tidied.
 */
function expectation(path: string, validator: string): string {
  const setting = settingOf(path);
  if (setting === undefined) {
    const tidy = validator.replace(/^Invalid input: /, "").replace(/, received \w+$/, "")
      .replace(/^expected (object|array)$/, "expected an $1");
    return tidy.startsWith("expected") ? tidy : `expected ${tidy}`;
  }
  const kind = setting.kind;
  const words = typeof kind !== "string" ? kind.map((c) => `"${c}"`).join(" or ") : {
    text: "a string",
    strings: 'an array of strings, like ["Get-Date"]',
    integer: setting.min === undefined ? "an integer" : `an integer >= ${setting.min}`,
    boolean: "true or false",
    timeSpan: 'a time span like "00:05:00" (hh:mm:ss)',
  }[kind];
  return `expected ${words}`;
}

/** True for `Authentication` and the paths under it that may hold API keys or their entry names. */
function mayHoldKeys(path: string): boolean {
  return /^(Authentication(:Schemes(:[^:]+(:Keys(:[^:]+)?)?)?)?)?$/i.test(path);
}

interface Walk {
  /** The whole tree, to tell whether an API-key entry's name may be a key (`safeKeyPath`). */
  root: Record<string, unknown>;
  warnings: string[];
  origin: string;
  listsFromScalars: boolean;
}

function canonicalize(value: unknown, schema: z.ZodType, path: string[], walk: Walk): unknown {
  const { warnings, origin } = walk;
  const def = defOf(unwrap(schema));
  if (walk.listsFromScalars && def.type === "array" && typeof value === "string") return [value];
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  if (def.type === "record") {
    return Object.fromEntries(
      Object.entries(record).map((
        [k, v],
      ) => [k, canonicalize(v, def.valueType!, [...path, k], walk)]),
    );
  }
  if (def.type !== "object") return value;
  const shape = def.shape ?? {};
  const known = Object.keys(shape);
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(record)) {
    const match = known.find((k) => k.toLowerCase() === key.toLowerCase());
    if (match === undefined) {
      if (def.catchall) {
        out[key] = child;
        continue;
      }
      const where = safeKeyPath(walk.root, [...path, key].join(":"));
      const close = closestNames(key, known, 1);
      warnings.push(
        `Unknown configuration key '${where}' in ${origin}${
          close.length > 0
            ? `; did you mean '${safeKeyPath(walk.root, [...path, close[0]].join(":"))}'?`
            : ""
        }`,
      );
      continue;
    }
    out[match] = canonicalize(child, shape[match]!, [...path, match], walk);
  }
  return out;
}
