/**
 * What the SDK client of bench/perf.ts costs, per call, on the machine it shares with the servers:
 * closed loops of `--clients` SDK v2 clients (`StreamableHTTPClientTransport`, each its own
 * `Client`, as P4 connects them) calling `get_date` over HTTP, once pinned to 2026-07-28 and once
 * with the 2025-11-25 handshake, against each `--url` target in turn. Reports calls/s, this
 * process's CPU per call (the client's), the server tree's CPU per call (`--pid`), the answers'
 * content type, and the TCP connections the clients held open to the server's port at the end.
 *
 *   deno run -A bench/client_cost.ts --url <label>=<url> --pid <pid> [--url ... --pid ...]
 *     [--clients 16] [--seconds 6] [--rounds 2]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { cpuTicks, loadAverage, TICK_US, treeCpuTicks } from "./lib/proc.ts";
import { connectHttp, type Era, type McpClient, resolveTool } from "./lib/targets.ts";

const { values } = parseArgs({
  options: {
    url: { type: "string", multiple: true },
    pid: { type: "string", multiple: true },
    clients: { type: "string", default: "16" },
    seconds: { type: "string", default: "6" },
    rounds: { type: "string", default: "2" },
  },
});
const clients = Number(values.clients);
const seconds = Number(values.seconds);
const load = loadAverage;
const print = (line = "") => Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));

/** Established TCP connections to `port` (from /proc/net/tcp: state 01, remote port). */
function connectionsTo(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  return Deno.readTextFileSync("/proc/net/tcp").split("\n").slice(1).filter((line) => {
    const fields = line.trim().split(/\s+/);
    return fields[3] === "01" && fields[2]?.endsWith(`:${hex}`);
  }).length;
}

/** The content type of one raw 2025-11-25 answer, as the server sends it to an SDK client. */
async function answerType(url: string, tool: string): Promise<string> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: tool, arguments: {} },
    }),
  });
  await response.body?.cancel();
  return response.headers.get("content-type") ?? "";
}

const targets = (values.url ?? []).map((value, i) => {
  const [label, url] = value.split(/=(.*)/s) as [string, string];
  return { label, url, pid: Number(values.pid?.[i]) };
});
print(`load average at the start: ${load()}; ${clients} SDK clients, ${seconds} s a cell`);
print();
print(
  "| round | target | era | load average | calls/s | client CPU µs/call | server CPU µs/call | answer type | connections |",
);
print("| -- | -- | -- | -- | -- | -- | -- | -- | -- |");
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const era of ["2026-07-28", "2025-11-25"] as Era[]) {
    for (const target of targets) {
      const list: McpClient[] = [];
      for (let i = 0; i < clients; i++) list.push(await connectHttp(target.url, era));
      const tool = resolveTool(await list[0]!.listTools(), "date")!;
      for (const client of list) await client.call(tool, {});
      const client0 = cpuTicks(Deno.pid);
      const server0 = treeCpuTicks(target.pid);
      const end = performance.now() + seconds * 1000;
      let done = 0;
      await Promise.all(list.map(async (client) => {
        while (performance.now() < end) {
          await client.call(tool, {});
          done++;
        }
      }));
      const clientUs = (cpuTicks(Deno.pid) - client0) * TICK_US / done;
      const serverUs = (treeCpuTicks(target.pid) - server0) * TICK_US / done;
      const open = connectionsTo(Number(new URL(target.url).port));
      for (const client of list) await client.close();
      print(
        `| ${round} | ${target.label} | ${era} | ${load()} | ${(done / seconds).toFixed(0)} | ${
          clientUs.toFixed(0)
        } | ${serverUs.toFixed(0)} | ${await answerType(target.url, tool)} | ${open} |`,
      );
    }
  }
}
