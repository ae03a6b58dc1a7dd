/**
 * Warm `get_date` over HTTP and over HTTPS, on svc's own HTTP/1.1 server and on `Deno.serve`, side
 * by side in one run: four processes of bench/serve_front.ts (the same build, the same front and
 * configuration: the benchmark one), an SDK client of each era on each, calls one at a time, the
 * servers taken in turn round after round so that a busy machine weighs on all of them alike. Also
 * `GET /health` on a kept-alive connection, which is the HTTP layer alone. The certificate is made
 * with openssl (P-256). Every server speaks HTTP/1.1 to the client. Prints markdown.
 *
 *   deno run -A bench/http_servers.ts [--pwsh <path>] [--calls 100] [--rounds 10]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { makeAuthority, makeServerPair } from "../tests/support/tls.ts";
import { summarize } from "./lib/stats.ts";
import {
  benchConfig,
  chooseWorker,
  cleanupTempDirs,
  connectHttp,
  type Era,
  type HttpProcess,
  type McpClient,
  REPO_ROOT,
  spawnHttp,
  tempDir,
} from "./lib/targets.ts";

const { values } = parseArgs({
  options: {
    pwsh: { type: "string" },
    calls: { type: "string", default: "100" },
    rounds: { type: "string", default: "10" },
  },
});
const calls = Number(values.calls);
const rounds = Number(values.rounds);
const worker = chooseWorker(values.pwsh);

function print(line: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));
}
const load = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");

const authority = await makeAuthority();
const pair = await makeServerPair(authority, "bench");
// HTTP/1.1 on every server: Deno.serve over TLS would otherwise agree on HTTP/2 with this client,
// whose requests carry :authority and no Host, which svc's front refuses.
using client = Deno.createHttpClient({ caCerts: [authority.caPem], http2: false });
const trusting =
  ((input: RequestInfo | URL, init?: RequestInit) =>
    fetch(input, { ...init, client } as RequestInit)) as typeof fetch;
const dir = await tempDir();
await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(benchConfig()));

interface Server {
  name: string;
  proc: HttpProcess;
  clients: Map<Era, McpClient>;
  samples: Map<Era | "health", number[]>;
}
const servers: Server[] = [];
print(`load average at the start: ${load()}; ${rounds} rounds of ${calls} calls a client\n`);
try {
  for (const [server, tls] of [["svc", false], ["svc", true], ["deno", false], ["deno", true]]) {
    const proc = await spawnHttp([
      Deno.execPath(),
      "run",
      "--allow-all",
      "--quiet",
      `--config=${REPO_ROOT}deno.json`,
      `${REPO_ROOT}bench/serve_front.ts`,
      "--server",
      String(server),
      "--config",
      `${dir}/appsettings.json`,
      "--pwsh",
      worker.path,
      ...(tls ? ["--tls-certificate", pair.certificatePath, "--tls-key", pair.keyPath] : []),
    ], { env: { SVC_CACHE_DIR: `${dir}/cache`, SVC_LOG_LEVEL: "Information" }, cwd: REPO_ROOT });
    const base = proc.base.replace("127.0.0.1", "localhost");
    for (let i = 0; i < 600; i++) {
      const ready = await trusting(`${base}/health/ready`).catch(() => null);
      await ready?.body?.cancel();
      if (ready?.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const clients = new Map<Era, McpClient>();
    for (const era of ["2026-07-28", "2025-11-25"] as const) {
      const client = await connectHttp(`${base}/mcp`, era, proc.pid, {}, trusting).catch(
        (error) => {
          throw new Error(`${server} (TLS ${tls}) ${era}: ${error}: ${proc.stderr().slice(-2000)}`);
        },
      );
      clients.set(era, client);
    }
    servers.push({
      name: `${server === "svc" ? "svc's own server" : "Deno.serve"}, ${tls ? "HTTPS" : "HTTP"}`,
      proc,
      clients,
      samples: new Map(),
    });
  }
  const date = "get_date_date_and_format";
  // Warm: the catalog, the JIT, a worker per era.
  for (const server of servers) {
    for (const client of server.clients.values()) {
      for (let i = 0; i < 200; i++) await client.call(date, {});
    }
  }
  for (let round = 0; round < rounds; round++) {
    for (const server of servers) {
      for (const [era, client] of server.clients) {
        const samples = server.samples.get(era) ?? [];
        for (let i = 0; i < calls; i++) {
          const started = performance.now();
          await client.call(date, {});
          samples.push(performance.now() - started);
        }
        server.samples.set(era, samples);
      }
      const health = server.samples.get("health") ?? [];
      const base = server.proc.base.replace("127.0.0.1", "localhost");
      for (let i = 0; i < calls; i++) {
        const started = performance.now();
        const response = await trusting(`${base}/health`);
        await response.arrayBuffer();
        health.push(performance.now() - started);
      }
      server.samples.set("health", health);
    }
  }
  print(
    "| server | get_date 2026-07-28 p50 / p95 ms | get_date 2025-11-25 p50 / p95 ms | GET /health p50 / p95 ms |",
  );
  print(
    "| ------ | -------------------------------- | -------------------------------- | ------------------------ |",
  );
  for (const server of servers) {
    const cell = (key: Era | "health") => {
      const stats = summarize(server.samples.get(key) ?? []);
      return `${stats.median.toFixed(2)} / ${stats.p95.toFixed(2)}`;
    };
    print(`| ${server.name} | ${cell("2026-07-28")} | ${cell("2025-11-25")} | ${cell("health")} |`);
  }
  print(`\nload average at the end: ${load()}`);
} finally {
  for (const server of servers) {
    for (const client of server.clients.values()) await client.close().catch(() => {});
    await server.proc.stop();
  }
  await cleanupTempDirs();
  await Deno.remove(authority.dir, { recursive: true });
}
