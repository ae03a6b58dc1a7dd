/**
 * PowerShell's wildcards (`*`, `?`, `[a-z]`, backtick escapes) as regular expressions, for the
 * include and exclude patterns of the configuration: the catalog selects commands with them, and
 * `update-config` tells when a command it added is hidden by one.
 *
 * @module
 */
/**
 * Compiles a PowerShell wildcard (`*`, `?`, `[a-z]`, backtick escapes) into an anchored,
 * case-insensitive regular expression.
 */
export function wildcard(pattern: string): RegExp {
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "`" && i + 1 < pattern.length) source += escapeRegExp(pattern[++i]!);
    else if (c === "*") source += ".*";
    else if (c === "?") source += ".";
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end < 0) source += "\\[";
      else {
        source += `[${pattern.slice(i + 1, end).replace(/[\\\]^]/g, "\\$&")}]`;
        i = end;
      }
    } else source += escapeRegExp(c);
  }
  return new RegExp(`^${source}$`, "i");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}
