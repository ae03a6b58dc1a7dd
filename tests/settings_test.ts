/**
 * Each setting's default, minimum, description and variable are written once, in
 * lib/config_schema.ts (a flag's in lib/config_flags.ts). The reads, the JSON Schema and `--help`
 * take them from there; what is written by hand for people (the `create-config` template, the
 * README, docs/, the settings' JSDoc) is checked against it here, so that a default changed in one
 * place and not the others fails a test naming the place. The configuration reference
 * (docs/configuration.md) is generated instead, and checked here for being up to date.
 */
import assert from "node:assert/strict";
import { parse } from "jsonc-parser";
import { parseTimeSpan } from "../lib/config_reader.ts";
import { type Flag, flagDefault, FLAGS, flagVariable } from "../lib/config_flags.ts";
import { allSettings, appSettingsSchema, type Setting, settingOf } from "../lib/config_schema.ts";
import { defaultConfigText } from "../lib/config_template.ts";
import { configReference, formatted, REFERENCE_PATH } from "../scripts/config_reference.ts";

const root = new URL("../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, root));
const DOCS = [
  "README.md",
  ...[...Deno.readDirSync(new URL("docs/", root))].map((e) => `docs/${e.name}`),
]
  .filter((path) => path.endsWith(".md"));

/** The setting at `key`, or the only one whose path ends with `:key` (JSDoc on a section's type). */
function find(key: string): [string, Setting] | undefined {
  const exact = settingOf(key);
  if (exact) return [key, exact];
  const ends = allSettings().filter(([path]) => path.endsWith(`:${key}`));
  return ends.length === 1 ? ends[0] : undefined;
}

/** The default as a README table or a file writes it, or null when svc computes it. */
function written(setting: Setting): string | null {
  if (setting.computed !== undefined) return null;
  if (setting.default !== undefined) return String(setting.default);
  return setting.kind === "strings" ? "[]" : "—";
}

/** Time spans and byte counts as prose gives them ("30 s", "8 MiB") in the setting's terms. */
function fromProse(text: string, setting: Setting): string {
  const value = text.replaceAll("`", "").trim();
  const mib = /^(\d+) MiB$/.exec(value);
  if (mib) return String(Number(mib[1]) * 1024 * 1024);
  const seconds = /^(\d+) s$/.exec(value);
  if (seconds && setting.kind === "timeSpan") {
    const s = Number(seconds[1]);
    const pad = (n: number) => String(n).padStart(2, "0");
    return `${pad(Math.floor(s / 3600))}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}`;
  }
  return value;
}

Deno.test("every setting's default is valid for its own type and minimum, and names are unique", () => {
  const variables = new Set<string>();
  for (const [path, setting] of allSettings()) {
    assert.ok(setting.text.endsWith("."), `${path}: its text is a sentence`);
    assert.ok(
      !(setting.default !== undefined && setting.computed !== undefined),
      `${path}: a default or a computed one, not both`,
    );
    if (setting.kind === "integer") assert.ok(setting.min !== undefined, `${path}: no minimum`);
    if (setting.default !== undefined) {
      const kind = setting.kind;
      const expected = kind === "integer" ? "number" : kind === "boolean" ? "boolean" : "string";
      assert.equal(typeof setting.default, expected, `${path}: default of the wrong type`);
      if (kind === "integer") assert.ok((setting.default as number) >= setting.min!, path);
      if (kind === "timeSpan") assert.ok(parseTimeSpan(setting.default as string), path);
      if (typeof kind !== "string") assert.ok(kind.includes(setting.default as string), path);
      const file = path.split(":").reduceRight<unknown>(
        (inner, part) => ({ [part === "*" ? "entry" : part]: inner }),
        setting.default,
      );
      assert.ok(
        appSettingsSchema.safeParse(file).success,
        `${path}: default refused by the schema`,
      );
    }
    for (const replacement of setting.replacedBy ?? []) {
      assert.ok(settingOf(replacement), `${path}: replaced by unknown '${replacement}'`);
    }
    if (setting.env) {
      assert.match(setting.env, /^SVC_[A-Z_]+$/);
      assert.ok(!variables.has(setting.env), `${setting.env} is named twice`);
      variables.add(setting.env);
    }
  }
  for (const flag of Object.values(FLAGS) as Flag[]) {
    const variable = flagVariable(flag);
    assert.ok(flag.key !== undefined || !variables.has(variable), `${variable} is named twice`);
    if (flag.key !== undefined) assert.ok(settingOf(flag.key), `${flag.flag}: unknown ${flag.key}`);
  }
});

Deno.test("the create-config template writes each setting's default, and every setting that has one", () => {
  const template = parse(defaultConfigText()) as Record<string, unknown>;
  const leaves = (node: unknown, path: string[] = []): [string, unknown][] =>
    node !== null && typeof node === "object" && !Array.isArray(node) &&
      Object.keys(node).length > 0
      ? Object.entries(node).flatMap(([k, v]) => leaves(v, [...path, k]))
      : [[path.join(":"), node]];
  const inTemplate = new Map(leaves(template));
  for (const [path, value] of inTemplate) {
    const setting = settingOf(path);
    if (setting?.default !== undefined) {
      assert.deepEqual(value, setting.default, `template's ${path}`);
    } else if (setting !== undefined && setting.kind !== "strings") {
      assert.equal(value, "", `template's ${path} is written empty: it has no default`);
    }
  }
  const missing = allSettings().filter(([path, setting]) =>
    setting.default !== undefined && !path.includes("*") &&
    !path.startsWith("PowerShellConfiguration:") && !path.includes("Performance:")
  ).map(([path]) => path).filter((path) => !inTemplate.has(path));
  assert.deepEqual(missing, [], "settings with a default that the template leaves out");
});

Deno.test("the settings tables of README.md and docs/ give each key's default as the schema does", () => {
  let checked = 0;
  for (const doc of DOCS) {
    const lines = read(doc).split("\n");
    for (let i = 1; i < lines.length; i++) {
      if (!/^\|[\s|:-]+\|$/.test(lines[i]!) || !lines[i - 1]!.startsWith("|")) continue;
      const cells = (line: string) => line.split("|").slice(1, -1).map((c) => c.trim());
      const header = cells(lines[i - 1]!);
      const keyColumn = header.findIndex((h) => /^(key|setting)\b/.test(h));
      const defaultColumn = header.indexOf("default");
      if (keyColumn < 0 || defaultColumn < 0) continue;
      // The section: in the header (`McpServer:`), else the paragraph before (`…:RunspacePool:*`).
      const before = lines.slice(Math.max(0, i - 6), i - 1).join(" ");
      const prefix = /`([A-Za-z:]+:)`/.exec(header[keyColumn]!)?.[1] ??
        /`([A-Za-z:]+:)\*`/.exec(before)?.[1];
      assert.ok(prefix, `${doc}:${i}: a settings table without its section`);
      for (let row = i + 1; lines[row]?.startsWith("|"); row++) {
        const cell = cells(lines[row]!);
        const keys = [...cell[keyColumn]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)
          .filter((k) => !k.startsWith("SVC_"));
        const defaults = cell[defaultColumn]!.split(" / ");
        keys.forEach((key, n) => {
          const path = `${prefix}${key.replace(/<[^>]+>/g, "*")}`;
          const setting = settingOf(path);
          assert.ok(setting, `${doc}:${row + 1}: '${path}' is no setting`);
          const variable = /env `(SVC_[A-Z_]+)`/.exec(cell[keyColumn]!)?.[1];
          if (variable) {
            assert.equal(variable, setting.env, `${doc}:${row + 1}: ${path}'s variable`);
          }
          const expected = written(setting);
          if (expected === null) return;
          const shown = (defaults[n] ?? defaults[0]!).replaceAll("`", "").replace(/\s*\(.*\)$/, "");
          // A list's default is empty, which a table may write as "—" too.
          const also = setting.kind === "strings" ? ["—"] : [];
          assert.ok(
            [expected, ...also].includes(shown.trim()),
            `${doc}:${row + 1}: default of ${path} is ${expected}, not ${shown}`,
          );
          checked++;
        });
      }
    }
  }
  assert.ok(checked >= 40, `only ${checked} table defaults checked`);
});

Deno.test("README.md and docs/ give a setting's default in prose as the schema does", () => {
  let checked = 0;
  for (const doc of DOCS) {
    const pattern =
      /`((?:ShellConfiguration|McpServer|Authentication|Logging):[A-Za-z:]+)`[^`(.]{0,20}\(default ([^,)]+)/g;
    for (const [, key, value] of read(doc).matchAll(pattern)) {
      const setting = settingOf(key!);
      assert.ok(setting, `${doc}: '${key}' is no setting`);
      assert.equal(fromProse(value!, setting), written(setting), `${doc}: default of ${key}`);
      checked++;
    }
  }
  assert.ok(checked >= 8, `only ${checked} prose defaults checked`);
});

Deno.test("the reference's command-line table gives each flag's variable and default as the schema does", () => {
  const rows = read(REFERENCE_PATH).split("\n").filter((line) => /^\| `--/.test(line));
  const flags = Object.values(FLAGS) as Flag[];
  assert.equal(rows.length, flags.length, "one row per flag");
  for (const row of rows) {
    // A cell may hold `\|`, as in `<stdio\|http>`: split on the other bars.
    const [flagCell, variableCell, defaultCell] = row.split(/(?<!\\)\|/).slice(1, -1).map((c) =>
      c.replaceAll("`", "").trim()
    );
    const flag = flags.find((f) => f.flag === flagCell!.split(" ")[0]);
    assert.ok(flag, `${REFERENCE_PATH} names unknown flag ${flagCell}`);
    assert.equal(variableCell, flagVariable(flag), `${REFERENCE_PATH}'s variable of ${flag.flag}`);
    // The literal default (or the key's), where there is one, as a word of the cell.
    const key = flag.key === undefined ? undefined : settingOf(flag.key);
    const literal = key === undefined ? flag.default : written(key);
    if (literal != null) {
      assert.ok(
        defaultCell!.split(/[\s,;()]+/).includes(literal),
        `${REFERENCE_PATH}'s default of ${flag.flag} is not ${literal}: ${defaultCell}`,
      );
    }
    assert.ok(flagDefault(flag).length > 0);
  }
});

Deno.test("docs/configuration.md is what `deno task schema` generates from the settings", async () => {
  assert.equal(
    read(REFERENCE_PATH),
    await formatted(configReference()),
    `${REFERENCE_PATH} is stale: run bin/deno task schema`,
  );
});

Deno.test("the settings' JSDoc @default values agree with the schema", () => {
  let checked = 0;
  const files = [...Deno.readDirSync(new URL("lib/", root))].map((e) => e.name)
    .filter((name) => /^config.*\.ts$/.test(name));
  // The one @default that is not the key's value: the parsed level.
  const PARSED: Record<string, string> = { "Logging:LogLevel:Default": '"info"' };
  const flags = Object.values(FLAGS) as Flag[];
  for (const file of files) {
    const pattern = /@default ("[^"]*"|-?\d+|true|false|null|\[\])[^\n(]*\((?:flag )?`([^`]+)`/g;
    for (const [, literal, name] of read(`lib/${file}`).matchAll(pattern)) {
      const flag = flags.find((f) => f.flag === name);
      // update-config's flags are no settings.
      if (!flag && name!.startsWith("--")) continue;
      const found = flag?.key ? find(flag.key) : flag ? undefined : find(name!);
      if (flag && !flag.key) {
        const expected = flag.default === undefined ? "null" : flag.default;
        assert.ok([expected, JSON.stringify(expected)].includes(literal!), `${file}: ${name}`);
        checked++;
        continue;
      }
      assert.ok(found, `${file}: @default of unknown setting '${name}'`);
      const [path, setting] = found;
      if (setting.computed !== undefined || PARSED[path] === literal) continue;
      const value = setting.default;
      const accepted = value === undefined ? [setting.kind === "strings" ? "[]" : "null"] : [
        String(value),
        JSON.stringify(value),
        ...(setting.kind === "timeSpan" ? [String(parseTimeSpan(String(value)))] : []),
        ...(path.endsWith("Seconds") ? [String(Number(value) * 1000)] : []),
      ];
      assert.ok(
        accepted.includes(literal!),
        `${file}: @default ${literal} of ${path}, not ${value}`,
      );
      checked++;
    }
  }
  assert.ok(checked >= 40, `only ${checked} @default values checked`);
});
