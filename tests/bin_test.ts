/**
 * The repository's own installers, `bin/pwsh` and `bin/deno`, as a fresh machine meets them: several
 * first runs at once all succeed and leave one install; without PowerShell and without the .NET SDK
 * `bin/pwsh` fails at once with one sentence; and svc, finding no PowerShell of its own, uses
 * `bin/pwsh` and says so.
 */
import assert from "node:assert/strict";
import { outputWithin } from "./support/deadline.ts";
import { runSvc } from "./support/harness.ts";
import { BIN_PWSH_VERSION } from "../lib/pwsh_path.ts";

const root = new URL("../", import.meta.url).pathname;
const VERSION_PATTERN = BIN_PWSH_VERSION.replaceAll(".", "\\.");

Deno.test("bin/pwsh installs the PowerShell svc names (BIN_PWSH_VERSION)", () => {
  const script = Deno.readTextFileSync(`${root}bin/pwsh`);
  assert.equal(/^version=(\S+)$/m.exec(script)?.[1], BIN_PWSH_VERSION);
  assert.ok(script.includes(`official PowerShell ${BIN_PWSH_VERSION} from NuGet`));
});

/** A directory holding a copy of `bin/<name>` as `<dir>/bin/<name>`, as a fresh checkout has it. */
async function freshCheckout(name: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "svc-bin-" });
  await Deno.mkdir(`${dir}/bin`);
  await Deno.copyFile(`${root}bin/${name}`, `${dir}/bin/${name}`);
  await Deno.chmod(`${dir}/bin/${name}`, 0o755);
  return dir;
}

/** A PATH directory with links to the tools the scripts use, and to `extra` (none: no pwsh, dotnet). */
async function toolsOnly(extra: string[] = []): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "svc-path-" });
  const tools = ["bash", "readlink", "dirname", "mktemp", "mkdir", "mv", "rm", "chmod", "head"];
  for (const tool of [...tools, ...extra]) {
    const found = ["/usr/bin", "/bin", "/usr/local/bin"].map((d) => `${d}/${tool}`)
      .find((path) => {
        try {
          return Deno.statSync(path).isFile;
        } catch {
          return false;
        }
      });
    assert.ok(found, `${tool} is on this machine`);
    await Deno.symlink(found, `${dir}/${tool}`);
  }
  return dir;
}

/**
 * Runs `script args` to its end with this environment (registries' certificates, proxies) less
 * whatever names a PowerShell or Deno of its own, plus `env`.
 */
async function run(script: string, args: string[], env: Record<string, string>) {
  const inherited = Deno.env.toObject();
  for (const name of ["SVC_TEST_PWSH", "SVC_PWSH", "SVC_PWSH_LOCATE", "SVC_DENO"]) {
    delete inherited[name];
  }
  const output = await outputWithin(
    script,
    {
      args,
      env: { ...inherited, ...env },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    },
    `${script} ${args.join(" ")}`,
    300_000,
  );
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

const IS_UNIX = Deno.build.os !== "windows";
const DOTNET = IS_UNIX &&
  ["/usr/bin/dotnet", "/usr/local/bin/dotnet", "/usr/share/dotnet/dotnet"].find((path) => {
    try {
      return Deno.statSync(path).isFile;
    } catch {
      return false;
    }
  });

Deno.test({
  name:
    `bin/pwsh: four first runs at once each run PowerShell ${BIN_PWSH_VERSION}, installed once from NuGet`,
  // bash scripts; GitHub's Windows runner tests its own pwsh.
  ignore: !IS_UNIX || !DOTNET,
  async fn() {
    const checkout = await freshCheckout("pwsh");
    const path = await toolsOnly();
    const temp = await Deno.makeTempDir({ prefix: "svc-bin-temp-" });
    try {
      // `dotnet` and nothing else of PowerShell's on PATH: the script must install it.
      await Deno.symlink(DOTNET as string, `${path}/dotnet`);
      const runs = await Promise.all(
        Array.from({ length: 4 }, () =>
          run(`${checkout}/bin/pwsh`, [
            "-NoProfile",
            "-Command",
            "$PSVersionTable.PSVersion.ToString()",
          ], { PATH: path, TMPDIR: temp })),
      );
      for (const { code, stdout, stderr } of runs) {
        assert.equal(code, 0, stderr);
        assert.equal(stdout.trim(), BIN_PWSH_VERSION);
      }
      const said = runs.map((r) => r.stderr).join("");
      assert.match(
        said,
        new RegExp(`bin/pwsh: installing PowerShell ${VERSION_PATTERN} from NuGet into \\.tools/`),
      );
      assert.doesNotMatch(said, /File exists|Tool 'powershell'/);
      // One install, and no staging folder left by the runs that lost the race.
      const entries = [...Deno.readDirSync(`${checkout}/.tools`)].map((e) => e.name);
      assert.deepEqual(entries, [`pwsh-${BIN_PWSH_VERSION}`]);
      // Nor anything in the user's temp directory (dotnet's own scratch directories included).
      assert.deepEqual([...Deno.readDirSync(temp)].map((e) => e.name), []);
      // Later runs use it without a word.
      const again = await run(`${checkout}/bin/pwsh`, ["-NoProfile", "-Command", "1+1"], {
        PATH: path,
      });
      assert.deepEqual([again.code, again.stdout.trim(), again.stderr], [0, "2", ""]);
    } finally {
      await Deno.remove(checkout, { recursive: true });
      await Deno.remove(path, { recursive: true });
      await Deno.remove(temp, { recursive: true });
    }
  },
});

Deno.test({
  name: "bin/pwsh: without PowerShell and without dotnet it fails at once, saying how to get it",
  ignore: !IS_UNIX,
  async fn() {
    const checkout = await freshCheckout("pwsh");
    const path = await toolsOnly();
    try {
      const { code, stdout, stderr } = await run(`${checkout}/bin/pwsh`, ["-Version"], {
        PATH: path,
      });
      assert.equal(code, 3);
      assert.equal(stdout, "");
      assert.equal(stderr.trim().split("\n").length, 1, stderr);
      assert.match(stderr, /PowerShell 7\.4 or later was not found .* install PowerShell/);
      assert.match(stderr, /https:\/\/aka\.ms\/powershell/);
    } finally {
      await Deno.remove(checkout, { recursive: true });
      await Deno.remove(path, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "bin/pwsh: a PowerShell named by SVC_PWSH or found on PATH is used, never this script itself",
  ignore: !IS_UNIX,
  async fn() {
    const checkout = await freshCheckout("pwsh");
    const path = await toolsOnly();
    try {
      const script = `${checkout}/bin/pwsh`;
      // A stand-in for "some pwsh": it reports who ran it.
      await Deno.writeTextFile(`${path}/pwsh`, '#!/usr/bin/env bash\necho "path-pwsh $*"\n');
      await Deno.chmod(`${path}/pwsh`, 0o755);
      const onPath = await run(script, ["-Version"], { PATH: path });
      assert.equal(onPath.stdout.trim(), "path-pwsh -Version", onPath.stderr);
      // bin/ itself on PATH, or SVC_PWSH naming this script, must not make it call itself.
      const looped = await run(script, ["-Version"], {
        PATH: `${checkout}/bin:${path}`,
        SVC_PWSH: script,
      });
      assert.equal(looped.stdout.trim(), "path-pwsh -Version", looped.stderr);
      const located = await run(script, [], { PATH: path, SVC_PWSH_LOCATE: "1" });
      assert.equal(located.stdout.trim(), `${path}/pwsh`);
    } finally {
      await Deno.remove(checkout, { recursive: true });
      await Deno.remove(path, { recursive: true });
    }
  },
});

Deno.test({
  name: "bin/deno: three first runs at once each run Deno, installed once from the npm registry",
  ignore: !IS_UNIX,
  async fn() {
    const checkout = await freshCheckout("deno");
    const npm = ["/usr/bin/npm", "/usr/local/bin/npm"].find((p) => {
      try {
        return Deno.statSync(p).isFile;
      } catch {
        return false;
      }
    });
    assert.ok(npm, "npm is on this machine (bin/deno needs it once)");
    // npm runs Deno's install script through sh.
    const path = await toolsOnly(["node", "npm", "sh", "env"]);
    try {
      const runs = await Promise.all(
        Array.from({ length: 3 }, () => run(`${checkout}/bin/deno`, ["--version"], { PATH: path })),
      );
      for (const { code, stdout, stderr } of runs) {
        assert.equal(code, 0, stderr);
        assert.match(stdout, /^deno 2\.9\./);
        assert.doesNotMatch(stderr, /File exists|ENOTEMPTY|EEXIST/);
      }
      const entries = [...Deno.readDirSync(`${checkout}/.tools`)].map((e) => e.name);
      assert.deepEqual(entries, ["deno-2.9"]);
    } finally {
      await Deno.remove(checkout, { recursive: true });
      await Deno.remove(path, { recursive: true });
    }
  },
});

Deno.test({
  name: "svc without a PowerShell of its own uses bin/pwsh, and doctor says so",
  ignore: !IS_UNIX,
  async fn() {
    const path = await toolsOnly();
    try {
      // No pwsh on PATH and no SVC_PWSH: bin/pwsh finds the one the tests run on (SVC_TEST_PWSH
      // where set, else its own install in .tools/).
      const env: Record<string, string> = { PATH: path, SVC_PWSH: "" }; // empty: unset
      const { code, stdout, stderr } = await runSvc(["doctor", "--format", "json"], { env });
      assert.equal(code, 0, stderr);
      const report = JSON.parse(stdout) as { powershell: { path: string; origin: string } };
      assert.match(report.powershell.origin, /^svc's bin\/pwsh/);
      assert.match(report.powershell.path, /pwsh$/);
      const text = await runSvc(["doctor"], { env });
      assert.match(
        text.stdout,
        new RegExp(`from: svc's bin/pwsh \\(PowerShell ${VERSION_PATTERN} from NuGet`),
      );
      // With bin/ on PATH (README step 1) bin/pwsh is still svc's own, asked for the PowerShell
      // it runs: the same executable, so the same catalog cache key, as a client without it.
      const withBin = await runSvc(["doctor", "--format", "json"], {
        env: { ...env, PATH: `${root}bin:${path}`, McpServer__RunspacePool__EagerWarmCount: "1" },
      });
      const again = JSON.parse(withBin.stdout) as typeof report;
      assert.deepEqual(again.powershell, report.powershell);
      // An SVC_PWSH that is not there says what svc would use without it.
      const wrong = await runSvc(["doctor"], { env: { PATH: path, SVC_PWSH: "/no/such/pwsh" } });
      assert.equal(wrong.code, 3);
      assert.match(
        wrong.stdout + wrong.stderr,
        /'\/no\/such\/pwsh' was configured \(by --pwsh, SVC_PWSH or ShellConfiguration:PwshPath\) but is not an executable file; leave it unset and svc uses its own bin\/pwsh/,
      );
      assert.match(
        wrong.stdout + wrong.stderr,
        new RegExp(`which finds or installs PowerShell ${VERSION_PATTERN}\\b`),
      );
    } finally {
      await Deno.remove(path, { recursive: true });
    }
  },
});
