/**
 * svc's own process is not dumpable on Linux, so a worker (the same user) cannot read its
 * `/proc/<pid>/environ`, where API keys given as variables stay for the life of the process. Root
 * reads every process's files whatever this says, so the check is on the flag itself.
 */
import assert from "node:assert/strict";
import { hardenProcess } from "../../lib/process_hardening.ts";
import { logged, startSvc } from "../support/harness.ts";

const LINUX = Deno.build.os === "linux";

Deno.test({
  name: "security: hardenProcess() makes a process non-dumpable",
  ignore: !LINUX,
  async fn() {
    // In a child, so this test process stays as it is.
    const script = `
      import { hardenProcess } from ${
      JSON.stringify(new URL("../../lib/process_hardening.ts", import.meta.url).href)
    };
      const outcome = hardenProcess();
      const libc = Deno.dlopen("libc.so.6", { prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" } });
      console.log(outcome, libc.symbols.prctl(3, 0n, 0n, 0n, 0n));`;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--no-config", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout).trim();
    assert.equal(text, "done 0", new TextDecoder().decode(output.stderr));
    assert.equal(typeof hardenProcess, "function");
  },
});

Deno.test({
  name: "security: svc serve makes itself non-dumpable before it starts a worker",
  ignore: !LINUX,
  async fn() {
    await using svc = await startSvc();
    await logged(svc.stderr, /svc is not dumpable: its workers cannot read its environment/);
    const pid = svc.serverPid()!;
    // A non-dumpable process's /proc entries belong to root, whatever user it runs as.
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    assert.match(status, /^Uid:/m);
    const log = svc.stderr();
    assert.ok(
      log.indexOf("svc is not dumpable") < log.indexOf("Starting a new PowerShell worker") ||
        !log.includes("Starting a new PowerShell worker"),
      "hardened before any worker starts",
    );
  },
});
