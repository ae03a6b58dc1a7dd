/**
 * The import graph of lib/: prints import cycles (type-only imports count, since a type cycle ties
 * the modules together as much as a value cycle does), imports of the pool from outside the pool
 * and the HTTP transport, imports that go up the layers docs/architecture.md draws (with modules it
 * does not place, or names that are no module), modules past 600 lines that `LONG_MODULES` does not
 * list with the concept that keeps them whole, and with `--exports` the exports of lib/ that no
 * other file imports. Exits 1 on any cycle, layering violation or unlisted long module (unused
 * exports are listed only), so it can gate a change; tests/import_graph_test.ts checks them all.
 *
 * Usage: `deno run --allow-read scripts/import_graph.ts [--exports] [--layers <doc>] [lib directory]`
 * (the layers are read from docs/architecture.md when no lib directory is given).
 *
 * Specifiers are read with regular expressions rather than a parser, so that the script needs no
 * dependency. This holds because `deno fmt` starts every top-level `import` and `export ... from` at
 * the first column, which no line of a comment or string in this repository does.
 *
 * @module
 */
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Past this many lines a module is split where its concepts part (docs/architecture.md, "One
 * concept a file"), unless {@linkcode LONG_MODULES} lists it.
 */
export const LONG_MODULE_LINES = 600;

/**
 * The lib modules allowed past {@linkcode LONG_MODULE_LINES}, each with the one concept that keeps
 * it whole: a reviewer reads the reason, and a module that is no longer long leaves the list.
 */
export const LONG_MODULES: Readonly<Record<string, string>> = {
  "config_schema.ts":
    "every setting of svc once (key, type, default, minimum, description, variable): the one table " +
    "the JSON Schema, --help, doctor and docs/configuration.md are generated from",
  "worker.ts":
    "one worker: its connection to its slot, its requests one at a time, and how each ends " +
    "(answer, stop, kill, exit); the frames, prompts, requests and process are modules of their own",
  "pool.ts":
    "one state machine of the pool's workers (creating, warm, leased, resetting, evicted): lease, " +
    "grow, reset, evict, replenish and sweep change the same private entries and waiting line; " +
    "its contract, tenancy and waiting line are modules of their own already",
};

/** What one `import`/`export ... from` statement takes from one module. */
export interface ImportEdge {
  /** Absolute path of the imported module. */
  target: string;
  /**
   * Named bindings taken (original names); "*" for a namespace import, a re-export of all, a bare
   * import, or an `import()` whose result is not destructured at once.
   */
  names: string[];
}

// `import`/`export` statements that name a module; the binding list has no quote or semicolon.
const STATIC = /^(?:import|export)\s+(?:type\s+)?([^;"'`]*?)\s*from\s*["']([^"']+)["']/gm;
const BARE = /^import\s*["']([^"']+)["']/gm;
const DYNAMIC = /(?<![\w$.])import\(\s*["']([^"']+)["']\s*\)/g;

/** The local modules `file` imports, from its source text `text`. Package specifiers are skipped. */
export function importsOf(file: string, text: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  const local = (specifier: string) =>
    specifier.startsWith(".") ? resolve(dirname(file), specifier) : null;
  for (const match of text.matchAll(STATIC)) {
    const target = local(match[2]!);
    if (target === null) continue;
    edges.push({ target, names: bindingNames(match[1]!) });
  }
  for (const match of [...text.matchAll(BARE), ...text.matchAll(DYNAMIC)]) {
    const target = local(match[1]!);
    if (target === null) continue;
    // `const { a, b: c } = await import("./x.ts")` takes a and b; any other form takes it all.
    const before = text.slice(0, match.index).match(/\{([^{}]*)\}\s*=\s*await\s*$/);
    const names = match[0].startsWith("import(") && before
      ? before[1]!.split(",").map((part) => part.trim().split(/\s*:/)[0]!).filter((n) => n !== "")
      : ["*"];
    edges.push({ target, names });
  }
  return edges;
}

/** The original names in a binding list: `{ a, type B, c as d }`, `* as ns`, `Default, { e }`. */
function bindingNames(clause: string): string[] {
  if (clause.includes("*")) return ["*"];
  const braces = clause.match(/\{([^}]*)\}/);
  const names = braces
    ? braces[1]!.split(",").map((part) => part.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0]!)
    : [];
  const outside = (braces ? clause.replace(braces[0], "") : clause).replace(/,/g, " ").trim();
  if (outside !== "") names.push("default");
  return names.filter((name) => name !== "");
}

/** One name a module exports, and whether it exists only as a type. */
export interface Export {
  name: string;
  typeOnly: boolean;
}

/** Names a module exports by declaration or `export { ... }` list (re-exports included). */
export function exportsOf(text: string): Export[] {
  const found = new Map<string, boolean>();
  const declaration =
    /^export\s+(?:declare\s+)?(?:default\s+)?(?:async\s+)?(?:abstract\s+)?(function\*?|class|const|let|var|type|interface|enum|namespace)\s+([A-Za-z_$][\w$]*)/gm;
  for (const match of text.matchAll(declaration)) {
    found.set(match[2]!, match[1] === "type" || match[1] === "interface");
  }
  if (/^export\s+default\b/m.test(text) && !found.has("default")) found.set("default", false);
  for (const match of text.matchAll(/^export\s+(type\s+)?\{([^}]*)\}/gm)) {
    for (const part of match[2]!.split(",")) {
      const typed = match[1] !== undefined || /^\s*type\s/.test(part);
      const name = part.trim().replace(/^type\s+/, "").split(/\s+as\s+/).pop()!;
      if (name !== "") found.set(name, typed);
    }
  }
  return [...found].map(([name, typeOnly]) => ({ name, typeOnly }));
}

/** The graph of the lib modules in `dir`: each module's absolute path and the lib modules it imports. */
export async function libGraph(dir: string): Promise<Map<string, ImportEdge[]>> {
  const graph = new Map<string, ImportEdge[]>();
  for (const file of await tsFiles(dir, false)) {
    const edges = importsOf(file, await Deno.readTextFile(file));
    graph.set(file, edges.filter((edge) => dirname(edge.target) === dir));
  }
  return graph;
}

/**
 * Every elementary cycle's strongly connected component with more than one module (or a module
 * importing itself), each listed as a closed path through it, shortest first.
 */
export function cycles(graph: Map<string, ImportEdge[]>): string[][] {
  const found: string[][] = [];
  for (const component of stronglyConnected(graph)) {
    const members = new Set(component);
    const start = component[0]!;
    const selfLoop = graph.get(start)!.some((edge) => edge.target === start);
    if (component.length === 1 && !selfLoop) continue;
    // One closed path per module of the component: the shortest way back to itself.
    const seen = new Set<string>();
    for (const module of component) {
      const path = shortestCycle(graph, module, members);
      const key = path.slice(1).sort().join("\n");
      if (path.length > 0 && !seen.has(key)) {
        seen.add(key);
        found.push(path);
      }
    }
  }
  return found.sort((a, b) => a.length - b.length);
}

/** Tarjan's algorithm: the strongly connected components of `graph`. */
function stronglyConnected(graph: Map<string, ImportEdge[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const { target } of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      components.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return components;
}

/** Breadth-first: the shortest path from `start` back to itself inside `members`, start repeated at the end. */
function shortestCycle(
  graph: Map<string, ImportEdge[]>,
  start: string,
  members: Set<string>,
): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const { target } of graph.get(node) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [start];
        for (let at = node; at !== start; at = previous.get(at)!) path.unshift(at);
        return [start, ...path];
      }
      if (!previous.has(target)) {
        previous.set(target, node);
        queue.push(target);
      }
    }
  }
  return [];
}

/** The lib modules of `dir` longer than {@linkcode LONG_MODULE_LINES}, with their line counts. */
export async function longModules(dir: string): Promise<[string, number][]> {
  const long: [string, number][] = [];
  for (const file of await tsFiles(dir, false)) {
    const lines = (await Deno.readTextFile(file)).split("\n").length - 1;
    if (lines > LONG_MODULE_LINES) long.push([file, lines]);
  }
  return long;
}

/**
 * What breaks the line rule: long modules `listed` does not name (with their line counts), and
 * names `listed` keeps for a module that is not long (or not there).
 */
export function unlistedLong(
  long: [string, number][],
  listed: Readonly<Record<string, string>> = LONG_MODULES,
): { unlisted: [string, number][]; stale: string[] } {
  const names = new Set(long.map(([file]) => basename(file)));
  return {
    unlisted: long.filter(([file]) => !(basename(file) in listed)),
    stale: Object.keys(listed).filter((name) => !names.has(name)).sort(),
  };
}

/**
 * Exports of the lib modules in `dir` that no file under `users` (directories searched recursively,
 * or single files) imports by name, namespace or `import()`: each as `[module, name]`. A type that
 * its own module mentions again is not listed: it names part of another export's signature, which
 * callers must be able to name even when none does yet.
 */
export async function unusedExports(dir: string, users: string[]): Promise<[string, string][]> {
  const imported = new Map<string, Set<string>>();
  for (const root of users) {
    const info = await Deno.stat(root).catch(() => null);
    if (info === null) continue;
    const files = info.isDirectory ? await tsFiles(root, true) : [root];
    for (const file of files) {
      for (const edge of importsOf(file, await Deno.readTextFile(file))) {
        if (edge.target === file) continue;
        const names = imported.get(edge.target) ?? new Set();
        for (const name of edge.names) names.add(name);
        imported.set(edge.target, names);
      }
    }
  }
  const unused: [string, string][] = [];
  for (const file of await tsFiles(dir, false)) {
    const names = imported.get(file) ?? new Set();
    if (names.has("*")) continue;
    const text = await Deno.readTextFile(file);
    const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
    for (const { name, typeOnly } of exportsOf(text)) {
      if (names.has(name)) continue;
      const mentions = code.match(
        new RegExp(`(?<![\\w$])${name.replace("$", "\\$")}(?![\\w$])`, "g"),
      );
      if (typeOnly && (mentions?.length ?? 0) > 1) continue;
      unused.push([file, name]);
    }
  }
  return unused;
}

/** The `.ts` files under `dir` (sorted), recursively if asked, skipping `node_modules` and dot directories. */
async function tsFiles(dir: string, recursive: boolean): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isFile && entry.name.endsWith(".ts")) files.push(path);
    else if (
      recursive && entry.isDirectory && !entry.name.startsWith(".") &&
      entry.name !== "node_modules"
    ) files.push(...await tsFiles(path, true));
  }
  return files.sort();
}

/**
 * Imports that break the layering: a pool module (`pool*.ts`) imported by anything but the pool
 * itself and the HTTP transport (`http*.ts`), the one transport with a pool. Each as
 * `[importer, imported]`. The shared call path (`mcp.ts`) and stdio reach workers through
 * `ToolRunner` and `WorkerUnavailableError` instead.
 */
export function layeringViolations(graph: Map<string, ImportEdge[]>): [string, string][] {
  const base = (file: string) => file.slice(file.lastIndexOf("/") + 1);
  const found: [string, string][] = [];
  for (const [file, edges] of graph) {
    if (/^(pool|http)/.test(base(file))) continue;
    for (const { target } of edges) if (base(target).startsWith("pool")) found.push([file, target]);
  }
  return found;
}

/** One layer of docs/architecture.md's drawing: its name and the module names or patterns in it. */
export interface Layer {
  name: string;
  /** Module file names (`mcp.ts`) and patterns with `*` (`catalog*.ts`). */
  modules: string[];
}

/**
 * The layers of the drawing in the "Layers and import rules" section of docs/architecture.md,
 * highest first: a line with `─ <name>:` or `─ <name> ──` begins one, and every `*.ts` name from
 * there to the next one belongs to it (a `lib/` prefix is dropped).
 */
export function documentedLayers(doc: string): Layer[] {
  const section = doc.slice(doc.indexOf("## Layers and import rules"));
  const drawing = /```\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  const layers: Layer[] = [];
  for (const line of drawing.split("\n")) {
    const heading = /─ ([a-z][a-z ]*[a-z])(?::| ──)/.exec(line);
    if (heading) layers.push({ name: heading[1]!, modules: [] });
    const layer = layers.at(-1);
    if (!layer) continue;
    for (const match of line.matchAll(/(?<![\w*.-])(?:lib\/)?([\w*]+\.ts)\b/g)) {
      layer.modules.push(match[1]!);
    }
  }
  return layers;
}

/** Where {@linkcode placeModules} put the modules, and what it could not place. */
export interface Placement {
  /** Each module's layer (absolute path → index into the layers, 0 the highest). */
  layerOf: Map<string, number>;
  /** Modules no layer names. */
  unplaced: string[];
  /** Modules two layers name, with both layers' names. */
  twice: [string, string, string][];
  /** Names in the drawing that match no module (and are not in `outside`). */
  unknown: string[];
}

/**
 * Places every module of `graph` in the layer whose names match it, an exact name before a
 * pattern. `outside` are names of the drawing that are not lib modules (`main.ts`).
 */
export function placeModules(
  graph: Map<string, ImportEdge[]>,
  layers: Layer[],
  outside: string[] = ["main.ts"],
): Placement {
  const pattern = (name: string) =>
    new RegExp(`^${name.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replaceAll("*", ".*")}$`);
  const placement: Placement = { layerOf: new Map(), unplaced: [], twice: [], unknown: [] };
  const modules = [...graph.keys()];
  for (const module of modules) {
    const name = basename(module);
    const exact = layers.findIndex((layer) => layer.modules.includes(name));
    const matching = layers.flatMap((layer, i) =>
      layer.modules.some((m) => m.includes("*") && pattern(m).test(name)) ? [i] : []
    );
    const others = matching.filter((i) => i !== exact);
    if (exact < 0 && matching.length === 0) placement.unplaced.push(module);
    else if (exact < 0 && others.length > 1) {
      placement.twice.push([module, layers[others[0]!]!.name, layers[others[1]!]!.name]);
    } else placement.layerOf.set(module, exact >= 0 ? exact : others[0]!);
  }
  const names = new Set(modules.map((m) => basename(m)));
  for (const layer of layers) {
    for (const name of layer.modules) {
      const found = name.includes("*")
        ? [...names].some((n) => pattern(name).test(n))
        : names.has(name) || outside.includes(name);
      if (!found) placement.unknown.push(name);
    }
  }
  return placement;
}

/**
 * Imports that go up the layers: a module importing one of a higher layer (type-only imports
 * included), each as `[importer, imported]`.
 */
export function upwardImports(
  graph: Map<string, ImportEdge[]>,
  placement: Placement,
): [string, string][] {
  const found: [string, string][] = [];
  for (const [file, edges] of graph) {
    const from = placement.layerOf.get(file);
    if (from === undefined) continue;
    for (const { target } of edges) {
      const to = placement.layerOf.get(target);
      if (to !== undefined && to < from) found.push([file, target]);
    }
  }
  return found;
}

if (import.meta.main) {
  const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));
  const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
  const flag = Deno.args.indexOf("--layers");
  const args = Deno.args.filter((arg, i) =>
    arg !== "--exports" && (flag < 0 || (i !== flag && i !== flag + 1))
  );
  const dir = resolve(args[0] ?? join(root, "lib"));
  const doc = flag >= 0
    ? Deno.args[flag + 1]
    : args[0] === undefined
    ? join(root, "docs/architecture.md")
    : undefined;
  const name = (file: string) => relative(root, file);
  const graph = await libGraph(dir);
  const found = cycles(graph);
  for (const cycle of found) say(`cycle: ${cycle.map(name).join(" -> ")}`);
  const layering = layeringViolations(graph);
  for (const [file, target] of layering) {
    say(`layering: ${name(file)} imports ${name(target)} (only the pool and http*.ts may)`);
  }
  let layerProblems = 0;
  if (doc !== undefined) {
    const layers = documentedLayers(await Deno.readTextFile(doc));
    const placement = placeModules(graph, layers);
    const upward = upwardImports(graph, placement);
    for (const [file, target] of upward) {
      const layerName = (f: string) => layers[placement.layerOf.get(f)!]!.name;
      say(
        `layering: ${name(file)} (${layerName(file)}) imports ${name(target)} (${
          layerName(target)
        }), a higher layer`,
      );
    }
    for (const file of placement.unplaced) say(`layering: ${name(file)} is in no layer of ${doc}`);
    for (const [file, a, b] of placement.twice) {
      say(`layering: ${name(file)} is in two layers of ${doc}: ${a} and ${b}`);
    }
    for (const unknown of placement.unknown) say(`layering: ${doc} names ${unknown}, no module`);
    layerProblems = upward.length + placement.unplaced.length + placement.twice.length +
      placement.unknown.length;
  }
  const { unlisted, stale } = unlistedLong(await longModules(dir));
  for (const [file, lines] of unlisted) {
    say(
      `too long: ${
        name(file)
      } has ${lines} lines: split it where its concepts part, or list it in LONG_MODULES with the concept that keeps it whole`,
    );
  }
  for (const module of stale) say(`LONG_MODULES lists ${module}, which is not long`);
  if (Deno.args.includes("--exports")) {
    const users = ["lib", "tests", "scripts", "bench", "main.ts"].map((path) => join(root, path));
    for (const [file, exported] of await unusedExports(dir, users)) {
      say(`unused export: ${name(file)} ${exported}`);
    }
  }
  const violations = layering.length + layerProblems;
  say(
    `${found.length} cycle(s), ${violations} layering violation(s), ` +
      `${unlisted.length} module(s) over ${LONG_MODULE_LINES} lines without a reason`,
  );
  if (found.length > 0 || violations > 0 || unlisted.length > 0) Deno.exit(1);
}
