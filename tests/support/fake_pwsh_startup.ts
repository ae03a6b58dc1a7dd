// Startup scripts for the stand-in worker (protocol §4.1 step 2). The stand-in does not run
// PowerShell; it interprets a small, documented subset, one statement per line:
//
//   (blank)                          ignored
//   # comment                        ignored
//   throw 'message'                  startup fails with that message (also "message" or a bare word)
//   Verb-Noun -Name value ...        a call of a served command with literal arguments
//
// Arguments: -Name value, -Name:value, -Switch, positional values. Values: 'single' ('' is a
// quote), "double" (`" `` `n `t escapes and "" as a quote; no $ allowed: the stand-in does not
// expand), integers and decimals, $true / $false / $null, bare words (strings), and lists of those
// as `a, b` or `@('a', 'b')`. Anything else (pipelines, ;, variables, script blocks, assignments)
// fails the startup loudly instead of being silently misread. Commands run with
// $ErrorActionPreference = 'Stop', so any error ends the startup.

import type { CallArguments } from "./fake_pwsh_binding.ts";
import type { PSValue } from "./fake_pwsh_model.ts";

export type StartupStatement =
  | { kind: "throw"; message: string; bare: boolean }
  | { kind: "call"; command: string; args: RawArgument[] };

/** An argument before the command's parameters are known (a switch does not take a value). */
export type RawArgument =
  | { kind: "name"; name: string; value?: PSValue }
  | { kind: "value"; value: PSValue };

export class UnsupportedStartupLine extends Error {
  constructor(lineNumber: number, line: string, why: string) {
    super(
      `The stand-in worker cannot run startup line ${lineNumber} (${why}): ${line.trim()} ` +
        "(see tests/support/README.md for the supported subset).",
    );
  }
}

type Token =
  | { kind: "word"; text: string }
  | { kind: "param"; name: string; colon: boolean }
  | { kind: "value"; value: PSValue }
  | { kind: "comma" }
  | { kind: "arrayStart" }
  | { kind: "arrayEnd" };

/** Splits a script into statements; throws UnsupportedStartupLine for anything outside the subset. */
export function parseStartupScript(text: string): StartupStatement[] {
  const statements: StartupStatement[] = [];
  text.split(/\r?\n/).forEach((line, index) => {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return;
    const tokens = tokenize(trimmed, index + 1, line);
    statements.push(toStatement(tokens, index + 1, line));
  });
  return statements;
}

function tokenize(text: string, lineNumber: number, line: string): Token[] {
  const fail = (why: string) => new UnsupportedStartupLine(lineNumber, line, why);
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i] as string;
    if (ch === " " || ch === "\t") {
      i++;
    } else if (ch === "#") {
      break; // a trailing comment
    } else if (ch === ",") {
      tokens.push({ kind: "comma" });
      i++;
    } else if (text.startsWith("@(", i)) {
      tokens.push({ kind: "arrayStart" });
      i += 2;
    } else if (ch === ")") {
      tokens.push({ kind: "arrayEnd" });
      i++;
    } else if (ch === "'") {
      let value = "";
      i++;
      while (true) {
        if (i >= text.length) throw fail("unterminated string");
        if (text[i] === "'" && text[i + 1] === "'") {
          value += "'";
          i += 2;
        } else if (text[i] === "'") {
          i++;
          break;
        } else {
          value += text[i++];
        }
      }
      tokens.push({ kind: "value", value });
    } else if (ch === '"') {
      let value = "";
      i++;
      while (true) {
        if (i >= text.length) throw fail("unterminated string");
        const c = text[i] as string;
        if (c === '"' && text[i + 1] === '"') {
          value += '"';
          i += 2;
        } else if (c === '"') {
          i++;
          break;
        } else if (c === "`" && i + 1 < text.length) {
          const e = text[i + 1] as string;
          value += e === "n" ? "\n" : e === "t" ? "\t" : e === "0" ? "\0" : e;
          i += 2;
        } else if (c === "$") {
          throw fail("$ in a double-quoted string would be expanded by PowerShell");
        } else {
          value += c;
          i++;
        }
      }
      tokens.push({ kind: "value", value });
    } else {
      let end = i;
      while (end < text.length && !/[\s,)'"]/.test(text[end] as string)) end++;
      const word = text.slice(i, end);
      i = end;
      if (/[;|{}=(&<>]/.test(word) || word.includes("@(")) {
        throw fail("only one command call with literal arguments per line is supported");
      }
      tokens.push(...wordTokens(word, fail));
    }
  }
  return tokens;
}

function wordTokens(word: string, fail: (why: string) => Error): Token[] {
  const param = /^-([A-Za-z_]\w*)(:?)(.*)$/.exec(word);
  if (param) {
    const token: Token = { kind: "param", name: param[1] as string, colon: param[2] === ":" };
    // -Name:value written without a space: the rest of the word is the value.
    const rest = param[3] as string;
    if (rest === "") return [token];
    if (param[2] !== ":") return [wordValue(word, fail)];
    return [token, wordValue(rest, fail)];
  }
  return [wordValue(word, fail)];
}

function wordValue(word: string, fail: (why: string) => Error): Token {
  if (/^[+-]?\d+$/.test(word)) return { kind: "value", value: Number(word) };
  if (/^[+-]?(\d+\.\d*|\.\d+)$/.test(word)) return { kind: "value", value: Number(word) };
  const lower = word.toLowerCase();
  if (lower === "$true") return { kind: "value", value: true };
  if (lower === "$false") return { kind: "value", value: false };
  if (lower === "$null") return { kind: "value", value: null };
  if (word.startsWith("$")) throw fail("variables are not supported");
  return { kind: "word", text: word };
}

function toStatement(tokens: Token[], lineNumber: number, line: string): StartupStatement {
  const fail = (why: string) => new UnsupportedStartupLine(lineNumber, line, why);
  const first = tokens[0];
  if (!first || first.kind !== "word") throw fail("a line must start with a command name");
  let pos = 1;

  // One value, or a comma list / @(...) of values.
  const readValue = (): PSValue => {
    const items: PSValue[] = [];
    let token = tokens[pos];
    if (token?.kind === "arrayStart") {
      pos++;
      while (tokens[pos] && tokens[pos]?.kind !== "arrayEnd") {
        token = tokens[pos];
        if (token?.kind === "comma") {
          pos++;
          continue;
        }
        items.push(single());
      }
      if (tokens[pos]?.kind !== "arrayEnd") throw fail("unclosed @(");
      pos++;
      return items;
    }
    items.push(single());
    while (tokens[pos]?.kind === "comma") {
      pos++;
      items.push(single());
    }
    return items.length === 1 ? items[0] as PSValue : items;
  };
  const single = (): PSValue => {
    const token = tokens[pos++];
    if (token?.kind === "value") return token.value;
    if (token?.kind === "word") return token.text;
    throw fail("expected a literal value");
  };

  if (first.text.toLowerCase() === "throw") {
    const message = pos < tokens.length ? readValue() : "ScriptHalted";
    if (pos < tokens.length) throw fail("unexpected text after throw");
    return {
      kind: "throw",
      message: Array.isArray(message) ? message.join(" ") : String(message),
      bare: tokens.length === 1,
    };
  }

  const args: RawArgument[] = [];
  while (pos < tokens.length) {
    const token = tokens[pos] as Token;
    if (token.kind === "param") {
      pos++;
      if (token.colon) {
        args.push({ kind: "name", name: token.name, value: readValue() });
      } else {
        args.push({ kind: "name", name: token.name });
      }
    } else if (token.kind === "comma" || token.kind === "arrayEnd") {
      throw fail("unexpected punctuation");
    } else {
      args.push({ kind: "value", value: readValue() });
    }
  }
  return { kind: "call", command: first.text, args };
}

/**
 * Pairs names with values once the command is known: `-Name value` takes the next value unless
 * the parameter is a switch; a lone `-Switch` is $true; a lone non-switch `-Name` calls
 * `missingArgument` (PowerShell's "Missing an argument for parameter" error).
 */
export function resolveStartupArguments(
  args: RawArgument[],
  isSwitch: (name: string) => boolean,
  missingArgument: (name: string) => never,
): CallArguments {
  const named: Array<[string, PSValue]> = [];
  const positional: PSValue[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as RawArgument;
    const next = args[i + 1];
    if (arg.kind === "value") {
      positional.push(arg.value);
    } else if (arg.value !== undefined) {
      named.push([arg.name, arg.value]);
    } else if (isSwitch(arg.name)) {
      named.push([arg.name, true]);
    } else if (next?.kind === "value") {
      named.push([arg.name, next.value]);
      i++;
    } else {
      missingArgument(arg.name);
    }
  }
  return { named, positional };
}
