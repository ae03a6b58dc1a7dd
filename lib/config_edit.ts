/**
 * In-place edits of `svc update-config` to the command lists of a configuration file (`Commands`,
 * `Modules`, `IncludePatterns`, `ExcludePatterns`). Edits keep the file's comments, indentation,
 * line endings and trailing-comma style, and are written atomically.
 *
 * jsonc-parser's own `modify` is not used for the edits: it reformats inline arrays, moves a
 * trailing `// comment` onto the inserted line, and, removing from an inline array, can produce
 * invalid JSON. The edits here are computed from its syntax tree instead, and each edited text is
 * parsed again before anything is written.
 *
 * @module
 */
import { applyEdits, type Edit, type Node, type ParseError, parseTree } from "jsonc-parser";
import { writeFileAtomically } from "./atomic_write.ts";
import { requestWarnings } from "./config_edit_warnings.ts";
import { parseConfigText } from "./config.ts";
import { ConfigError } from "./errors.ts";

/**
 * Edits of {@linkcode updateConfig}: values to add to or remove from the shell lists. Values are
 * trimmed and compared case-insensitively, as PowerShell compares command and module names.
 */
export interface ConfigChanges {
  /** Command names to add to `ShellConfiguration:Commands`. @default [] (flag `--add-command`) */
  addCommands?: string[];
  /** Command names to remove from `Commands` (and `CommandNames`). @default [] (flag `--remove-command`) */
  removeCommands?: string[];
  /** Wildcards to add to `ShellConfiguration:IncludePatterns`. @default [] (flag `--add-include-pattern`) */
  addIncludePatterns?: string[];
  /** Wildcards to remove from `IncludePatterns`. @default [] (flag `--remove-include-pattern`) */
  removeIncludePatterns?: string[];
  /** Wildcards to add to `ShellConfiguration:ExcludePatterns`. @default [] (flag `--add-exclude-pattern`) */
  addExcludePatterns?: string[];
  /** Wildcards to remove from `ExcludePatterns`. @default [] (flag `--remove-exclude-pattern`) */
  removeExcludePatterns?: string[];
  /** Module names to add to `ShellConfiguration:Modules`. @default [] (flag `--add-module`) */
  addModules?: string[];
  /** Module names to remove from `Modules`. @default [] (flag `--remove-module`) */
  removeModules?: string[];
}

/** One value that {@linkcode updateConfig} added or removed. */
export interface ConfigListChange {
  /** Key path of the array as spelled in the file, e.g. `ShellConfiguration:Commands`. */
  key: string;
  /** The value: as given when added, as written in the file when removed. */
  value: string;
}

/** One requested value that needed no edit. */
export interface ConfigListUnchanged extends ConfigListChange {
  /** `already present` for an addition (value as written in the file), `not present` for a removal (value as given). */
  reason: "already present" | "not present";
}

/** What {@linkcode updateConfig} did, for the CLI to print ({@linkcode formatChangeReport}). */
export interface ConfigChangeReport {
  /** The file edited, as given. */
  path: string;
  /** True when the file was rewritten; false leaves it byte for byte as it was. */
  changed: boolean;
  /** Values added, in request order. */
  added: ConfigListChange[];
  /** Values removed, in request order. */
  removed: ConfigListChange[];
  /** Requested values that needed no edit. */
  unchanged: ConfigListUnchanged[];
  /**
   * What the file now asks for that svc will not do, one sentence each: a command (or include
   * pattern) requested here that an exclude pattern hides, naming the pattern and the command that
   * would un-hide it; a module path requested here where there is nothing.
   */
  warnings: string[];
}

const SHELL_SECTION = "ShellConfiguration";
const POSH_SECTION = "PowerShellConfiguration";

/** The shell lists `update-config` edits; `names` are the array keys read for each, in preference order. */
const LISTS = [
  { names: ["Commands", "CommandNames"], add: "addCommands", remove: "removeCommands" },
  { names: ["Modules"], add: "addModules", remove: "removeModules" },
  { names: ["IncludePatterns"], add: "addIncludePatterns", remove: "removeIncludePatterns" },
  { names: ["ExcludePatterns"], add: "addExcludePatterns", remove: "removeExcludePatterns" },
] as const satisfies readonly {
  names: readonly string[];
  add: keyof ConfigChanges;
  remove: keyof ConfigChanges;
}[];

type ListSpec = (typeof LISTS)[number];

/** A parsed file under edit: its text (without BOM), syntax tree and the layout found in it. */
interface Draft {
  path: string;
  text: string;
  root: Node;
  eol: string;
  indent: string;
}

function parseDraft(path: string, text: string): Node {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0 || root === undefined || root.type !== "object") {
    // The edits below are meant to keep the file valid; refuse to write one that is not.
    throw new Error(
      `Editing configuration file '${path}' produced invalid JSON; nothing was written`,
    );
  }
  return root;
}

function apply(draft: Draft, edits: Edit[]): void {
  draft.text = applyEdits(draft.text, edits);
  draft.root = parseDraft(draft.path, draft.text);
}

/** The indentation unit of a file: a tab, or the smallest run of leading spaces. @default two spaces */
function detectIndent(text: string): string {
  let smallest = Infinity;
  for (const line of text.split(/\r?\n/)) {
    const match = /^([ \t]+)([^\s*])/.exec(line);
    if (!match) continue;
    const lead = match[1]!;
    if (lead.startsWith("\t")) return "\t";
    smallest = Math.min(smallest, lead.length);
  }
  return smallest === Infinity ? "  " : " ".repeat(smallest);
}

function keyOf(property: Node): string {
  return String(property.children?.[0]?.value);
}

/** The first property of an object node whose key matches `name` case-insensitively. */
function findProperty(object: Node | undefined, name: string): Node | undefined {
  if (object?.type !== "object") return undefined;
  return object.children?.find((p) => keyOf(p).toLowerCase() === name.toLowerCase());
}

function valueOf(property: Node): Node {
  return property.children![1]!;
}

interface Section {
  property: Node;
  object: Node;
  posh: boolean;
}

/** `ShellConfiguration` and PoshMcp's `PowerShellConfiguration`, when present; both must be objects. */
function sectionsOf(draft: Draft): Section[] {
  const sections: Section[] = [];
  for (const name of [SHELL_SECTION, POSH_SECTION]) {
    const property = findProperty(draft.root, name);
    if (property === undefined) continue;
    const object = valueOf(property);
    if (object.type !== "object") {
      throw new ConfigError(
        "INVALID_VALUE",
        `Cannot update configuration file '${draft.path}': '${
          keyOf(property)
        }' must be an object, not ${describe(object)}`,
      );
    }
    sections.push({ property, object, posh: name === POSH_SECTION });
  }
  return sections;
}

function describe(node: Node): string {
  if (node.type === "null") return "null";
  return `${/^[aeiou]/.test(node.type) ? "an" : "a"} ${node.type}`;
}

/** One array key as it exists in the file. */
interface ListKey {
  section: Section;
  property: Node;
  key: string;
}

/**
 * The array keys svc reads for a list, mirroring `config.ts`: each name is looked up in
 * `ShellConfiguration` first, then in `PowerShellConfiguration`.
 */
function effectiveKeys(draft: Draft, list: ListSpec): ListKey[] {
  const sections = sectionsOf(draft);
  const keys: ListKey[] = [];
  for (const name of list.names) {
    for (const section of sections) {
      const property = findProperty(section.object, name);
      if (property === undefined) continue;
      const key = `${keyOf(section.property)}:${keyOf(property)}`;
      const value = valueOf(property);
      if (value.type !== "array" && value.type !== "string" && value.type !== "null") {
        throw new ConfigError(
          "INVALID_VALUE",
          `Cannot update configuration file '${draft.path}': '${key}' must be an array of strings, not ${
            describe(value)
          }`,
        );
      }
      keys.push({ section, property, key });
      break;
    }
  }
  return keys;
}

/** String items of a list key; a single string counts as a one-item list, as `config.ts` reads it. */
function itemsOf(property: Node): { value: string; index: number }[] {
  const value = valueOf(property);
  if (value.type === "string") return [{ value: String(value.value), index: -1 }];
  if (value.type !== "array") return [];
  return (value.children ?? []).flatMap((child, index) =>
    child.type === "string" ? [{ value: String(child.value), index }] : []
  );
}

/** The array name a section uses for a list: `CommandNames` for commands in PoshMcp's section. */
function arrayName(section: Section | undefined, list: ListSpec): string {
  return section?.posh && list.names.length > 1 ? list.names[1]! : list.names[0];
}

/** The key where a list's additions go, creating the section and the array when missing. */
function ensureTarget(draft: Draft, list: ListSpec): ListKey {
  const keys = effectiveKeys(draft, list);
  const primary = sectionsOf(draft)[0];
  const inPrimary = keys.filter((k) => k.section.property === primary?.property);
  let target = inPrimary.find((k) => same(keyOf(k.property), arrayName(primary, list))) ??
    inPrimary[0] ?? keys[0];
  if (target === undefined) {
    let section = primary;
    if (section === undefined) {
      apply(draft, appendMember(draft, draft.root, `${JSON.stringify(SHELL_SECTION)}: {}`));
      section = sectionsOf(draft)[0]!;
    }
    const name = arrayName(section, list);
    apply(draft, appendMember(draft, section.object, `${JSON.stringify(name)}: []`));
    target = effectiveKeys(draft, list).find((k) => keyOf(k.property) === name)!;
  }
  return toArray(draft, list, target);
}

/** Turns a string or null list value into an array holding the same items. */
function toArray(draft: Draft, list: ListSpec, listKey: ListKey): ListKey {
  const value = valueOf(listKey.property);
  if (value.type === "array") return listKey;
  const items = itemsOf(listKey.property).map((i) => i.value);
  apply(draft, [{ offset: value.offset, length: value.length, content: "[]" }]);
  for (const item of items) {
    const fresh = effectiveKeys(draft, list).find((k) => k.key === listKey.key)!;
    apply(draft, appendMember(draft, valueOf(fresh.property), JSON.stringify(item)));
  }
  return effectiveKeys(draft, list).find((k) => k.key === listKey.key)!;
}

/** Leading blanks of the line holding `offset`. */
function lineIndent(text: string, offset: number): string {
  const start = text.lastIndexOf("\n", offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(start))![0];
}

function skipBlanks(text: string, offset: number): number {
  let i = offset;
  while (text[i] === " " || text[i] === "\t") i++;
  return i;
}

/**
 * From the end of a member: the offset of the comma that follows it, if any, and the offset of the
 * line end when only blanks and a comment separate them from it.
 */
function scanAfter(text: string, offset: number): { comma: number | null; lineEnd: number | null } {
  let i = skipBlanks(text, offset);
  let comma: number | null = null;
  if (text[i] === ",") {
    comma = i;
    i = skipBlanks(text, i + 1);
  }
  if (text.startsWith("//", i)) {
    while (i < text.length && text[i] !== "\n" && text[i] !== "\r") i++;
  } else if (text.startsWith("/*", i)) {
    const end = text.indexOf("*/", i + 2);
    if (end !== -1 && !/[\r\n]/.test(text.slice(i, end))) i = skipBlanks(text, end + 2);
  }
  const atLineEnd = i >= text.length || text[i] === "\n" || text[i] === "\r";
  return { comma, lineEnd: atLineEnd ? i : null };
}

function lineBreakLength(text: string, offset: number): number {
  if (text.startsWith("\r\n", offset)) return 2;
  return offset < text.length ? 1 : 0;
}

/** Whether a container's members sit on lines of their own (an empty container follows its parent). */
function isMultiLine(text: string, container: Node): boolean {
  const last = container.children?.at(-1);
  if (last !== undefined) return /\n/.test(text.slice(container.offset, last.offset + last.length));
  const parent = container.parent?.parent;
  return parent === undefined ||
    /\n/.test(text.slice(parent.offset, parent.offset + parent.length));
}

/** Edits that add one member (a JSON value, or `"key": value`) at the end of an array or object. */
function appendMember(draft: Draft, container: Node, member: string): Edit[] {
  const { text, eol, indent } = draft;
  const open = container.offset;
  const close = container.offset + container.length - 1;
  const last = container.children?.at(-1);
  const multiLine = isMultiLine(text, container);
  if (last === undefined) {
    if (!multiLine) return [{ offset: open + 1, length: close - open - 1, content: member }];
    const base = lineIndent(text, open);
    const inner = text.slice(open + 1, close);
    if (/\n/.test(inner)) {
      // Keep whatever the empty container holds (comments), after the new member.
      return [{ offset: open + 1, length: 0, content: `${eol}${base}${indent}${member}` }];
    }
    return [{
      offset: open + 1,
      length: close - open - 1,
      content: `${eol}${base}${indent}${member}${eol}${base}`,
    }];
  }
  const lastEnd = last.offset + last.length;
  if (!multiLine) return [{ offset: lastEnd, length: 0, content: `, ${member}` }];
  const memberIndent = lineIndent(text, last.offset);
  const after = scanAfter(text, lastEnd);
  const trailingComma = after.comma !== null ? "," : "";
  if (after.lineEnd === null) {
    const at = after.comma !== null ? after.comma + 1 : lastEnd;
    return [{
      offset: at,
      length: 0,
      content: `${after.comma !== null ? "" : ","}${eol}${memberIndent}${member}${trailingComma}`,
    }];
  }
  const edits: Edit[] = [];
  if (after.comma === null) edits.push({ offset: lastEnd, length: 0, content: "," });
  edits.push({
    offset: after.lineEnd,
    length: 0,
    content: `${eol}${memberIndent}${member}${trailingComma}`,
  });
  return edits;
}

/** Edits that remove the array item at `index`, with its line and its comment when it has a line of its own. */
function removeItem(draft: Draft, array: Node, index: number): Edit[] {
  const { text } = draft;
  const children = array.children ?? [];
  const child = children[index]!;
  const start = child.offset;
  const end = child.offset + child.length;
  const previous = children[index - 1];
  const next = children[index + 1];
  const lineStart = text.lastIndexOf("\n", start - 1) + 1;
  const after = scanAfter(text, end);
  const alone = /^[ \t]*$/.test(text.slice(lineStart, start)) && after.lineEnd !== null;
  if (alone && after.lineEnd !== null) {
    const lineEnd = after.lineEnd + lineBreakLength(text, after.lineEnd);
    const open = array.offset;
    const close = array.offset + array.length - 1;
    if (
      children.length === 1 &&
      /^\s*$/.test(text.slice(open + 1, lineStart) + text.slice(lineEnd, close))
    ) {
      return [{ offset: open + 1, length: close - open - 1, content: "" }];
    }
    const edits: Edit[] = [{ offset: lineStart, length: lineEnd - lineStart, content: "" }];
    if (next === undefined && after.comma === null && previous !== undefined) {
      const comma = scanAfter(text, previous.offset + previous.length).comma;
      if (comma !== null) edits.push({ offset: comma, length: 1, content: "" });
    }
    return edits;
  }
  if (next !== undefined) return [{ offset: start, length: next.offset - start, content: "" }];
  if (previous !== undefined) {
    const previousEnd = previous.offset + previous.length;
    return [{ offset: previousEnd, length: end - previousEnd, content: "" }];
  }
  const stop = after.comma !== null ? after.comma + 1 : end;
  return [{ offset: start, length: stop - start, content: "" }];
}

function same(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** Trimmed, case-insensitively distinct values; an empty one is refused. */
function cleanValues(path: string, values: readonly string[] | undefined, what: string): string[] {
  const out: string[] = [];
  for (const raw of values ?? []) {
    const value = raw.trim();
    if (value === "") {
      throw new ConfigError(
        "INVALID_VALUE",
        `Cannot update configuration file '${path}': an empty value was given to ${what}`,
      );
    }
    if (!out.some((v) => same(v, value))) out.push(value);
  }
  return out;
}

/**
 * Edits the shell lists of the configuration file at `path` in place, keeping its comments,
 * indentation, line endings and trailing commas, and writes it atomically (only when something
 * changed). Adding a value already present (in any letter case) and removing a missing one are
 * no-ops. The section and arrays are created when missing. A PoshMcp file is edited in its own
 * `PowerShellConfiguration` section and its existing `CommandNames` (or `Commands`) array; commands
 * are removed from every array svc reads them from.
 *
 * @throws {ConfigError} `UNREADABLE_FILE` when the file cannot be read or written, `INVALID_FILE`
 * when it does not parse (naming the line), `INVALID_VALUE` when a list holds something other than
 * strings, a value is empty, or one value is both added and removed.
 */
export async function updateConfig(
  path: string,
  changes: ConfigChanges,
): Promise<ConfigChangeReport> {
  const requests = LISTS.map((list) => ({
    list,
    add: cleanValues(path, changes[list.add], list.add),
    remove: cleanValues(path, changes[list.remove], list.remove),
  }));
  for (const { list, add, remove } of requests) {
    const both = add.find((a) => remove.some((r) => same(a, r)));
    if (both !== undefined) {
      throw new ConfigError(
        "INVALID_VALUE",
        `Cannot update configuration file '${path}': '${both}' is both in ${list.add} and in ${list.remove}`,
      );
    }
  }
  let original: string;
  try {
    original = await Deno.readTextFile(path);
  } catch (error) {
    const hint = error instanceof Deno.errors.NotFound
      ? " (create one with 'svc create-config')"
      : "";
    throw new ConfigError(
      "UNREADABLE_FILE",
      `Cannot read configuration file '${path}': ${
        error instanceof Error ? error.message : String(error)
      }${hint}`,
      { cause: error },
    );
  }
  const bom = original.startsWith("\uFEFF") ? "\uFEFF" : "";
  const text = original.slice(bom.length);
  await parseConfigText(text, path); // throws INVALID_FILE naming the line
  const draft: Draft = {
    path,
    text,
    root: parseDraft(path, text),
    eol: text.includes("\r\n") ? "\r\n" : "\n",
    indent: detectIndent(text),
  };
  const report: ConfigChangeReport = {
    path,
    changed: false,
    added: [],
    removed: [],
    unchanged: [],
    warnings: [],
  };
  for (const { list, add, remove } of requests) {
    for (const value of remove) removeValue(draft, list, value, report);
    for (const value of add) addValue(draft, list, value, report);
  }
  report.warnings = warningsOf(draft, requests);
  const updated = bom + draft.text;
  report.changed = updated !== original;
  if (report.changed) await writeFileAtomically(path, updated);
  return report;
}

/** The items of a list as the edited file has them, from every key svc reads it from. */
function listItems(draft: Draft, list: ListSpec): string[] {
  return effectiveKeys(draft, list).flatMap((k) => itemsOf(k.property).map((i) => i.value));
}

/** Warnings for what was asked to be there (`lib/config_edit_warnings.ts`), from the edited file. */
function warningsOf(draft: Draft, requests: { list: ListSpec; add: string[] }[]): string[] {
  const asked = (list: ListSpec) => requests.find((r) => r.list === list)?.add ?? [];
  return requestWarnings({
    path: draft.path,
    commands: asked(LISTS[0]),
    modules: asked(LISTS[1]),
    includes: asked(LISTS[2]),
    excludes: listItems(draft, LISTS[3]),
    excludeKey: effectiveKeys(draft, LISTS[3])[0]?.key ?? plannedKey(draft, LISTS[3]),
  });
}

/** The key path a list is reported under when it has no array yet. */
function plannedKey(draft: Draft, list: ListSpec): string {
  const section = sectionsOf(draft)[0];
  return `${section ? keyOf(section.property) : SHELL_SECTION}:${arrayName(section, list)}`;
}

function removeValue(
  draft: Draft,
  list: ListSpec,
  value: string,
  report: ConfigChangeReport,
): void {
  let removedAny = false;
  for (;;) {
    const keys = effectiveKeys(draft, list);
    const hit = keys.flatMap((k) =>
      itemsOf(k.property).filter((i) =>
        same(i.value, value)
      ).map((i) => ({ key: k, item: i }))
    )[0];
    if (hit === undefined) break;
    const { key, item } = hit;
    const node = valueOf(key.property);
    if (item.index === -1) {
      apply(draft, [{ offset: node.offset, length: node.length, content: "[]" }]);
    } else apply(draft, removeItem(draft, node, item.index));
    if (!report.removed.some((r) => r.key === key.key && same(r.value, item.value))) {
      report.removed.push({ key: key.key, value: item.value });
    }
    removedAny = true;
  }
  if (!removedAny) {
    const key = effectiveKeys(draft, list)[0]?.key ?? plannedKey(draft, list);
    report.unchanged.push({ key, value, reason: "not present" });
  }
}

function addValue(draft: Draft, list: ListSpec, value: string, report: ConfigChangeReport): void {
  for (const key of effectiveKeys(draft, list)) {
    const found = itemsOf(key.property).find((i) => same(i.value, value));
    if (found !== undefined) {
      report.unchanged.push({ key: key.key, value: found.value, reason: "already present" });
      return;
    }
  }
  const target = ensureTarget(draft, list);
  apply(draft, appendMember(draft, valueOf(target.property), JSON.stringify(value)));
  report.added.push({ key: target.key, value });
}

/**
 * The lines `svc update-config` prints: `+ key: value` per addition, `- key: value` per removal,
 * `= key: value (already present)` or `(not present)` per no-op, then a summary line that says
 * `No changes to '<path>'` when the file was left untouched, then `Warning: …` per warning.
 */
export function formatChangeReport(report: ConfigChangeReport): string {
  const lines = [
    ...report.added.map((c) => `+ ${c.key}: ${c.value}`),
    ...report.removed.map((c) => `- ${c.key}: ${c.value}`),
    ...report.unchanged.map((c) => `= ${c.key}: ${c.value} (${c.reason})`),
  ];
  if (report.changed) {
    lines.push(
      `Updated '${report.path}': ${report.added.length} added, ${report.removed.length} removed`,
    );
  } else lines.push(`No changes to '${report.path}'`);
  lines.push(...report.warnings.map((warning) => `Warning: ${warning}`));
  return lines.join("\n");
}
