/**
 * The compiled half of the worker host (lib/host/cs, loaded by lib/host/assembly.ps1): compiled once
 * into svc's cache directory, loaded from there by later starts, and compiled in memory when the
 * cache cannot be written.
 */
import assert from "node:assert/strict";
import { hostSourceDigest } from "../lib/host_files.ts";
import { RunspaceWorker } from "../lib/worker.ts";
import { TEST_PWSH as pwsh } from "./support/harness.ts";

async function callGetDate(cacheDirectory: string | null): Promise<void> {
  await using worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000, cacheDirectory });
  await worker.startup({ modules: [], scriptPath: null, script: null }, 60_000);
  const { result } = await worker.invoke(
    { command: "Get-Date", parameters: { Year: 2001 }, credentials: [], depth: 1 },
    { timeoutMs: 30_000 },
  );
  assert.equal(result.errors.length, 0);
  assert.equal(result.output.length, 1);
}

async function entries(directory: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(directory))).map((entry) => entry.name).sort();
}

Deno.test({
  name: "compiled host: kept in the cache directory once, then loaded from it",
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "svc-assembly-" });
    try {
      const cache = `${root}/cache`;
      await callGetDate(cache);
      const first = await entries(cache);
      assert.equal(first.length, 1, `one file and no staging leftovers, got ${first.join(", ")}`);
      assert.match(first[0]!, /^svc-host-[0-9a-f]{32}-[0-9a-f]{32}\.dll$/);
      if (Deno.build.os !== "windows") {
        assert.equal(
          (await Deno.stat(cache)).mode! & 0o777,
          0o700,
          "only this user may write there",
        );
      }
      const compiled = await Deno.stat(`${cache}/${first[0]}`);

      await callGetDate(cache);
      assert.deepEqual(await entries(cache), first);
      const loaded = await Deno.stat(`${cache}/${first[0]}`);
      assert.equal(
        loaded.mtime?.getTime(),
        compiled.mtime?.getTime(),
        "the second start loads, not compiles",
      );
      assert.equal(loaded.ino, compiled.ino);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "compiled host: not loaded from a cache other users can write, nor when it does not load",
  ignore: Deno.build.os === "windows",
  async fn() {
    const cache = await Deno.makeTempDir({ prefix: "svc-assembly-" });
    try {
      await callGetDate(cache);
      const [name] = await entries(cache);
      // Group- or world-writable: nothing is compiled into it, or loaded from it.
      await Deno.remove(`${cache}/${name}`);
      await Deno.chmod(cache, 0o777);
      await callGetDate(cache);
      assert.deepEqual(await entries(cache), [], "no assembly was written where others can write");
      // This user's own directory, but a file that does not load: compiled in memory instead.
      await Deno.chmod(cache, 0o700);
      const planted = new TextEncoder().encode("not an assembly");
      await Deno.writeFile(`${cache}/${name}`, planted);
      await callGetDate(cache);
      assert.deepEqual(await Deno.readFile(`${cache}/${name}`), planted, "the cache is left alone");
    } finally {
      await Deno.remove(cache, { recursive: true });
    }
  },
});

Deno.test({
  name: "compiled host: a cache that cannot be written, or none, still serves",
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "svc-assembly-" });
    try {
      // A directory cannot be made under a regular file.
      await Deno.writeTextFile(`${root}/file`, "");
      await callGetDate(`${root}/file/cache`);
      assert.deepEqual(await entries(root), ["file"]);
      await callGetDate(null);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "compiled host: the source digest svc passes is the one the host computes without it",
  async fn() {
    const host = new URL("../lib/host/", import.meta.url).pathname;
    const script = `. '${host}assembly.ps1'
      $sources = [System.IO.Directory]::GetFiles('${host}cs', '*.cs')
      [System.Array]::Sort($sources, [System.StringComparer]::Ordinal)
      Get-SourceDigest $sources`;
    const { stdout, success } = await new Deno.Command(pwsh, {
      args: ["-NoLogo", "-NoProfile", "-NonInteractive", "-Command", script],
      stderr: "inherit",
    }).output();
    assert.ok(success);
    const digest = await hostSourceDigest();
    assert.match(digest, /^[0-9a-f]{32}$/);
    assert.equal(new TextDecoder().decode(stdout).trim(), digest);
  },
});

Deno.test({
  name: "compiled host: compiled by the .NET SDK's compiler when one is on PATH, else by Add-Type",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "svc-assembly-" });
    const path = Deno.env.get("PATH") ?? "";
    const sdk = path.split(":").some((dir) => {
      try {
        return Deno.statSync(`${dir}/dotnet`).isFile;
      } catch {
        return false;
      }
    });
    // The SDK's compiler is run deterministic: the same sources give the same bytes. Add-Type's
    // output differs at every compile (a new module version id).
    const compileTwice = async () => {
      const dirs = [`${root}/${crypto.randomUUID()}`, `${root}/${crypto.randomUUID()}`];
      for (const dir of dirs) await callGetDate(dir);
      const [a, b] = await Promise.all(
        dirs.map(async (dir) => Deno.readFile(`${dir}/${(await entries(dir))[0]}`)),
      );
      return a!.length === b!.length && a!.every((byte, i) => byte === b![i]);
    };
    try {
      // The worker inherits svc's PATH: without a `dotnet` there, Add-Type compiles the host.
      Deno.env.set("PATH", "/nonexistent");
      try {
        assert.equal(await compileTwice(), false, "Add-Type compiled it");
      } finally {
        Deno.env.set("PATH", path);
      }
      assert.equal(await compileTwice(), sdk, sdk ? "the SDK compiled it" : "no SDK here");
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "compiled host: the SDK compiler never sees the worker's token, and when it fails Add-Type compiles",
  ignore: Deno.build.os === "windows",
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "svc-assembly-" });
    const path = Deno.env.get("PATH") ?? "";
    try {
      // A `dotnet` with an SDK beside it that writes down the environment it was given and fails.
      const seen = `${root}/compiler-environment`;
      await Deno.mkdir(`${root}/bin/sdk/99.0.0/Roslyn/bincore`, { recursive: true });
      await Deno.writeTextFile(`${root}/bin/sdk/99.0.0/Roslyn/bincore/csc.dll`, "");
      await Deno.writeTextFile(`${root}/bin/dotnet`, `#!/bin/sh\nenv > '${seen}'\nexit 1\n`);
      await Deno.chmod(`${root}/bin/dotnet`, 0o755);
      Deno.env.set("PATH", `${root}/bin:${path}`);
      try {
        await callGetDate(`${root}/cache`);
      } finally {
        Deno.env.set("PATH", path);
      }
      const environment = await Deno.readTextFile(seen);
      assert.match(environment, /^PATH=/m, "the fake compiler ran");
      assert.doesNotMatch(environment, /SVC_WORKER_TOKEN/);
      assert.equal((await entries(`${root}/cache`)).length, 1, "Add-Type compiled it instead");
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
