/**
 * URI templates of resources (RFC 6570, level 1: `{name}` only): parsed once from the
 * configuration, matched against the URI a client reads. A variable matches one path segment or
 * less (no `/`, `?` or `#`), percent-decoded, as level-1 expansion encodes every reserved character
 * of a value; what it matched is a parameter value and nothing else.
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

const EXPRESSION = /\{([^{}]*)\}/g;
const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Parses `text`; a string says why it is not a level-1 template (an operator such as `{+x}`, a
 * name that cannot be a parameter's, a variable twice, an unclosed brace).
 */
export function parseUriTemplate(text: string): UriTemplate | string {
  const variables: string[] = [];
  let pattern = "";
  let last = 0;
  for (const found of text.matchAll(EXPRESSION)) {
    const name = found[1]!;
    if (!VARIABLE.test(name)) {
      return `'{${name}}' is not a level-1 variable: write {Name}, a parameter's name, without operators or modifiers`;
    }
    if (variables.some((v) => v.toLowerCase() === name.toLowerCase())) {
      return `variable '{${name}}' appears twice`;
    }
    variables.push(name);
    pattern += escape(text.slice(last, found.index)) + "([^/?#]+)";
    last = found.index + found[0].length;
  }
  const rest = text.slice(last);
  if (/[{}]/.test(rest) || /[{}]/.test(text.replace(EXPRESSION, ""))) {
    return "a brace is not part of a {variable}";
  }
  pattern += escape(rest);
  const regex = new RegExp(`^${pattern}$`);
  return {
    text,
    variables,
    match(uri: string) {
      const found = regex.exec(uri);
      if (found === null) return null;
      const values: Record<string, string> = {};
      for (const [i, name] of variables.entries()) {
        try {
          values[name] = decodeURIComponent(found[i + 1]!);
        } catch {
          return null;
        }
      }
      return values;
    },
  };
}

function escape(literal: string): string {
  return literal.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
