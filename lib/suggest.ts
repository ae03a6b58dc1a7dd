/**
 * "Did you mean …?": the known names closest to a mistyped one, for configuration keys and tool
 * names. Closeness is edit distance, ignoring case, within a quarter of the name's length (at least
 * 2 edits); a known name that contains the typed one (or is contained in it) also counts.
 *
 * @module
 */

/** Levenshtein distance between two strings. */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

/**
 * The names in `known` closest to `typed`, best first, at most `limit` of them.
 *
 * @param limit how many to return. @default 3
 */
export function closestNames(typed: string, known: Iterable<string>, limit = 3): string[] {
  const wanted = typed.toLowerCase();
  const budget = Math.max(2, Math.floor(wanted.length / 4));
  const scored: { name: string; score: number }[] = [];
  for (const name of known) {
    const candidate = name.toLowerCase();
    const distance = editDistance(wanted, candidate);
    if (distance <= budget) scored.push({ name, score: distance });
    else if (wanted.length >= 3 && (candidate.includes(wanted) || wanted.includes(candidate))) {
      scored.push({ name, score: budget + 1 + Math.abs(candidate.length - wanted.length) / 100 });
    }
  }
  return scored.sort((x, y) => x.score - y.score || x.name.localeCompare(y.name))
    .slice(0, limit)
    .map((s) => s.name);
}
