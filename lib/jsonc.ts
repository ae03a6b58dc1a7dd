/**
 * JSON with comments and trailing commas, read by `JSON.parse` once comments and trailing commas are
 * blanked out. This is the path every well-formed configuration file takes; it spares svc's start
 * the module load of a full JSONC parser (7 ms, a tenth of the bare SDK's start), which is imported
 * only to explain a file that does not parse.
 *
 * @module
 */

/**
 * Parses `text` as JSON with `//` and `/* *\/` comments and trailing commas in objects and arrays.
 * Returns `undefined` when it is not such a text (a syntax error, an unclosed comment): the caller
 * then asks a full parser what is wrong.
 */
export function parseJsoncFast(text: string): unknown {
  const json = blankJsoncExtras(text);
  if (json === undefined) return undefined;
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}

/**
 * The text with comments replaced by spaces and each trailing comma (one followed, past whitespace
 * and comments, by `}` or `]`) by a space; strings are kept as they are. Undefined for an unclosed
 * block comment, and for a comma right after `{`, `[` or another comma, which JSONC refuses too.
 */
function blankJsoncExtras(text: string): string | undefined {
  // Most configuration files have neither comments nor commas before a closing bracket.
  if (!/\/|,\s*[}\]]/.test(text)) return text;
  const blanks: [number, number][] = []; // [from, to) ranges to turn into spaces
  let lastSignificant = ""; // the last character outside strings, comments and whitespace
  let pendingComma = -1; // index of a comma that may turn out to be trailing
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      // Skip the string; an unclosed one is left to JSON.parse to refuse.
      i++;
      while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
      i++;
      lastSignificant = '"';
      pendingComma = -1;
      continue;
    }
    if (c === "/" && text[i + 1] === "/") {
      const end = text.indexOf("\n", i);
      const stop = end === -1 ? text.length : end;
      blanks.push([i, stop]);
      i = stop;
      continue;
    }
    if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      if (end === -1) return undefined;
      blanks.push([i, end + 2]);
      i = end + 2;
      continue;
    }
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    if (c === ",") {
      if (lastSignificant === "{" || lastSignificant === "[" || lastSignificant === ",") {
        return undefined;
      }
      pendingComma = i;
    } else if ((c === "}" || c === "]") && pendingComma >= 0) {
      blanks.push([pendingComma, pendingComma + 1]);
    }
    if (c !== ",") pendingComma = -1;
    lastSignificant = c;
    i++;
  }
  // A trailing comma is found after the comments that follow it.
  blanks.sort((a, b) => a[0] - b[0]);
  const out: string[] = [];
  let copied = 0;
  for (const [from, to] of blanks) {
    out.push(text.slice(copied, from), " ".repeat(to - from));
    copied = to;
  }
  out.push(text.slice(copied));
  return out.join("");
}
