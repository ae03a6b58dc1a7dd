/**
 * The shape of lib/, as docs/architecture.md claims it: no import cycles, type-only imports
 * included; the layers of its drawing, each module in one and no import going up; the pool imported
 * only by itself and the HTTP transport; no module past 600 lines without the concept that keeps it
 * whole; no export that nothing imports. Checked with scripts/import_graph.ts, which is also run on
 * small module trees with a known cycle and a known upward import, so that a clean result means
 * something.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  cycles,
  documentedLayers,
  layeringViolations,
  libGraph,
  LONG_MODULE_LINES,
  LONG_MODULES,
  longModules,
  placeModules,
  unlistedLong,
  unusedExports,
  upwardImports,
} from "../scripts/import_graph.ts";
import { outputWithin } from "./support/deadline.ts";

const root = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
const lib = `${root}/lib`;
const script = `${root}/scripts/import_graph.ts`;
const relative = (file: string) => file.slice(root.length + 1);

async function run(dir: string, ...flags: string[]): Promise<{ code: number; stdout: string }> {
  const output = await outputWithin(Deno.execPath(), {
    args: ["run", "--allow-read", script, ...flags, dir],
    stdout: "piped",
    stderr: "piped",
  }, "import_graph");
  return { code: output.code, stdout: new TextDecoder().decode(output.stdout) };
}

Deno.test("lib/ has no import cycle, type-only imports included", async () => {
  const found = cycles(await libGraph(lib));
  assert.deepEqual(found.map((cycle) => cycle.map(relative).join(" -> ")), []);
});

Deno.test(`a lib module past ${LONG_MODULE_LINES} lines is listed with the concept that keeps it whole`, async () => {
  const { unlisted, stale } = unlistedLong(await longModules(lib));
  assert.deepEqual(unlisted.map(([file, lines]) => `${relative(file)}: ${lines}`), []);
  assert.deepEqual(stale, [], "LONG_MODULES lists a module that is no longer long");
  for (const [name, reason] of Object.entries(LONG_MODULES)) {
    assert.ok(reason.length > 40, `${name}: say which concept keeps it whole`);
  }
});

Deno.test("every lib module is in one layer of docs/architecture.md, and every name there is a module", async () => {
  const layers = documentedLayers(await Deno.readTextFile(`${root}/docs/architecture.md`));
  assert.deepEqual(layers.map((layer) => layer.name), [
    "cli",
    "transports",
    "shared call path",
    "worker",
    "ground",
  ]);
  const placement = placeModules(await libGraph(lib), layers);
  assert.deepEqual(placement.unplaced.map(relative), []);
  assert.deepEqual(placement.twice, []);
  assert.deepEqual(placement.unknown, []);
});

Deno.test("no lib module imports one of a higher layer: the ground nothing above it, the worker nothing of MCP", async () => {
  const graph = await libGraph(lib);
  const layers = documentedLayers(await Deno.readTextFile(`${root}/docs/architecture.md`));
  const upward = upwardImports(graph, placeModules(graph, layers));
  assert.deepEqual(upward.map(([file, target]) => `${relative(file)} -> ${relative(target)}`), []);
});

Deno.test("only the pool and the HTTP transport import the pool", async () => {
  const found = layeringViolations(await libGraph(lib));
  assert.deepEqual(found.map(([file, target]) => `${relative(file)} -> ${relative(target)}`), []);
});

Deno.test("every export of lib/ is imported by another file", async () => {
  const users = ["lib", "tests", "scripts", "bench", "main.ts"].map((path) => `${root}/${path}`);
  const unused = (await unusedExports(lib, users))
    .map(([file, name]) => `${relative(file)} ${name}`);
  assert.deepEqual(unused, []);
});

Deno.test("import_graph reports a cycle made of type-only and re-export edges, and fails", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/a.ts`,
      'import type {\n  B,\n} from "./b.ts";\nexport interface A {\n  b: B;\n}\n',
    );
    await Deno.writeTextFile(`${dir}/b.ts`, 'export type { A as B } from "./c.ts";\n');
    await Deno.writeTextFile(
      `${dir}/c.ts`,
      'import { type A } from "./a.ts";\nexport type C = A;\n',
    );
    await Deno.writeTextFile(
      `${dir}/d.ts`,
      'import type { C } from "./c.ts";\nexport type D = C;\n',
    );
    const { code, stdout } = await run(dir);
    assert.equal(code, 1, stdout);
    const reported = stdout.split("\n").filter((line) => line.startsWith("cycle: "));
    assert.equal(reported.length, 1, stdout);
    assert.match(reported[0]!, /a\.ts -> .*b\.ts -> .*c\.ts -> .*a\.ts$/);
    assert.match(stdout, /1 cycle\(s\)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("import_graph reports an import that goes up the layers a drawing gives, and fails", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/lib`);
    await Deno.writeTextFile(
      `${dir}/lib/errors.ts`,
      'import type { Info } from "./worker_protocol.ts";\nexport type E = Info;\n',
    );
    await Deno.writeTextFile(`${dir}/lib/worker_protocol.ts`, "export type Info = string;\n");
    await Deno.writeTextFile(`${dir}/lib/worker.ts`, 'import "./worker_protocol.ts";\n');
    await Deno.writeTextFile(
      `${dir}/layers.md`,
      "## Layers and import rules\n\n```\nmain.ts ─ cli\n   ├─ worker ── worker*.ts\n" +
        "   └─ ground ── errors.ts · gone.ts\n```\n",
    );
    const { code, stdout } = await run(`${dir}/lib`, "--layers", `${dir}/layers.md`);
    assert.equal(code, 1, stdout);
    assert.match(
      stdout,
      /errors\.ts \(ground\) imports .*worker_protocol\.ts \(worker\), a higher layer/,
    );
    assert.match(stdout, /names gone\.ts, no module/);
    assert.match(stdout, /2 layering violation\(s\)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("import_graph passes a module tree without cycles", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a.ts`, 'import { b } from "./b.ts";\nexport const a = b;\n');
    await Deno.writeTextFile(`${dir}/b.ts`, "export const b = 1;\n");
    const { code, stdout } = await run(dir);
    assert.equal(code, 0, stdout);
    assert.match(stdout, /0 cycle\(s\), 0 layering violation\(s\), 0 module\(s\) over 600 lines/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
