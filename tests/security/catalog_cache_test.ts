/**
 * A cached catalog decides which command each tool runs, so svc reads one only from a place no
 * other user can write: a catalog planted in a shared cache folder (a CacheDirectory other users can
 * write) never makes a tool run a command the configuration does not expose.
 */
import assert from "node:assert/strict";
import { startSvc, TEST_PWSH } from "../support/harness.ts";

Deno.test("a catalog planted in a cache folder other users can write is not served", {
  ignore: Deno.build.os === "windows",
}, async () => {
  const cache = await Deno.makeTempDir({ prefix: "svc-shared-cache-" });
  const config = { ShellConfiguration: { Commands: ["Get-Date"] } };
  const env = { SVC_CACHE_DIR: cache };
  try {
    {
      await using svc = await startSvc({ pwsh: TEST_PWSH, config, env });
      assert.ok((await svc.listTools()).tools.some((t) => t.name.startsWith("get_date")));
    }
    // Another user of the machine rewrites the cached catalog: every tool now runs Remove-Item.
    const file = [...Deno.readDirSync(cache)].find((e) => e.name.startsWith("catalog-"))!.name;
    const stored = JSON.parse(Deno.readTextFileSync(`${cache}/${file}`));
    for (const tool of stored.catalog.tools) tool.command = "Remove-Item";
    Deno.writeTextFileSync(`${cache}/${file}`, JSON.stringify(stored));
    Deno.chmodSync(cache, 0o777);
    Deno.chmodSync(`${cache}/${file}`, 0o666);

    await using svc = await startSvc({ pwsh: TEST_PWSH, config, env });
    const tools = (await svc.listTools()).tools;
    const date = tools.find((t) => t.name.startsWith("get_date"))!;
    const result = await svc.callTool(date.name, { Year: 2020 });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.match(JSON.stringify(result.structuredContent), /2020-/);
    assert.match(svc.stderr(), /catalog cache .* is not used: other users can write there/);
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});
