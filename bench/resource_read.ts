/**
 * A resource read beside a tool call of the same command, warm, over stdio: `resources/read` of
 * `greet://people/{Name}` (backed by Get-Greeting) and `tools/call` of `get_greeting`, in rounds
 * that alternate them. With `--compare <checkout>`, the same tool calls against that checkout's svc
 * (a configuration without resources) back to back, to see what resources cost tools/call.
 * `deno run -A bench/resource_read.ts [--calls 200] [--rounds 2] [--compare <dir> [--compare-first]]`;
 * `--compare-first` puts the other checkout's call first in each round of the interleave.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { TEST_PWSH } from "../tests/support/harness.ts";
import { ms, summarize } from "./lib/stats.ts";
import { say } from "./lib/common.ts";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "200" },
    rounds: { type: "string", default: "2" },
    compare: { type: "string" },
    "compare-first": { type: "boolean", default: false },
  },
});
const calls = Number(values.calls);
const rounds = Number(values.rounds);
const root = new URL("../", import.meta.url).pathname;
const dir = await Deno.makeTempDir({ prefix: "svc-bench-resources-" });
await Deno.writeTextFile(
  `${dir}/MyTools.psm1`,
  'function Get-Greeting { param([Parameter(Mandatory)][string]$Name) "Hello, $Name!" }\n',
);

/** A client of `<checkout>/main.ts serve` over stdio, on a configuration with or without resources. */
async function connect(checkout: string, resources: boolean): Promise<Client> {
  const config = {
    ShellConfiguration: {
      Modules: [`${dir}/MyTools.psm1`],
      ...(resources
        ? { Resources: { greeting: { Uri: "greet://people/{Name}", Command: "Get-Greeting" } } }
        : {}),
    },
  };
  const path = `${dir}/${resources ? "with" : "without"}.json`;
  await Deno.writeTextFile(path, JSON.stringify(config));
  const client = new Client({ name: "bench-resources", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: Deno.execPath(),
      args: ["run", "-A", "--quiet", `${checkout}/main.ts`, "serve", "--config", path],
      env: { ...Deno.env.toObject(), SVC_PWSH: TEST_PWSH, SVC_CACHE_DIR: `${dir}/cache` },
      stderr: "ignore",
    }),
  );
  return client;
}

async function time(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

const row = (name: string, samples: number[]) => {
  const s = summarize(samples);
  say(`| ${name} | ${s.n} | ${ms(s.median)} | ${ms(s.p95)} | ${ms(s.p99)} | ${ms(s.mean)} |`);
};

try {
  const clients = {
    branch: await connect(root, true),
    ...(values.compare ? { compare: await connect(values.compare, false) } : {}),
  };
  const call = (client: Client) => () =>
    client.callTool({ name: "get_greeting", arguments: { Name: "bench" } });
  const read = (client: Client) => () => client.readResource({ uri: "greet://people/bench" });
  // Warm: the first calls start what a cold worker lacks.
  for (let i = 0; i < 20; i++) {
    for (const client of Object.values(clients)) await call(client)();
    await read(clients.branch)();
  }
  const samples: Record<string, number[]> = { call: [], read: [], compare: [] };
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < calls; i++) {
      const first = values["compare-first"];
      if (clients.compare && first) samples.compare!.push(await time(call(clients.compare)));
      samples.call!.push(await time(call(clients.branch)));
      samples.read!.push(await time(read(clients.branch)));
      if (clients.compare && !first) samples.compare!.push(await time(call(clients.compare)));
    }
  }
  say(`| what (${rounds} x ${calls}, interleaved) | N | median | p95 | p99 | mean |`);
  say("| --- | --- | --- | --- | --- | --- |");
  row("tools/call get_greeting (this checkout)", samples.call!);
  row("resources/read greet://people/bench (this checkout)", samples.read!);
  if (clients.compare) row(`tools/call get_greeting (${values.compare})`, samples.compare!);
  for (const client of Object.values(clients)) await client.close();
} finally {
  await Deno.remove(dir, { recursive: true });
}
