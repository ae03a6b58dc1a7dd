/**
 * What svc's HTTP front does before authentication, for heads built to cost it the most: a 32 KiB
 * head of distinct field names, a field value of 32,000 inner spaces, a target of 32,000 `/` (and
 * the same ending in a letter), each beside a plain `GET /health`. Every request goes on a new
 * connection with `Connection: close`; its time runs from the connect to the end of the answer.
 * Each svc build given (`--svc-root`, repeatable; this checkout by default) is started in turn over
 * HTTP, so that one run compares them. Prints one markdown table: the median
 * ms of each case, its status, and the ratio to the plain request.
 *
 *   deno run -A bench/front_work.ts [--pwsh <path>] [--svc-root <dir>]… [--rounds 5]
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  benchConfig,
  chooseWorker,
  cleanupTempDirs,
  REPO_ROOT,
  startSvcHttp,
} from "./lib/targets.ts";
import { summarize } from "./lib/stats.ts";
import { exchange } from "../tests/security/raw_http.ts";

const { values } = parseArgs({
  options: {
    pwsh: { type: "string" },
    "svc-root": { type: "string", multiple: true },
    rounds: { type: "string", default: "5" },
  },
});
const rounds = Number(values.rounds);
const roots = (values["svc-root"] ?? [REPO_ROOT]).map((r) => r.endsWith("/") ? r : `${r}/`);
const worker = chooseWorker(values.pwsh);

/** The field lines of a head of `budget` bytes at most, every name a different one. */
function distinctFields(budget: number): { lines: string; count: number } {
  let lines = "";
  let count = 0;
  for (;;) {
    const line = `${count.toString(36)}:\r\n`;
    if (lines.length + line.length > budget) return { lines, count };
    lines += line;
    count++;
  }
}

/** The request of each case, for the svc at `host`. */
function cases(host: string): { name: string; request: string }[] {
  const start = `Host: ${host}\r\nConnection: close\r\n`;
  const fields = distinctFields(32_000 - 64);
  return [
    { name: "plain GET /health", request: `GET /health HTTP/1.1\r\n${start}\r\n` },
    {
      name: `${fields.count} distinct field names (32 KiB head)`,
      request: `GET /health HTTP/1.1\r\n${start}${fields.lines}\r\n`,
    },
    {
      name: "a field value of 32,000 inner spaces",
      request: `GET /health HTTP/1.1\r\n${start}X-Pad: a${" ".repeat(32_000)}b\r\n\r\n`,
    },
    {
      name: "a target of 32,000 '/'",
      request: `GET ${"/".repeat(32_000)} HTTP/1.1\r\n${start}\r\n`,
    },
    {
      name: "a target of 32,000 '/' and a letter",
      request: `GET ${"/".repeat(32_000)}a HTTP/1.1\r\n${start}\r\n`,
    },
  ];
}

/** Sends `request` on a new connection; the ms to the end of the answer, and its status. */
async function timed(base: string, request: string): Promise<{ ms: number; status: string }> {
  const started = performance.now();
  const text = await exchange(base, request, { ms: 120_000 });
  return {
    ms: performance.now() - started,
    status: /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? "none",
  };
}

function print(line: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));
}

const load = Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
print(`load average at the start: ${load}; ${rounds} rounds a case\n`);
print("| build | case | status | median ms | max ms | × plain |");
print("| ----- | ---- | ------ | --------- | ------ | ------- |");
try {
  for (const root of roots) {
    const server = await startSvcHttp({
      config: benchConfig({}, {}, root),
      worker,
      root,
    });
    try {
      const host = new URL(server.base).host;
      // Warm: the front loads on the first request.
      for (let i = 0; i < 20; i++) await timed(server.base, cases(host)[0]!.request);
      const build = new Deno.Command("git", {
        args: ["-C", root, "rev-parse", "--short", "HEAD"],
        stdout: "piped",
      }).outputSync();
      const name = new TextDecoder().decode(build.stdout).trim() || root;
      let plain = 0;
      for (const { name: label, request } of cases(host)) {
        const samples: number[] = [];
        let status = "";
        for (let i = 0; i < rounds; i++) {
          const result = await timed(server.base, request);
          samples.push(result.ms);
          status = result.status;
        }
        const stats = summarize(samples);
        if (plain === 0) plain = stats.median;
        print(
          `| ${name} | ${label} | ${status} | ${stats.median.toFixed(2)} | ${
            stats.max.toFixed(2)
          } | ${(stats.median / plain).toFixed(1)} |`,
        );
      }
    } finally {
      await server.stop();
    }
  }
} finally {
  await cleanupTempDirs();
}
const after = Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
print(`\nload average at the end: ${after}`);
