/**
 * The worker's memory settings on real PowerShell (docs/runspaces.md, "Memory"): a quiet process
 * gives its memory back (`lib/host/cs/IdleTrim.cs`) without harm to the next call, a running call
 * holds the trim off, the runtime settings svc adds reach the process but not user code, and a
 * server whose processes are retired for `MaxWorkerMemoryMB` stays live while it replaces them.
 */
import assert from "node:assert/strict";
import { RunspaceWorker } from "../lib/worker.ts";
import {
  eventually,
  fixtureConfig,
  logged,
  post,
  startHttpSvc,
  TEST_PWSH as pwsh,
  withEnv,
} from "./support/harness.ts";

const NO_STARTUP = { modules: [], scriptPath: null, script: null };

async function call(worker: RunspaceWorker, command: string, parameters = {}) {
  const { result } = await worker.invoke({ command, parameters, credentials: [], depth: 2 }, {
    timeoutMs: 30_000,
  });
  await worker.reset();
  return result.output;
}

const trims = async (worker: RunspaceWorker) =>
  (await call(worker, "Invoke-Expression", { Command: "[Svc.Host.IdleTrim]::Count" }))[0];

Deno.test("a quiet worker process trims its memory once, a running call holds it off, and the next call works", async () => {
  // A quiet time of 1 s instead of svc's 5 s; the slot loops look about once a second.
  await using worker = await RunspaceWorker.start({
    pwsh,
    stopTimeoutMs: 3_000,
    runspacesPerProcess: 2,
    idleTrimMs: 1_000,
  });
  await worker.startup(NO_STARTUP, 60_000);
  await using sibling = await worker.openSibling();
  await sibling.startup(NO_STARTUP, 60_000);
  // The host set the quiet time before any call: a call cannot change it for the calls after it.
  await call(sibling, "Invoke-Expression", {
    Command: "[Svc.Host.IdleTrim]::SetQuietTime(600000)",
  });
  // A call on one runspace keeps its sibling's loop, quiet all along, from trimming while it runs:
  // past the quiet time and two looks of that loop.
  await call(sibling, "Start-Sleep", { Milliseconds: 3_000 });
  assert.equal(await trims(worker), 0, "trimmed while a call of the process ran");
  // The count read is a call: 3.5 s of quiet after it trim once, not at every look past 1 s.
  await new Promise((resolve) => setTimeout(resolve, 3_500));
  assert.equal(await trims(worker), 1, "not trimmed exactly once in 3.5 s of quiet");
  const [date] = await call(worker, "Get-Date", { Year: 2020 });
  assert.match(String(date), /^2020-/);
  assert.deepEqual(await call(sibling, "Write-Output", { InputObject: "after the trim" }), [
    "after the trim",
  ]);
});

/** The variables `pid` was started with (Linux): what the runtime read at its start. */
function startEnvironment(pid: number): Map<string, string> {
  const text = Deno.readTextFileSync(`/proc/${pid}/environ`);
  return new Map(
    text.split("\0").filter(Boolean).map((entry) => {
      const at = entry.indexOf("=");
      return [entry.slice(0, at), entry.slice(at + 1)];
    }),
  );
}

const RUNTIME_SETTINGS_TEST =
  "the runtime's memory settings reach the worker process, not its commands, and svc's own value wins";
Deno.test({
  ...(Deno.build.os === "linux"
    ? { name: RUNTIME_SETTINGS_TEST }
    : { name: `${RUNTIME_SETTINGS_TEST} [skipped: reads /proc]`, ignore: true }),
  async fn() {
    const visible = async (worker: RunspaceWorker, name: string) =>
      (await call(worker, "Test-Path", { Path: `env:${name}` }))[0];
    const name = "DOTNET_GCgen0size";
    await withEnv({ [name]: undefined, COMPlus_GCgen0size: undefined }, async () => {
      await using worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000 });
      await worker.startup(NO_STARTUP, 60_000);
      assert.equal(startEnvironment(worker.pid).get(name), "0x400000");
      assert.equal(await visible(worker, name), false);
    });
    // svc's own setting, also under the runtime's older prefix, is the user's: kept and visible.
    for (const own of [name, "COMPlus_GCgen0size"]) {
      await withEnv(
        { [name]: undefined, COMPlus_GCgen0size: undefined, [own]: "0x800000" },
        async () => {
          await using worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000 });
          await worker.startup(NO_STARTUP, 60_000);
          const environment = startEnvironment(worker.pid);
          assert.equal(environment.get(own), "0x800000");
          assert.equal(environment.has(name), own === name, `svc adds ${name} over ${own}`);
          assert.equal(await visible(worker, own), true);
        },
      );
    }
  },
});

Deno.test("http: /health stays 200 while processes retired for MaxWorkerMemoryMB are replaced; /health/ready says when the pool is short", async () => {
  // Every pwsh process is over 50 MB: each call's process is retired after it, and the pool, one
  // worker a process, is below its minimum until the replacement has started.
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: {
        RunspacePool: {
          MinPoolSize: 2,
          EagerWarmCount: 2,
          RunspacesPerProcess: 1,
          MaxWorkerMemoryMB: 50,
        },
      },
    },
  });
  const live = new Map<number, number>();
  const ready = new Map<number, number>();
  const count = (seen: Map<number, number>, status: number) =>
    seen.set(status, (seen.get(status) ?? 0) + 1);
  let polling = true;
  const poller = (async () => {
    while (polling) {
      for (const [path, seen] of [["/health", live], ["/health/ready", ready]] as const) {
        const response = await fetch(`${svc.url}${path}`);
        await response.body?.cancel();
        count(seen, response.status);
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  try {
    for (let i = 0; i < 3; i++) {
      const call = await post(`${svc.url}/call`, {
        tool: "get_fixture_greeting",
        arguments: { Name: "m" },
      });
      assert.equal(call.status, 200);
    }
    await logged(svc.stderr, /MB, over MaxWorkerMemoryMB 50/);
    assert.ok(
      await eventually(async () => {
        const response = await fetch(`${svc.url}/health/ready`);
        await response.body?.cancel();
        return response.status === 200;
      }, 60_000),
      "the pool is back at its minimum",
    );
  } finally {
    polling = false;
    await poller;
  }
  assert.ok((ready.get(503) ?? 0) > 0, `readiness never saw the pool short: ${[...ready]}`);
  assert.deepEqual([...live.keys()], [200], `liveness answered ${[...live]}`);
});
