/** Every file of the worker's PowerShell side is embedded, and embedded as it is in lib/. */
import assert from "node:assert/strict";
import { writeHostFiles } from "../lib/host_files.ts";

const lib = new URL("../lib/", import.meta.url).pathname;

function filesUnder(dir: string, prefix = ""): string[] {
  return [...Deno.readDirSync(dir)].flatMap((entry) =>
    entry.isDirectory
      ? filesUnder(`${dir}/${entry.name}`, `${prefix}${entry.name}/`)
      : [`${prefix}${entry.name}`]
  );
}

Deno.test("writeHostFiles writes host.ps1 and every file under lib/host/, each as it is", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-host-files-" });
  try {
    await writeHostFiles(dir);
    const expected = ["host.ps1", ...filesUnder(`${lib}host`, "host/")].sort();
    assert.deepEqual(filesUnder(dir).sort(), expected);
    for (const path of expected) {
      assert.equal(
        Deno.readTextFileSync(`${dir}/${path}`),
        Deno.readTextFileSync(`${lib}${path}`),
        path,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
