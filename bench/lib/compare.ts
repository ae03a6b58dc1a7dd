/**
 * The side-by-side summary of issue 30: scenarios record one figure per target for each row of the
 * issue's table ({@linkcode Comparison.put}), and the end of the run prints svc next to every other
 * target that has the same row, with the ratio and the verdict of svc's goal.
 *
 * @module
 */
import type { Table } from "./common.ts";

/** What svc must reach on a row. */
export type Goal =
  /** svc's figure ≤ `max` (an absolute bound in the row's unit). */
  | { kind: "atMost"; max: number }
  /** svc's figure ≥ `min`. */
  | { kind: "atLeast"; min: number }
  /** svc ÷ other ≤ `max` (lower is better). */
  | { kind: "ratioAtMost"; max: number }
  /** svc ÷ other ≥ `min` (higher is better). */
  | { kind: "ratioAtLeast"; min: number }
  /** svc must not fall behind the other (`lowerIsBetter` says which way is behind). */
  | { kind: "keep"; lowerIsBetter: boolean };

/** One row of the summary: a figure of issue 30's table for one transport or level. */
export interface RowSpec {
  /** The row's label, e.g. "HTTP spawn → first tools/call, warm caches (s)". */
  label: string;
  /** svc's goal on this row, with the wording. */
  goal?: { text: string; rule: Goal };
}

/** Formats a figure for the summary: up to three significant digits. */
function figure(value: number): string {
  if (!Number.isFinite(value)) return "–";
  const abs = Math.abs(value);
  return abs >= 100 ? value.toFixed(0) : abs >= 10 ? value.toFixed(1) : value.toFixed(2);
}

/** Verdict of `goal` for svc's figure against one other target's (or none). */
function verdict(rule: Goal, svc: number, other: number | null): string {
  const ratio = other === null || other === 0 ? Number.NaN : svc / other;
  switch (rule.kind) {
    case "atMost":
      return svc <= rule.max ? "meets" : "misses";
    case "atLeast":
      return svc >= rule.min ? "meets" : "misses";
    case "ratioAtMost":
      return Number.isNaN(ratio) ? "–" : ratio <= rule.max ? "meets" : "misses";
    case "ratioAtLeast":
      return Number.isNaN(ratio) ? "–" : ratio >= rule.min ? "meets" : "misses";
    case "keep":
      if (Number.isNaN(ratio)) return "–";
      return (rule.lowerIsBetter ? ratio <= 1 : ratio >= 1) ? "ahead (keep)" : "behind";
  }
}

/** The order of issue 30's table: a row goes where the first prefix it starts with stands. */
const ORDER = [
  "warm get_date over HTTP",
  "get_date calls/s",
  "Start-Sleep 50 ms calls/s",
  "memory of the process tree, idle, HTTP",
  "memory at the peak",
  "HTTP spawn → first tools/call, warm",
  "HTTP spawn → first tools/call, empty",
  "HTTP spawn → first tools/list",
  "stdio spawn → first tools/list",
  "stdio: first tools/call right after",
  "stdio spawn → first tools/call",
  "stdio warm get_date",
  "1 MB string",
  "memory of the process tree, idle, stdio",
];

function rank(label: string): number {
  const i = ORDER.findIndex((prefix) => label.startsWith(prefix));
  return i < 0 ? ORDER.length : i;
}

/** Figures per row and target; the summary lists the rows in the order of issue 30's table. */
export class Comparison {
  readonly #rows = new Map<string, { spec: RowSpec; values: Map<string, number> }>();

  /** Records `target`'s figure on a row (the first figure of a target on a row wins). */
  put(spec: RowSpec, target: string, value: number): void {
    let row = this.#rows.get(spec.label);
    if (!row) this.#rows.set(spec.label, row = { spec, values: new Map() });
    if (!row.values.has(target) && Number.isFinite(value)) row.values.set(target, value);
  }

  /** Figures recorded so far, for the JSON file. */
  toJSON(): Record<string, Record<string, number>> {
    return Object.fromEntries(
      [...this.#rows].map(([label, row]) => [label, Object.fromEntries(row.values)]),
    );
  }

  /**
   * The summary table: one line per row and other target (a row only svc has keeps its goal's
   * verdict with "–" for the other). Null when nothing but svc and the floor was measured.
   */
  table(): Table | null {
    const rows: (string | number)[][] = [];
    const others = new Set<string>();
    for (const { values } of this.#rows.values()) {
      for (const target of values.keys()) if (target !== "svc") others.add(target);
    }
    if (others.size === 0) return null;
    const ordered = [...this.#rows.values()].sort((x, y) =>
      rank(x.spec.label) - rank(y.spec.label)
    );
    for (const { spec, values } of ordered) {
      const svc = values.get("svc");
      const rest = [...values].filter(([target]) => target !== "svc");
      const lines: [string, number | null][] = rest.length > 0 ? rest : [["–", null]];
      for (const [target, other] of lines) {
        rows.push([
          spec.label,
          svc === undefined ? "–" : figure(svc),
          target,
          other === null ? "–" : figure(other),
          svc === undefined || other === null || other === 0 ? "–" : (svc / other).toFixed(2),
          spec.goal?.text ?? "",
          spec.goal && svc !== undefined ? verdict(spec.goal.rule, svc, other) : "",
        ]);
      }
    }
    return {
      id: "Summary",
      title: "issue 30 side by side (medians unless the row says otherwise)",
      columns: ["row", "svc", "other", "other's", "svc ÷ other", "goal for svc", "verdict"],
      rows,
      notes: [
        "Each figure is copied from the scenario table above it (same run). Rows a target could not be measured on are absent for it.",
        "The floor is a reference for svc's start goal and is not listed as an other target.",
      ],
    };
  }
}
