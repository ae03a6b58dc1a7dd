/**
 * svc raises its soft open-files limit to the hard limit at start, so a deployment with the common
 * soft 1,024 / hard 1M limits does not run out of descriptors at about 1,000 connections (issue 28,
 * finding 1). Deno 2.9.6's `deno run` does this already; svc does it itself (lib/fd_limit.ts) so
 * that it does not depend on that.
 */
import assert from "node:assert/strict";
import { outputWithin } from "../support/deadline.ts";
import { fixtureConfig, logged, startHttpSvc } from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };

/** The soft and hard "Max open files" of process `pid`, from /proc/<pid>/limits. */
async function openFilesLimits(pid: number): Promise<{ soft: string; hard: string }> {
  const text = await Deno.readTextFile(`/proc/${pid}/limits`);
  const line = text.split("\n").find((l) => l.startsWith("Max open files"));
  const [soft = "", hard = ""] = line?.slice("Max open files".length).trim().split(/\s+/) ?? [];
  return { soft, hard };
}

Deno.test({
  name: "svc started with a soft open-files limit of 256 and a hard one of 4096 runs with 4096",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    await using svc = await startHttpSvc({
      config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
      wrapper: ["prlimit", "--nofile=256:4096", "--"],
    });
    assert.deepEqual(await openFilesLimits(svc.pid), { soft: "4096", hard: "4096" });
    await logged(svc.stderr, /open-files limit: 4096 \(hard 4096\)/);
  },
});

/**
 * `deno run` has raised the limit before svc's code runs, so the test above cannot tell whether svc
 * raises it. Here a process lowers its own soft limit (allowed to anyone) and then asks svc's code.
 */
const LOWER_THEN_RAISE = `
import { raiseOpenFilesLimit } from "${new URL("../../lib/fd_limit.ts", import.meta.url).href}";
const libc = Deno.dlopen("libc.so.6", {
  getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
});
const limit = new BigUint64Array(2);
libc.symbols.getrlimit(7, limit);
libc.symbols.setrlimit(7, new BigUint64Array([256n, limit[1]]));
const result = raiseOpenFilesLimit();
console.log(JSON.stringify(result, (_, v) => typeof v === "bigint" ? String(v) : v));
`;

Deno.test({
  name: "raiseOpenFilesLimit() raises a lowered soft limit to the hard one and says from what",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const output = await outputWithin(Deno.execPath(), {
      args: ["eval", "--quiet", LOWER_THEN_RAISE],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }, "a process that lowers and raises its limit");
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    const result = JSON.parse(new TextDecoder().decode(output.stdout));
    assert.equal(result.raisedFrom, "256", JSON.stringify(result));
    assert.equal(result.soft, result.hard);
  },
});
