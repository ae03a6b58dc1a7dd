/**
 * Issue 28's cost of tenant isolation: svc over HTTP with the default pool (MaxPoolSize 16,
 * RunspacesPerProcess 8), `Start-Sleep 50 ms` through `POST /call`, closed loops at each
 * concurrency, with authentication off (one caller) or on (`--principals` API keys, default 2;
 * client i always calls with key i mod N, so the clients are spread round-robin over the
 * principals). Each concurrency is measured after a warm-up that lets the pool grow to what it needs
 * (see `warmUp`). Prints one markdown row per concurrency: calls/s, median, p95 and p99 latency, the
 * pwsh processes started during the measured seconds, and the RSS of the worker processes (total,
 * and per worker).
 *
 *   deno run -A bench/tenant.ts --pwsh <path> [--svc-root <checkout>] [--auth [--principals 2]]
 *     [--host-mode Pool|ProcessPool] [--seconds 10] [--concurrency 16,64]
 *
 * `--svc-root` runs another checkout's svc (e.g. an export of the commit before issue 28).
 * `--host-mode` sets `McpServer:SubprocessHostMode`; without it the key is left out (svc's default,
 * `Pool`), so checkouts older than the key still accept the configuration.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { descendants, rssOf } from "./lib/proc.ts";
import { summarize } from "./lib/stats.ts";
import { startHttpSvc } from "../tests/support/harness.ts";

const { values } = parseArgs({
  options: {
    pwsh: { type: "string" },
    "svc-root": { type: "string" },
    auth: { type: "boolean", default: false },
    principals: { type: "string" },
    "host-mode": { type: "string" },
    seconds: { type: "string", default: "10" },
    concurrency: { type: "string", default: "16,64" },
  },
});
const principals = Number(values.principals ?? 2);
if (values.principals !== undefined && !values.auth) {
  throw new Error(
    `--principals ${values.principals} needs --auth (without it there is one caller)`,
  );
}
if (!Number.isInteger(principals) || principals < 1) {
  throw new Error(`--principals '${values.principals}' is not a whole number of at least 1`);
}
const hostMode = values["host-mode"];
if (hostMode !== undefined && !["Pool", "ProcessPool"].includes(hostMode)) {
  throw new Error(`--host-mode '${hostMode}' is neither Pool nor ProcessPool`);
}
const keys = values.auth
  ? Array.from({ length: principals }, (_, i) => `bench-tenant-${i}-3f9c1e`)
  : [undefined];
const config = {
  ShellConfiguration: { Commands: ["Start-Sleep"] },
  McpServer: {
    RunspacePool: { AcquisitionTimeout: "00:01:00" },
    ...(hostMode ? { SubprocessHostMode: hostMode } : {}),
  },
  ...(values.auth
    ? {
      Authentication: {
        Enabled: true,
        Schemes: {
          keys: {
            Type: "ApiKey",
            Keys: Object.fromEntries(keys.map((key, i) => [`p${i}`, { Value: key }])),
          },
        },
      },
    }
    : {}),
};
const dir = await Deno.makeTempDir({ prefix: "svc-bench-tenant-" });
// Listening is enough: each concurrency's warm-up grows the pool as far as it needs.
const svc = await startHttpSvc({
  config,
  ...(values["svc-root"] ? { main: `${values["svc-root"]}/main.ts` } : {}),
  ...(values.pwsh ? { pwsh: values.pwsh } : {}),
  env: { SVC_CACHE_DIR: `${dir}/cache`, SVC_LOG_LEVEL: "Information" },
  warm: false,
});
const url = svc.url;

async function call(key: string | undefined): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${url}/call`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { "x-api-key": key } : {}) },
    body: JSON.stringify({ tool: "start_sleep_milliseconds", arguments: { Milliseconds: 50 } }),
  });
  const body = await response.json();
  if (response.status !== 200 || body.isError) {
    throw new Error(`call failed: ${response.status} ${JSON.stringify(body)}`);
  }
  return performance.now() - started;
}

/** The pwsh processes below svc now. */
function pwshPids(): number[] {
  return descendants(svc.pid).filter((pid) => {
    try {
      return Deno.readTextFileSync(`/proc/${pid}/comm`).trim() === "pwsh";
    } catch {
      return false;
    }
  });
}

/** Worker RSS: every pwsh below svc, and the pool's worker count from /health. */
async function workerMemory(): Promise<{ processes: number; workers: number; mb: number }> {
  const pids = pwshPids();
  const health = await (await fetch(`${url}/health`)).json();
  const mb = pids.reduce((sum, pid) => sum + rssOf(pid), 0) / 1024 / 1024;
  return { processes: pids.length, workers: health.pool.total, mb };
}

/** One line of the table on stdout (the repository's lint keeps console out). */
function print(line: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));
}

const seconds = Number(values.seconds);
const label = `${values.auth ? `on, ${principals} keys` : "off"}${hostMode ? `, ${hostMode}` : ""}`;
print(
  `| auth | c | calls/s | median ms | p95 ms | p99 ms | pwsh started | pwsh processes | workers | worker RSS MB | MB per worker |`,
);
print(`|---|---|---|---|---|---|---|---|---|---|---|`);
/**
 * Warm-up: closed loops until the pool has grown to what this concurrency needs (no worker starting
 * and the count unchanged for 2 s), at least 3 s and at most 60 s. A fixed 3 s measured the growth
 * itself wherever it needs process starts (ProcessPool, or more principals than processes).
 */
async function warmUp(c: number): Promise<void> {
  let warming = true;
  const loops = Promise.all(Array.from({ length: c }, async (_, i) => {
    while (warming) await call(keys[i % keys.length]);
  }));
  const begin = performance.now();
  let total = -1;
  let stableSince = begin;
  while (performance.now() - begin < 60_000) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const { pool } = await (await fetch(`${url}/health`)).json();
    if (pool.total !== total || pool.creating > 0) {
      [total, stableSince] = [pool.total, performance.now()];
    }
    if (performance.now() - begin >= 3_000 && performance.now() - stableSince >= 2_000) break;
  }
  warming = false;
  await loops;
}

for (const c of values.concurrency.split(",").map(Number)) {
  await warmUp(c);
  const latencies: number[] = [];
  // Processes started while measuring: pwsh pids sampled every 500 ms, less those already running
  // (a process start takes about a second, so none goes unseen).
  const before = new Set(pwshPids());
  const seen = new Set<number>();
  const sampler = setInterval(() => pwshPids().forEach((pid) => seen.add(pid)), 500);
  const end = performance.now() + seconds * 1000;
  const begin = performance.now();
  await Promise.all(Array.from({ length: c }, async (_, i) => {
    while (performance.now() < end) latencies.push(await call(keys[i % keys.length]));
  }));
  const elapsed = (performance.now() - begin) / 1000;
  clearInterval(sampler);
  const started = [...seen].filter((pid) => !before.has(pid)).length;
  const s = summarize(latencies);
  const memory = await workerMemory();
  print(
    `| ${label} | ${c} | ${(latencies.length / elapsed).toFixed(1)} | ${s.median.toFixed(0)} | ${
      s.p95.toFixed(0)
    } | ${s.p99.toFixed(0)} | ${started} | ${memory.processes} | ${memory.workers} | ${
      memory.mb.toFixed(0)
    } | ${(memory.mb / memory.workers).toFixed(1)} |`,
  );
}
await svc[Symbol.asyncDispose]();
await Deno.remove(dir, { recursive: true }).catch(() => {});
