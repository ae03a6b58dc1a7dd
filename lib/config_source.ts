/**
 * Where settings come from before they are read: the configuration file (JSON with comments), the
 * embedded default when there is none, and `Section__Sub__Key` environment variables, merged into one
 * case-insensitive tree. Parse errors are given in words, with line and column.
 *
 * @module
 */
import type { ParseError } from "jsonc-parser";
import { resolve } from "node:path";
import { ConfigError } from "./errors.ts";
import { isTree, type Tree } from "./config_reader.ts";
import { FLAGS } from "./config_flags.ts";
import { parseJsoncFast } from "./jsonc.ts";
import embeddedDefaults from "../appsettings.json" with { type: "json" };

/**
 * Top-level sections whose `Section__Key` environment variables are read; none of them reaches a
 * worker (`lib/worker_env.ts`).
 */
export const SETTING_SECTIONS: readonly string[] = [
  "ShellConfiguration",
  "PowerShellConfiguration",
  "McpServer",
  "Logging",
  "Authentication",
];

/** The file read (absolute), or null for the embedded default, and its tree. */
export interface ConfigFile {
  tree: Tree;
  path: string | null;
}

/**
 * Reads `--config` (else `SVC_CONFIG`, else `<cwd>/appsettings.json`, else the embedded default).
 *
 * @throws {ConfigError} `UNREADABLE_FILE` or `INVALID_FILE`, naming the file and where it was given.
 */
export async function readConfigFile(
  flag: string | undefined,
  env: Record<string, string>,
  cwd: string,
): Promise<ConfigFile> {
  const { flag: option, env: variable } = FLAGS.config;
  const explicit = flag ?? env[variable];
  // Absolute, so logs and doctor name exactly the file that was read.
  const candidate = explicit === undefined ? `${cwd}/appsettings.json` : resolve(cwd, explicit);
  let text: string;
  try {
    text = await Deno.readTextFile(candidate);
  } catch (error) {
    if (explicit === undefined && error instanceof Deno.errors.NotFound) {
      return { tree: structuredClone(embeddedDefaults) as Tree, path: null };
    }
    const source = flag !== undefined ? option : variable;
    throw new ConfigError(
      "UNREADABLE_FILE",
      `Cannot read configuration file '${candidate}' given by ${source}: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { cause: error },
    );
  }
  return { tree: await parseConfigText(text, candidate), path: candidate };
}

/** What each parser error means, in words a user can act on. */
const PARSE_ERROR_WORDS: Record<string, string> = {
  InvalidSymbol: "unexpected {token} (property names and strings need double quotes)",
  InvalidNumberFormat: "malformed number",
  PropertyNameExpected: "expected a property name in double quotes",
  ValueExpected: "expected a value",
  ColonExpected: "expected ':' after the property name",
  CommaExpected: "expected ',' between entries",
  CloseBraceExpected: "expected '}'",
  CloseBracketExpected: "expected ']'",
  EndOfFileExpected: "expected the end of the file after the top-level object",
  InvalidCommentToken: "malformed comment",
  UnexpectedEndOfComment: "a /* comment is not closed with */",
  UnexpectedEndOfString: "a string is not closed with '\"'",
  UnexpectedEndOfNumber: "a number ends too early",
  InvalidUnicode: "malformed \\u escape",
  InvalidEscapeCharacter: "unknown escape after a backslash",
  InvalidCharacter: "a control character inside a string (write it escaped)",
};

/**
 * Parses the text of a configuration file (JSON with comments and trailing commas).
 *
 * @throws {ConfigError} `INVALID_FILE` naming the file, what was wrong, and its line and column.
 */
export async function parseConfigText(text: string, path: string): Promise<Tree> {
  // Windows editors and PowerShell 5's Out-File write a UTF-8 byte-order mark.
  if (text.startsWith("\uFEFF")) text = text.slice(1);
  if (text.trim() === "") {
    throw new ConfigError(
      "INVALID_FILE",
      `Configuration file '${path}' is empty: it must hold a JSON object (run 'svc create-config --force' for a complete one)`,
    );
  }
  const tree = parseJsoncFast(text) ?? await parseWithErrors(text, path);
  if (!isTree(tree)) {
    throw new ConfigError(
      "INVALID_FILE",
      `Configuration file '${path}' must hold a JSON object, not ${
        Array.isArray(tree) ? "an array" : JSON.stringify(tree)
      }`,
    );
  }
  return tree;
}

/** The full JSONC parser, for a text the fast path refused: its first error, in words, or the value. */
async function parseWithErrors(text: string, path: string): Promise<unknown> {
  const { parse, printParseErrorCode } = await import("jsonc-parser");
  const errors: ParseError[] = [];
  const tree = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first) {
    const before = text.slice(0, first.offset).split("\n");
    const line = before.length;
    const column = before[before.length - 1]!.length + 1;
    const token = JSON.stringify(
      text.slice(first.offset, first.offset + Math.min(first.length, 20)),
    );
    const words = (PARSE_ERROR_WORDS[printParseErrorCode(first.error)] ?? "malformed JSON")
      .replace("{token}", token);
    throw new ConfigError(
      "INVALID_FILE",
      `Cannot parse configuration file '${path}': ${words} at line ${line}, column ${column}`,
    );
  }
  return tree;
}

/**
 * Builds a tree from `Section__Sub__Key` variables; numeric segments (`__0`) become array items.
 *
 * @throws {ConfigError} `INVALID_VALUE` when one variable sets a key inside another's value
 * (`McpServer__Port` and `McpServer__Port__X`), which no tree can hold.
 */
export function envTree(env: Record<string, string>): Tree {
  const tree: Tree = {};
  const names = Object.keys(env).filter((name) =>
    name.includes("__") &&
    SETTING_SECTIONS.some((s) => s.toLowerCase() === name.split("__")[0]!.toLowerCase())
  );
  for (const name of names) {
    const inside = names.find((other) => other.startsWith(`${name}__`));
    if (inside !== undefined) {
      throw new ConfigError(
        "INVALID_VALUE",
        `Environment variable ${inside} sets a key inside ${name}, which another variable sets to a value; unset one of them`,
      );
    }
  }
  for (const name of names) {
    const value = env[name]!;
    const parts = name.split("__");
    let node: Tree = tree;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) node[part] = value;
      else node = (node[part] ??= {}) as Tree;
    });
  }
  return arraysFromIndexes(tree) as Tree;
}

function arraysFromIndexes(node: unknown): unknown {
  if (node === null || typeof node !== "object") return node;
  const entries = Object.entries(node as Tree).map(([k, v]) => [k, arraysFromIndexes(v)] as const);
  if (entries.length > 0 && entries.every(([k]) => /^\d+$/.test(k))) {
    return entries.sort(([a], [b]) => Number(a) - Number(b)).map(([, v]) => v);
  }
  return Object.fromEntries(entries);
}

/** Merges `top` over `base`, matching keys case-insensitively; arrays and scalars replace. */
export function mergeTrees(base: Tree, top: Tree): Tree {
  const out: Tree = { ...base };
  for (const [key, value] of Object.entries(top)) {
    const existing = Object.keys(out).find((k) => k.toLowerCase() === key.toLowerCase());
    const current = existing === undefined ? undefined : out[existing];
    const merged = isTree(current) && isTree(value) ? mergeTrees(current, value) : value;
    if (existing !== undefined && existing !== key) delete out[existing];
    out[existing ?? key] = merged;
  }
  return out;
}
