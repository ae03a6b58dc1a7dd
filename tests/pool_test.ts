/**
 * The HTTP worker pool with real pwsh worker processes and short intervals: eager warm-up, growth
 * to MaxPoolSize, idle reclaim to MinPoolSize, replenishment, acquisition timeout, reset failures and
 * reset off the response path; then the same failure paths through `svc serve --transport http`.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import type { ShellSettings } from "../lib/config.ts";
import type { PoolSettings } from "../lib/config_pool.ts";
import { WorkerPool } from "../lib/pool.ts";
import { GROWTH_HOLD_BACK_MS } from "../lib/pool_wait.ts";
import { type Lease, PoolError } from "../lib/pool_contract.ts";
import type { InvokeOptions, PromptAnswer, RunspaceWorker, WorkerPrompt } from "../lib/worker.ts";
import {
  errorOf,
  eventually,
  FIXTURE_MODULE,
  fixtureConfig,
  isAlive,
  logged,
  post,
  processesMatching,
  startHttpSvc,
  TEST_PWSH,
  workerDirectories,
} from "./support/harness.ts";

const shell: ShellSettings = {
  pwshPath: null,
  commands: [],
  includePatterns: [],
  excludePatterns: [],
  promptCommands: [],
  modules: [FIXTURE_MODULE],
  startupScript: null,
  startupScriptPath: null,
  toolCallTimeoutMs: 30_000,
  userInputTimeoutMs: 120_000,
  maxResultBytes: 1_048_576,
  serializationDepth: 4,
  requestLimits: {
    maxRequestedProperties: 64,
    maxRequestedPropertyWildcards: 8,
    maxArgumentItems: 10_000,
  },
  useDefaultDisplayProperties: true,
  toolGranularity: "ParameterSet",
  promptsAnsweredBy: "User",
  confirmPreference: "High",
  commandOverrides: {},
  cacheDirectory: null,
  hostCacheDirectory: null,
  workerStartTimeoutMs: 30_000,
  keepNativeProcesses: false,
  reloadOnChange: false,
  workerEnvironment: { pass: [], remove: [] },
};

function poolSettings(extra: Partial<PoolSettings> = {}): PoolSettings {
  return {
    maxPoolSize: 4,
    minPoolSize: 1,
    eagerWarmCount: 2,
    idleTtlMs: 60_000,
    sweepIntervalMs: 60_000,
    // Bounds only how long a failing test waits: a new worker can take 10 s to start on two busy
    // cores. A test of the time-out itself sets its own.
    acquisitionTimeoutMs: 30_000,
    stopTimeoutMs: 2_000,
    shutdownDrainTimeoutMs: 5_000,
    replenishCheckIntervalMs: 60_000,
    // A process per worker unless a test says otherwise: most tests here count processes.
    runspacesPerProcess: 1,
    maxWorkerMemoryMB: 0,
    hostMode: "Pool",
    ...extra,
  };
}

/** Starts `Invoke-FixtureStuck` for 60 s: a call that ignores Stop, its child's pid in `pidFile`. */
function invokeStuck(worker: RunspaceWorker, pidFile: string, options: InvokeOptions = {}) {
  return worker.invoke(
    {
      command: "Invoke-FixtureStuck",
      parameters: { Seconds: 60, PidFile: pidFile },
      credentials: [],
      depth: 4,
    },
    options,
  );
}

function invokeGreeting(lease: Lease, name: string) {
  return lease.worker.invoke({
    command: "Get-FixtureGreeting",
    parameters: { Name: name },
    credentials: [],
    depth: 4,
  });
}

Deno.test("WorkerPool.start() warms EagerWarmCount workers before it resolves", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({ eagerWarmCount: 3 }),
  });
  const stats = pool.stats();
  assert.equal(stats.warm, 3);
  assert.equal(stats.total, 3);
  assert.ok(pool.ready());
});

Deno.test("a lease made while the pool warms waits for the first workers, not for AcquisitionTimeout", async () => {
  // The startup script outlasts the acquisition timeout several times over.
  await using pool = new WorkerPool({
    pwsh: TEST_PWSH,
    shell: { ...shell, startupScript: "Start-Sleep -Milliseconds 1500" },
    pool: poolSettings({ eagerWarmCount: 1, maxPoolSize: 1, acquisitionTimeoutMs: 200 }),
  });
  let spawnedFirst = false;
  const spawned = pool.spawned.then(() => (spawnedFirst = !pool.ready()));
  assert.equal(pool.stats().warm, 0);
  const lease = await pool.lease();
  try {
    await spawned;
    assert.ok(spawnedFirst, "spawned resolves once the process is spawned, before it is warm");
    assert.equal(pool.stats().leased, 1);
  } finally {
    lease.release();
  }
  const aborted = pool.lease({ signal: AbortSignal.abort() });
  await assert.rejects(aborted, /cancelled while waiting for a worker/);
});

Deno.test("WorkerPool.lease() grows to MaxPoolSize under load", async () => {
  // Growth must finish within the acquisition timeout: it starts one worker after another on two
  // cores, about a second each, more when the cores are busy.
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({ eagerWarmCount: 1, maxPoolSize: 4, acquisitionTimeoutMs: 60_000 }),
  });
  const leases = await Promise.all(Array.from({ length: 4 }, () => pool.lease()));
  assert.equal(pool.stats().leased, 4);
  assert.equal(pool.stats().total, 4);
  assert.equal(new Set(leases.map((l) => l.worker.pid)).size, 4, "four distinct workers");
  for (const lease of leases) lease.release();
  assert.ok(await eventually(() => pool.stats().warm === 4));
});

Deno.test("WorkerPool.lease() at MaxPoolSize refuses with EXHAUSTED after AcquisitionTimeout", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({ eagerWarmCount: 1, maxPoolSize: 1, acquisitionTimeoutMs: 1_000 }),
  });
  const lease = await pool.lease();
  const started = Date.now();
  await assert.rejects(() => pool.lease(), (error: unknown) => {
    assert.ok(error instanceof PoolError);
    assert.equal(error.code, "EXHAUSTED");
    assert.ok(error.message.includes("within 1 s: 1 busy, 1 of at most 1 workers"), error.message);
    return true;
  });
  // It waited the timeout, and not much longer (room for two busy cores).
  const waited = Date.now() - started;
  assert.ok(waited >= 950 && waited < 6_000, `waited ${waited} ms`);
  lease.release();
  assert.ok(await eventually(() => pool.stats().warm === 1));
});

Deno.test("WorkerPool grows a burst paced: never more workers starting at once than growthConcurrency", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({ eagerWarmCount: 1, maxPoolSize: 4, acquisitionTimeoutMs: 60_000 }),
    growthConcurrency: 1,
  });
  let mostStarting = 0;
  const sampler = setInterval(() => {
    mostStarting = Math.max(mostStarting, pool.stats().creating);
  }, 5);
  try {
    const leases = await Promise.all(Array.from({ length: 4 }, () => pool.lease()));
    assert.equal(pool.stats().total, 4, "the burst still grew the pool to its maximum");
    for (const lease of leases) lease.release();
  } finally {
    clearInterval(sampler);
  }
  assert.equal(mostStarting, 1, "one start at a time");
});

Deno.test("WorkerPool hands a returned worker to a waiting caller, clean", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({ eagerWarmCount: 1, maxPoolSize: 1, minPoolSize: 1 }),
  });
  const first = await pool.lease();
  // Under the call's limits (MaxResultBytes 1 MiB here) a prompt's strings are cut, its answer still
  // found under the cut name, and a prompt too large to send is not asked: the command stops there.
  let cut = "";
  const long = await first.worker.invoke({
    command: "Invoke-Expression",
    parameters: {
      Command: "Read-Host -Prompt ('p' * 40000); " +
        "$Host.UI.PromptForChoice('', 'Which?', [System.Management.Automation.Host.ChoiceDescription[]]((1..2000) -replace '^', ('c' * 600)), 0)",
    },
    credentials: [],
    depth: 4,
  }, {
    onPrompt: (prompt) => {
      cut = prompt.fields![0]!.name;
      return Promise.resolve({ action: "accept", values: { [cut]: "answered" } });
    },
  });
  assert.ok(cut.length < 20_000 && cut.includes("characters cut"), cut.slice(0, 80));
  assert.deepEqual(long.result.output, ["answered"]);
  assert.equal(long.interrupted, "prompt");
  assert.match(
    long.prompts?.at(-1)?.prompt.message ?? "",
    /^asked a question of \d+ bytes, more than a call may send svc \(1048576, ShellConfiguration:MaxResultBytes\)/,
  );
  // As over HTTP: the lease's one call chains its reset. The call is interactive and its prompt is
  // never answered: it is stopped once UserInputTimeout runs out, and the worker still comes back
  // clean.
  const interactive = await first.worker.invoke({
    command: "Invoke-Expression",
    parameters: { Command: "$global:dirty = 1; Read-Host -Prompt Name" },
    credentials: [],
    depth: 4,
  }, {
    thenReset: true,
    userInputTimeoutMs: 200,
    onPrompt: (_prompt, signal) =>
      new Promise((resolve) =>
        signal.addEventListener("abort", () => resolve({ action: "cancel" }))
      ),
  });
  assert.equal(interactive.interrupted, "prompt");
  assert.deepEqual(interactive.prompts?.map((record) => record.action), ["timeout"]);
  const waiting = pool.lease();
  first.release();
  const second = await waiting;
  assert.equal(second.worker.pid, first.worker.pid);
  const { result } = await second.worker.invoke({
    command: "Get-Variable",
    parameters: { Name: ["dirty"] },
    credentials: [],
    depth: 4,
  });
  assert.ok(result.errors.length > 0, "the variable was reset away");
  second.release();
});

Deno.test("WorkerPool reclaims idle workers down to MinPoolSize", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({ eagerWarmCount: 3, minPoolSize: 1, idleTtlMs: 200, sweepIntervalMs: 100 }),
  });
  assert.equal(pool.stats().total, 3);
  assert.ok(await eventually(() => pool.stats().total === 1), JSON.stringify(pool.stats()));
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(pool.stats().total, 1, "never below MinPoolSize");
});

Deno.test("WorkerPool replenishes to MinPoolSize after workers are killed", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    // A long replenish interval: the replacement must come from noticing the exit, not the timer.
    pool: poolSettings({ eagerWarmCount: 2, minPoolSize: 2, replenishCheckIntervalMs: 60_000 }),
  });
  const leases = [await pool.lease(), await pool.lease()];
  const pids = leases.map((l) => l.worker.pid);
  for (const lease of leases) lease.release();
  assert.ok(await eventually(() => pool.stats().warm === 2));
  for (const pid of pids) Deno.kill(pid, "SIGKILL");
  // The pool learns of an exit when the process is reaped, a moment after `ps` shows it gone.
  assert.ok(await eventually(() => leases.every((l) => l.worker.exitCode !== null)));
  assert.ok(await eventually(() => pool.stats().warm === 2), JSON.stringify(pool.stats()));
  const lease = await pool.lease();
  assert.ok(!pids.includes(lease.worker.pid), "a new worker serves");
  assert.deepEqual((await invokeGreeting(lease, "again")).result.output, ["Hello, again!"]);
  lease.release();
});

Deno.test("WorkerPool evicts a worker whose reset fails and replaces it", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({ eagerWarmCount: 1, minPoolSize: 1, replenishCheckIntervalMs: 100 }),
  });
  const lease = await pool.lease();
  const pid = lease.worker.pid;
  // A module the startup imported cannot be imported back by the reset: the worker is not clean.
  const { result } = await lease.worker.invoke({
    command: "Remove-Module",
    parameters: { Name: "SvcFixture", Force: true },
    credentials: [],
    depth: 4,
  });
  assert.deepEqual(result.errors, []);
  lease.release();
  assert.ok(await eventually(() => !isAlive(pid)), "the worker that could not reset is gone");
  assert.ok(await eventually(() => pool.stats().warm === 1));
  const next = await pool.lease();
  assert.notEqual(next.worker.pid, pid);
  assert.deepEqual((await invokeGreeting(next, "clean")).result.output, ["Hello, clean!"]);
  next.release();
});

Deno.test("WorkerPool keeps the reset off the response path: a slow reset holds only its own worker", async () => {
  // A module whose OnRemove takes 1.5 s: the reset that removes it is slow the real way.
  const dir = await Deno.makeTempDir({ prefix: "svc-slow-reset-" });
  const module = `${dir}/SlowRemove.psm1`;
  await Deno.writeTextFile(
    module,
    "$ExecutionContext.SessionState.Module.OnRemove = { Start-Sleep -Milliseconds 1500 }\n",
  );
  try {
    await using pool = await WorkerPool.start({
      pwsh: TEST_PWSH,
      shell,
      pool: poolSettings({ eagerWarmCount: 2, minPoolSize: 2, maxPoolSize: 2 }),
    });
    const first = await pool.lease();
    const { result } = await first.worker.invoke({
      command: "Import-Module",
      parameters: { Name: module },
      credentials: [],
      depth: 4,
    });
    assert.deepEqual(result.errors, []);
    first.release();
    assert.equal(pool.stats().resetting, 1, "the reset runs after the call has returned");
    // A worker resetting after its call still counts as leased (SPEC §3.4): readiness must not
    // drop after every burst of calls.
    assert.equal(pool.status(), "Healthy");
    assert.equal(pool.ready(), true);
    const second = await pool.lease();
    assert.notEqual(second.worker.pid, first.worker.pid, "the next call takes the other worker");
    assert.equal(pool.stats().resetting, 1, "and did not wait for the reset to end");
    assert.deepEqual((await invokeGreeting(second, "fast")).result.output, ["Hello, fast!"]);
    second.release();
    assert.ok(
      await eventually(() => pool.stats().warm === 2, 20_000),
      JSON.stringify(pool.stats()),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("WorkerPool.drain() lets a running call finish, then closes every worker", async () => {
  const pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({ eagerWarmCount: 2 }),
  });
  const pids: number[] = [];
  const lease = await pool.lease();
  pids.push(lease.worker.pid);
  const call = lease.worker.invoke({
    command: "Start-Sleep",
    parameters: { Milliseconds: 500 },
    credentials: [],
    depth: 4,
  })
    .finally(() => lease.release());
  const drained = pool.drain();
  await assert.rejects(() => pool.lease(), { name: "PoolError", code: "DRAINING" });
  const { result } = await call;
  assert.equal(result.stopped, false, "the in-flight call completed");
  await drained;
  assert.equal(pool.stats().total, 0);
  assert.ok(await eventually(() => pids.every((pid) => !isAlive(pid))));
});

Deno.test("WorkerPool.drain() closes a worker that was still starting, and no worker leaves its directory", async () => {
  // Drained before the worker that growth adds has said hello, the pool has no worker to close yet:
  // it must close it once it has started. pwsh takes 0.3 s or more to say hello, and the drain
  // below comes within one 50 ms poll (and one `ps`) of the spawn.
  const pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({ eagerWarmCount: 1, maxPoolSize: 2, acquisitionTimeoutMs: 30_000 }),
  });
  const first = await pool.lease();
  const second = pool.lease();
  second.catch(() => {});
  assert.ok(
    await eventually(() => workerDirectories().size === 2),
    "growth spawned a second worker",
  );
  const workers = workerDirectories();
  assert.equal(pool.stats().creating, 1, "the second worker is still starting");
  first.release();
  await pool.drain();
  await assert.rejects(() => second, { name: "PoolError", code: "DRAINING" });
  assert.equal(pool.stats().total, 0);
  for (const [pid, dir] of workers) {
    assert.ok(!isAlive(pid), `worker ${pid} was closed`);
    assert.ok(!existsSync(dir), `worker ${pid} removed ${dir}`);
  }
});

Deno.test("http: a failing startup script evicts workers with the SPEC warning and readiness stays 503", async () => {
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig({
        Environment: { StartupScript: "throw 'managed identity sign-in failed'" },
      }),
      McpServer: {
        RunspacePool: { MinPoolSize: 1, EagerWarmCount: 1, ReplenishCheckInterval: "00:00:00.200" },
      },
    },
  });
  assert.ok(
    await eventually(() =>
      svc.stderr().includes("Worker startup failed; evicting without entering pool.")
    ),
  );
  assert.match(svc.stderr(), /WARNING .*Worker startup failed; evicting without entering pool\./);
  assert.match(svc.stderr(), /managed identity sign-in failed/);
  const ready = await fetch(`${svc.url}/health/ready`);
  assert.equal(ready.status, 503);
  assert.notEqual((await ready.json()).status, "Healthy");
  // The replenisher keeps trying (up to MaxPoolSize), so more failures follow.
  assert.ok(
    await eventually(() => svc.stderr().split("Worker startup failed").length > 2),
    "the pool replenishes after an eviction",
  );
});

Deno.test("http: an exhausted pool answers an isError result over MCP and 503 with Retry-After on /call", async () => {
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: {
        RunspacePool: {
          MinPoolSize: 1,
          EagerWarmCount: 1,
          MaxPoolSize: 1,
          AcquisitionTimeout: "00:00:00.500",
        },
      },
    },
  });
  // The busy call holds the only worker until the test releases it.
  const scratch = await Deno.makeTempDir({ prefix: "svc-exhausted-" });
  const release = `${scratch}/release`;
  const busy = post(`${svc.url}/call`, { tool: "wait_fixture_file", arguments: { Path: release } });
  const leased = async () =>
    ((await (await fetch(`${svc.url}/health`)).json()) as { pool: { leased: number } }).pool
      .leased === 1;
  assert.ok(await eventually(leased), "the sleeping call holds the only worker");
  const refused = await post(`${svc.url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "x" },
  });
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get("retry-after"), "1");
  assert.match(
    errorOf(refused.body).message,
    /No PowerShell worker became free within 0\.5 s: 1 busy, 1 of at most 1/,
  );
  assert.equal((errorOf(refused.body).data as { isError: boolean }).isError, true);
  const mcp = await post(svc.url, {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "get_fixture_greeting", arguments: { Name: "x" } },
  }, { accept: "application/json", "mcp-protocol-version": "2025-11-25" });
  assert.equal(mcp.status, 200);
  const result = (mcp.body as { result: { isError: boolean; content: { text: string }[] } }).result;
  assert.equal(result.isError, true);
  assert.match(result.content[0]!.text, /became free/);
  // Health answers while the only worker is still busy: it does not wait for the pool.
  const first = await Promise.race([
    fetch(`${svc.url}/health`).then(async (response) => {
      assert.equal(response.status, 200);
      await response.body?.cancel();
      return "health";
    }),
    busy.then(() => "the busy call"),
  ]);
  assert.equal(first, "health", "health answers while the pool is exhausted");
  await Deno.writeTextFile(release, "");
  assert.equal((await busy).status, 200);
  await Deno.remove(scratch, { recursive: true });
});

Deno.test("http: a worker that crashes mid-call affects only its own call", async () => {
  // A crash ends a process with every runspace in it: a process per worker is what makes the
  // promise below hold for calls running at the same moment.
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: {
        RunspacePool: { MinPoolSize: 2, EagerWarmCount: 2, MaxPoolSize: 4, RunspacesPerProcess: 1 },
      },
    },
  });
  const others = Array.from(
    { length: 6 },
    (_, i) =>
      post(`${svc.url}/call`, { tool: "get_fixture_greeting", arguments: { Name: `n${i}` } }),
  );
  const crash = await post(`${svc.url}/call`, {
    tool: "invoke_fixture_exit",
    arguments: { Code: 7 },
  });
  const crashed = crash.body as { isError: boolean; content: { text: string }[] };
  assert.equal(crashed.isError, true);
  assert.match(crashed.content[0]!.text, /exited with code 7/);
  for (const response of await Promise.all(others)) {
    assert.equal((response.body as { isError?: boolean }).isError, undefined);
  }
  const after = await post(`${svc.url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "after" },
  });
  assert.deepEqual(
    (after.body as { structuredContent: { output: unknown } }).structuredContent.output,
    ["Hello, after!"],
  );
});

Deno.test("http: SIGTERM drains in-flight calls, exits 0 and leaves no worker process", async () => {
  const svc = await startHttpSvc();
  try {
    const call = post(`${svc.url}/call`, {
      tool: "start_sleep_milliseconds",
      arguments: { Milliseconds: 800 },
    });
    assert.ok(
      await eventually(async () =>
        ((await (await fetch(`${svc.url}/health`)).json()) as { pool: { leased: number } }).pool
          .leased === 1
      ),
      "the call holds a worker",
    );
    const code = svc.stop("SIGTERM");
    const response = await call;
    assert.equal(response.status, 200, "the in-flight call was allowed to finish");
    assert.equal((response.body as { isError?: boolean }).isError, undefined);
    assert.equal(await code, 0);
    assert.match(svc.stderr(), /Pool draining: stopping new acquisitions\./);
    assert.match(svc.stderr(), /RunspacePool disposed\./);
    assert.ok(await eventually(() => processesMatching(svc.dir).length === 0));
  } finally {
    await svc[Symbol.asyncDispose]();
  }
});

Deno.test("http: the whole drain takes at most ShutdownDrainTimeout, a second signal cuts off at once, and the callers cut off are told svc is shutting down", async () => {
  const drainSeconds = 4;
  const config = (drain: number) => {
    const base = fixtureConfig();
    return {
      ...base,
      McpServer: {
        RunspacePool: {
          StopTimeout: "00:00:02",
          ShutdownDrainTimeout: `00:00:${String(drain).padStart(2, "0")}`,
        },
      },
    };
  };
  // The catalog first: a cold start's discovery leases a worker too, and a drain cuts it off.
  const holdsWorker = async (url: string) =>
    (await fetch(`${url}/tools`)).ok &&
    await eventually(async () =>
      ((await (await fetch(`${url}/health`)).json()) as { pool: { leased: number } }).pool
        .leased === 1
    );
  const sleeper = (url: string) =>
    post(`${url}/call`, { tool: "start_sleep_seconds", arguments: { Seconds: 120 } });
  const cutOff = (response: Awaited<ReturnType<typeof post>>) => {
    const body = response.body as { isError?: boolean; content: { text: string }[] };
    assert.equal(body.isError, true, JSON.stringify(body));
    assert.match(
      body.content[0]!.text,
      /^svc is shutting down: the call did not end within ShutdownDrainTimeout \(\d+ s\)/,
    );
  };
  {
    // A call that outlasts the drain: svc exits at ShutdownDrainTimeout, not at twice it.
    const svc = await startHttpSvc({ config: config(drainSeconds) });
    try {
      const call = sleeper(svc.url);
      assert.ok(await holdsWorker(svc.url), "the call holds a worker");
      const began = performance.now();
      const code = svc.stop("SIGTERM");
      cutOff(await call);
      assert.equal(await code, 0);
      const seconds = (performance.now() - began) / 1000;
      // Before, the server and then the pool each waited ShutdownDrainTimeout (2x).
      assert.ok(seconds / drainSeconds < 1.75, `svc took ${seconds.toFixed(1)} s to exit`);
      assert.ok(await eventually(() => processesMatching(svc.dir).length === 0));
    } finally {
      await svc[Symbol.asyncDispose]();
    }
  }
  // A second signal does not wait for the rest of a long drain.
  const longDrain = 40;
  const svc = await startHttpSvc({ config: config(longDrain) });
  try {
    const call = sleeper(svc.url);
    assert.ok(await holdsWorker(svc.url), "the call holds a worker");
    const code = svc.stop("SIGTERM");
    assert.ok(await eventually(() => /Shutting down: no new requests/.test(svc.stderr())));
    const began = performance.now();
    Deno.kill(svc.pid, "SIGTERM");
    const response = await call;
    cutOff(response);
    assert.match(
      (response.body as { content: { text: string }[] }).content[0]!.text,
      /or was stopped by a second signal/,
    );
    assert.equal(await code, 0);
    const seconds = (performance.now() - began) / 1000;
    assert.ok(
      seconds / longDrain < 0.25,
      `svc took ${seconds.toFixed(1)} s after the second signal`,
    );
    assert.match(svc.stderr(), /Asked again to stop: cutting off the calls in flight now\./);
  } finally {
    await svc[Symbol.asyncDispose]();
  }
});

Deno.test({
  name: "a worker killed from outside takes the processes its command started with it",
  ignore: Deno.build.os === "windows",
  async fn() {
    const { RunspaceWorker } = await import("../lib/worker.ts");
    await using worker = await RunspaceWorker.start({ pwsh: TEST_PWSH, stopTimeoutMs: 2_000 });
    await worker.startup({ modules: [FIXTURE_MODULE], scriptPath: null, script: null });
    const pidFile = await Deno.makeTempFile();
    const call = invokeStuck(worker, pidFile);
    assert.ok(await eventually(async () => (await Deno.readTextFile(pidFile)).trim() !== ""));
    const child = Number((await Deno.readTextFile(pidFile)).trim());
    assert.ok(isAlive(child));
    Deno.kill(worker.pid, "SIGKILL");
    await assert.rejects(call, { name: "WorkerError", code: "EXITED" });
    assert.ok(await eventually(() => !isAlive(child)), "the command's child outlived its worker");
    await Deno.remove(pidFile);
  },
});

Deno.test("WorkerPool with RunspacesPerProcess: workers share processes, never their state", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({
      eagerWarmCount: 2,
      minPoolSize: 2,
      maxPoolSize: 6,
      runspacesPerProcess: 3,
      acquisitionTimeoutMs: 60_000,
    }),
  });
  assert.equal(pool.stats().warm, 2);
  const leases = await Promise.all(Array.from({ length: 6 }, () => pool.lease()));
  assert.equal(pool.stats().total, 6);
  const pids = new Set(leases.map((l) => l.worker.pid));
  assert.equal(pids.size, 2, "six workers in two processes of three");
  // One worker's call is held for its user's answer while its siblings, in the same process, serve
  // theirs.
  let answer: (answer: PromptAnswer) => void = () => {};
  const asked = Promise.withResolvers<WorkerPrompt>();
  const waiting = leases[0]!.worker.invoke({
    command: "Invoke-Expression",
    parameters: { Command: "Read-Host -Prompt Name" },
    credentials: [],
    depth: 4,
  }, {
    onPrompt: (prompt) => {
      asked.resolve(prompt);
      return new Promise((resolve) => answer = resolve);
    },
  });
  assert.equal((await asked.promise).kind, "text");
  // Each worker has its own runspace: a variable set in one is not seen by its siblings.
  await Promise.all(
    leases.map((lease, i) =>
      lease.worker.invoke({
        command: "Set-Variable",
        parameters: { Name: "mine", Value: i },
        credentials: [],
        depth: 4,
      })
    ).slice(1),
  );
  answer({ action: "accept", values: { Name: "Ada" } });
  assert.deepEqual((await waiting).result.output, ["Ada"]);
  await leases[0]!.worker.invoke({
    command: "Set-Variable",
    parameters: { Name: "mine", Value: 0 },
    credentials: [],
    depth: 4,
  });
  const seen = await Promise.all(leases.map(async (lease) => {
    const { result } = await lease.worker.invoke({
      command: "Get-Variable",
      parameters: { Name: ["mine"], ValueOnly: true },
      credentials: [],
      depth: 4,
    });
    return result.output[0];
  }));
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5]);
  for (const lease of leases) lease.release();
  assert.ok(await eventually(() => pool.stats().warm === 6));
  const again = await pool.lease();
  const { result } = await again.worker.invoke({
    command: "Get-Variable",
    parameters: { Name: ["mine"] },
    credentials: [],
    depth: 4,
  });
  assert.ok(result.errors.length > 0, "the reset removed the variable");
  again.release();
});

Deno.test({
  name: "WorkerPool with RunspacesPerProcess: a call that ignores Stop costs its siblings nothing",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using pool = await WorkerPool.start({
      pwsh: TEST_PWSH,
      shell,
      pool: poolSettings({
        eagerWarmCount: 2,
        minPoolSize: 2,
        maxPoolSize: 2,
        runspacesPerProcess: 2,
        stopTimeoutMs: 500,
      }),
    });
    const [stuck, sibling] = [await pool.lease(), await pool.lease()];
    assert.equal(stuck.worker.pid, sibling.worker.pid, "both runspaces in one process");
    const processId = stuck.worker.pid;
    const pidFile = await Deno.makeTempFile();
    const sleeping = sibling.worker.invoke({
      command: "Start-Sleep",
      parameters: { Milliseconds: 3_000 },
      credentials: [],
      depth: 4,
    });
    // Time enough for the stuck command to start its child and block in .NET even on a loaded
    // machine; stopped earlier, it would stop cleanly and not be stuck at all.
    const call = invokeStuck(stuck.worker, pidFile, { timeoutMs: 1_000 });
    await assert.rejects(call, (error: Error & { code?: string }) => {
      assert.equal(error.code, "TIMEOUT");
      assert.match(error.message, /its process is killed once its other calls end/);
      return true;
    });
    assert.ok(!stuck.worker.alive && !sibling.worker.alive, "the process takes no new calls");
    // Returned at once, as the HTTP layer does after an error: evicting it must not end the process.
    stuck.release();
    const child = Number((await Deno.readTextFile(pidFile)).trim());
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(isAlive(processId), "the sibling's call still runs");
    const { result, interrupted } = await sleeping;
    assert.equal(interrupted, null);
    assert.equal(result.errors.length, 0, "the sibling's call ended normally");
    sibling.release();
    assert.ok(await eventually(() => !isAlive(processId) && !isAlive(child)));
    // The pool replaces both with a new process.
    const next = await pool.lease();
    assert.notEqual(next.worker.pid, processId);
    assert.deepEqual((await invokeGreeting(next, "again")).result.output, ["Hello, again!"]);
    next.release();
    await Deno.remove(pidFile);
  },
});

Deno.test({
  name:
    "WorkerPool with RunspacesPerProcess: idle siblings of a stuck call go at once, and its child with them",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using pool = await WorkerPool.start({
      pwsh: TEST_PWSH,
      shell,
      pool: poolSettings({
        eagerWarmCount: 3,
        minPoolSize: 1,
        maxPoolSize: 3,
        runspacesPerProcess: 3,
        stopTimeoutMs: 500,
      }),
    });
    assert.equal(pool.stats().warm, 3);
    const lease = await pool.lease();
    const processId = lease.worker.pid;
    const pidFile = await Deno.makeTempFile();
    await assert.rejects(invokeStuck(lease.worker, pidFile, { timeoutMs: 1_000 }), {
      name: "WorkerError",
      code: "TIMEOUT",
    });
    const child = Number((await Deno.readTextFile(pidFile)).trim());
    lease.release();
    // No further call comes: the two idle workers must not keep the process alive.
    assert.ok(await eventually(() => !isAlive(processId) && !isAlive(child)));
    assert.ok(await eventually(() => pool.stats().warm >= 1), JSON.stringify(pool.stats()));
    const next = await pool.lease();
    assert.notEqual(next.worker.pid, processId);
    next.release();
    await Deno.remove(pidFile);
  },
});

Deno.test("WorkerPool with RunspacesPerProcess: more eager workers than one process holds fill several processes", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    shell,
    pool: poolSettings({
      eagerWarmCount: 5,
      minPoolSize: 5,
      maxPoolSize: 5,
      runspacesPerProcess: 2,
    }),
  });
  assert.equal(pool.stats().warm, 5);
  const leases = await Promise.all(Array.from({ length: 5 }, () => pool.lease()));
  const perProcess = new Map<number, number>();
  for (const lease of leases) {
    perProcess.set(lease.worker.pid, (perProcess.get(lease.worker.pid) ?? 0) + 1);
  }
  assert.deepEqual([...perProcess.values()].sort(), [1, 2, 2], "three processes, at most two each");
  for (const lease of leases) lease.release();
});

Deno.test("WorkerPool never gives one tenant a worker in a process serving another, and still grows to MaxPoolSize", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    pool: poolSettings({
      maxPoolSize: 4,
      minPoolSize: 2,
      eagerWarmCount: 2,
      runspacesPerProcess: 2,
      // The second tenant waits for a process start: room for two busy cores.
      acquisitionTimeoutMs: 30_000,
    }),
    shell,
  });
  // Both warm workers share one process: the first tenant takes it, the second needs another.
  const leases = await Promise.all(["a", "b", "a", "b"].map((tenant) => pool.lease({ tenant })));
  const pidsOf = (tenant: string) =>
    new Set(leases.filter((_, i) => i % 2 === (tenant === "a" ? 0 : 1)).map((l) => l.worker.pid));
  const [a, b] = [pidsOf("a"), pidsOf("b")];
  assert.deepEqual([...a].filter((pid) => b.has(pid)), [], "a process served both tenants");
  assert.equal(pool.stats().total, 4);
  for (const lease of leases) lease.release();
});

Deno.test("WorkerPool holds back a new process while another tenant's short call ends, and spawns one for a long call", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    pool: poolSettings({
      maxPoolSize: 4,
      minPoolSize: 1,
      eagerWarmCount: 1,
      runspacesPerProcess: 4,
      acquisitionTimeoutMs: 30_000,
    }),
    shell,
  });
  // "a" holds the only process for less than the hold-back: "b" gets that process afterwards.
  const a = await pool.lease({ tenant: "a" });
  const waiting = pool.lease({ tenant: "b" });
  await new Promise((r) => setTimeout(r, GROWTH_HOLD_BACK_MS / 3));
  a.release();
  const b = await waiting;
  assert.equal(b.worker.pid, a.worker.pid, "b waited for a's process instead of a new one");
  assert.equal(pool.stats().creating, 0);
  // "b" now holds it for longer than the hold-back: "a" gets a process of its own.
  const later = await pool.lease({ tenant: "a" });
  assert.notEqual(later.worker.pid, b.worker.pid);
  b.release();
  later.release();
});

// At MaxPoolSize a tenant gets room by closing an idle worker in another tenant's process. That
// worker is closed alone: retiring its process would end the other tenant's workers there too, so
// every such step cost a whole process (issue 28's tenant benchmark).
Deno.test("WorkerPool at MaxPoolSize closes one idle worker of another tenant's process, not the process", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    pool: poolSettings({
      maxPoolSize: 2,
      minPoolSize: 2,
      eagerWarmCount: 2,
      runspacesPerProcess: 2,
      // The second tenant waits for a process start: room for two busy cores.
      acquisitionTimeoutMs: 30_000,
    }),
    shell,
  });
  // Both warm workers share one process: "a" takes it, so "b" needs the idle one's room.
  const a = await pool.lease({ tenant: "a" });
  const b = await pool.lease({ tenant: "b" });
  assert.notEqual(b.worker.pid, a.worker.pid);
  assert.ok(a.worker.alive && !a.worker.process.retiring, "making room retired a's process");
  a.release();
  b.release();
  // Both reset and are warm again, a's in the process it had (a retired process would end with it).
  assert.ok(
    await eventually(() => pool.stats().warm === 2, 20_000),
    "the workers did not come back",
  );
  assert.ok(a.worker.alive && isAlive(a.worker.pid), "a's process did not outlive the room made");
});

Deno.test("WorkerPool in Single mode serves a waiting tenant before newer calls of the tenant holding the process", async () => {
  await using pool = await WorkerPool.start({
    pwsh: TEST_PWSH,
    pool: poolSettings({
      maxPoolSize: 2,
      minPoolSize: 2,
      eagerWarmCount: 2,
      runspacesPerProcess: 2,
      hostMode: "Single",
    }),
    shell,
  });
  const first = await pool.lease({ tenant: "a" });
  const order: string[] = [];
  const b = pool.lease({ tenant: "b" }).then((lease) => (order.push("b"), lease));
  // The process's second worker is warm, but "a" holds the process and "b" waits for it.
  const a = pool.lease({ tenant: "a" }).then((lease) => (order.push("a"), lease));
  first.release();
  const second = await b;
  assert.deepEqual(order, ["b"]);
  assert.equal(second.worker.pid, first.worker.pid, "Single mode opened a second process");
  second.release();
  (await a).release();
  assert.deepEqual(order, ["b", "a"]);
});

Deno.test("http: a worker process over MaxWorkerMemoryMB after a call is retired and replaced, saying why", async () => {
  // Every pwsh process is over 50 MB: the process of each call is retired after it, and the next
  // call runs in a fresh one.
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: {
        RunspacePool: {
          MinPoolSize: 1,
          EagerWarmCount: 1,
          RunspacesPerProcess: 1,
          MaxWorkerMemoryMB: 50,
        },
      },
    },
  });
  const greet = () =>
    post(`${svc.url}/call`, { tool: "get_fixture_greeting", arguments: { Name: "m" } });
  assert.equal((await greet()).status, 200);
  await logged(svc.stderr, /MB, over MaxWorkerMemoryMB 50/);
  assert.equal((await greet()).status, 200, "a fresh worker serves the next call");
});
