/**
 * The repository stands on its own: a clone with nothing beside it (no `../shared`, no pwsh) passes
 * the static check and the fast part of the suite. A dependency on a file outside the repository
 * fails here, not on a new user's machine.
 */
import assert from "node:assert/strict";
import { outputWithin } from "./support/deadline.ts";

const root = new URL("../", import.meta.url).pathname;

async function git(args: string[], cwd: string): Promise<string> {
  const output = await outputWithin("git", {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
  }, `git ${args.join(" ")}`);
  const text = new TextDecoder().decode(output.stdout).trim();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return text;
}

const hasGit = (() => {
  try {
    return new Deno.Command("git", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
})();
const isCheckout = hasGit && (() => {
  try {
    return Deno.statSync(`${root}.git`) !== null;
  } catch {
    return false;
  }
})();

Deno.test({
  name: isCheckout
    ? "a fresh clone with nothing beside it passes the check and the fast tests"
    : "a fresh clone passes the fast tests [skipped: not a git checkout or no git]",
  ignore: !isCheckout,
  async fn() {
    const parent = await Deno.makeTempDir({ prefix: "svc-clone-" });
    try {
      const clone = `${parent}/svc`;
      await git(["clone", "--quiet", "--no-hardlinks", root, clone], parent);
      // The clone reuses this checkout's Deno rather than installing it again from npm.
      await Deno.symlink(`${root}.tools`, `${clone}/.tools`);
      const env = {
        PATH: "/usr/local/bin:/usr/bin:/bin",
        HOME: Deno.env.get("HOME") ?? parent,
        NO_COLOR: "1",
        // Deno's module and npm caches are shared, so no download is needed.
        ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
      };
      const run = async (args: string[], what: string) => {
        const output = await outputWithin(
          `${clone}/bin/deno`,
          {
            args,
            cwd: clone,
            env,
            clearEnv: true,
            stdout: "piped",
            stderr: "piped",
          },
          what,
          240_000,
        );
        const text = new TextDecoder().decode(output.stdout) +
          new TextDecoder().decode(output.stderr);
        assert.equal(output.code, 0, `${what} failed in a clean clone:\n${text.slice(-4000)}`);
        return text;
      };
      const checked = await run(["task", "ps-check"], "deno task ps-check");
      assert.match(checked, /ps-check: \d+ file\(s\) clean/);
      const tested = await run([
        "test",
        "--allow-all",
        "tests/arguments_test.ts",
        "tests/catalog_test.ts",
        "tests/config_test.ts",
        "tests/jsonc_test.ts",
        "tests/ps_check_test.ts",
      ], "the fast tests");
      assert.match(tested, /ok \| \d+ passed/);
      assert.match(tested, /\| 0 failed/);
    } finally {
      await Deno.remove(parent, { recursive: true });
    }
  },
});
