/**
 * The shape of lib/ (issue 29): no import cycles, type-only imports included; no lib module over 600
 * lines; the pool imported only by itself and the HTTP transport; no export that nothing imports.
 * Checked with scripts/import_graph.ts, which is also run on a small module tree with a known cycle
 * so that a clean result means something.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  cycles,
  layeringViolations,
  libGraph,
  MAX_MODULE_LINES,
  oversized,
  unusedExports,
} from "../scripts/import_graph.ts";
import { outputWithin } from "./support/deadline.ts";

const root = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
const lib = `${root}/lib`;
const script = `${root}/scripts/import_graph.ts`;
const relative = (file: string) => file.slice(root.length + 1);

async function run(dir: string): Promise<{ code: number; stdout: string }> {
  const output = await outputWithin(Deno.execPath(), {
    args: ["run", "--allow-read", script, dir],
    stdout: "piped",
    stderr: "piped",
  }, "import_graph");
  return { code: output.code, stdout: new TextDecoder().decode(output.stdout) };
}

Deno.test("lib/ has no import cycle, type-only imports included", async () => {
  const found = cycles(await libGraph(lib));
  assert.deepEqual(found.map((cycle) => cycle.map(relative).join(" -> ")), []);
});

Deno.test(`no lib module is longer than ${MAX_MODULE_LINES} lines`, async () => {
  const long = await oversized(lib);
  assert.deepEqual(long.map(([file, lines]) => `${relative(file)}: ${lines}`), []);
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
