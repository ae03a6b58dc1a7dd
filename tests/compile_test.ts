/**
 * `deno task compile` (issue 14): a self-contained binary for this machine's target that runs with
 * narrow permissions, or, where the Deno runtime download is unreachable (as on the machines this
 * project is built on), one clear sentence and exit 3, never a stack trace.
 */
import assert from "node:assert/strict";
import { outputWithin } from "./support/deadline.ts";

const root = new URL("../", import.meta.url).pathname;

Deno.test("deno task compile builds a binary that runs, or says why it cannot and exits 3", async () => {
  const out = await Deno.makeTempDir({ prefix: "svc-compile-" });
  try {
    const target = ["x86_64-unknown-linux-gnu", "aarch64-apple-darwin"].includes(Deno.build.target)
      ? Deno.build.target
      : "x86_64-unknown-linux-gnu";
    const compiled = await outputWithin(
      Deno.execPath(),
      {
        args: ["task", "compile", "--target", target, "--out", out],
        cwd: root,
        env: { NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      },
      "deno task compile",
      300_000,
    );
    const stderr = new TextDecoder().decode(compiled.stderr);
    if (compiled.code === 3) {
      const [line, ...rest] = stderr.trim().split("\n").filter((l) => l.startsWith("compile:"));
      assert.match(
        line ?? "",
        /^compile: deno compile needs the Deno runtime for \S+ from https:\/\/dl\.deno\.land\/\S+, which cannot be reached from this machine; .*DENORT_BIN/,
      );
      assert.deepEqual(rest, []);
      assert.doesNotMatch(stderr, /^\s+at /m, "no stack trace");
      return;
    }
    assert.equal(compiled.code, 0, stderr);
    if (target !== Deno.build.target) return;
    const binary = `${out}/svc-${target}`;
    const version = await outputWithin(
      binary,
      { args: ["--version"], stdout: "piped" },
      "svc --version",
      30_000,
    );
    assert.equal(version.code, 0);
    assert.match(new TextDecoder().decode(version.stdout), /^\d+\.\d+\.\d+/);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("deno task compile refuses an unknown target with exit 2", async () => {
  const result = await outputWithin(
    Deno.execPath(),
    { args: ["task", "compile", "--target", "sparc-sun-solaris"], cwd: root, stderr: "piped" },
    "deno task compile",
    60_000,
  );
  assert.equal(result.code, 2);
  assert.match(
    new TextDecoder().decode(result.stderr),
    /compile: unknown target 'sparc-sun-solaris'; expected one of x86_64-unknown-linux-gnu, /,
  );
});
