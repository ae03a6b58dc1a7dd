/**
 * URI templates of resources (RFC 6570, level 1: `{name}` only): parsed once from the
 * configuration, matched against the URI a client reads. A variable matches one path segment or
 * less (no `/`, `?` or `#`), percent-decoded, as level-1 expansion encodes every reserved character
 * of a value; it ends where the text after it first occurs; what it matched is a parameter value
 * and nothing else. Matching reads the URI once, whatever a client sends.
 *
 * @module
 */

/** A parsed URI template. */
export interface UriTemplate {
  /** The template as written. */
  text: string;
  /** Its variables in order; empty for a plain URI. */
  variables: string[];
  /** The values a URI gives the variables (percent-decoded), or null when it does not match. */
  match(uri: string): Record<string, string> | null;
}

/** Longest URI a template matches, in characters (as browsers and proxies commonly allow). */
export const MAX_URI_LENGTH = 2048;

const EXPRESSION = /\{([^{}]*)\}/g;
const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Parses `text`; a string says why it is not a level-1 template (an operator such as `{+x}`, a
 * name that cannot be a parameter's, a variable twice, an unclosed brace).
 */
export function parseUriTemplate(text: string): UriTemplate | string {
  const variables: string[] = [];
  const literals: string[] = [];
  let last = 0;
  for (const found of text.matchAll(EXPRESSION)) {
    const name = found[1]!;
    if (!VARIABLE.test(name)) {
      return `'{${name}}' is not a level-1 variable: write {Name}, a parameter's name, without operators or modifiers`;
    }
    if (variables.some((v) => v.toLowerCase() === name.toLowerCase())) {
      return `variable '{${name}}' appears twice`;
    }
    // Two variables side by side split a value anywhere: which part is whose is a guess.
    if (variables.length > 0 && found.index === last) {
      return `'{${variables.at(-1)}}{${name}}': variables need text between them`;
    }
    variables.push(name);
    literals.push(text.slice(last, found.index));
    last = found.index + found[0].length;
  }
  literals.push(text.slice(last));
  if (literals.some((literal) => /[{}]/.test(literal))) {
    return "a brace is not part of a {variable}";
  }
  return { text, variables, match: (uri: string) => matchLiterals(uri, variables, literals) };
}

/**
 * The values of `variables` in `uri`, read between `literals` (one more than the variables) in one
 * pass: each variable ends where the text after it first occurs (the last, where the final text
 * ends the URI), is not empty and holds no `/`, `?` or `#`. No backtracking, so a URI of any shape
 * costs its length.
 */
function matchLiterals(
  uri: string,
  variables: string[],
  literals: string[],
): Record<string, string> | null {
  if (uri.length > MAX_URI_LENGTH) return null;
  const [head] = literals as [string];
  if (variables.length === 0) return uri === head ? {} : null;
  if (!uri.startsWith(head)) return null;
  const values: Record<string, string> = {};
  let position = head.length;
  for (const [i, name] of variables.entries()) {
    const after = literals[i + 1]!;
    const last = i === variables.length - 1;
    const end = last
      ? (uri.endsWith(after) ? uri.length - after.length : -1)
      : uri.indexOf(after, position + 1);
    if (end <= position) return null;
    const raw = uri.slice(position, end);
    if (/[/?#]/.test(raw)) return null;
    try {
      values[name] = decodeURIComponent(raw);
    } catch {
      return null;
    }
    position = end + after.length;
  }
  return values;
}
