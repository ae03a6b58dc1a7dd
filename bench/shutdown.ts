/**
 * Seconds from SIGTERM to exit of svc over HTTP while a call outlasts `ShutdownDrainTimeout` (the
 * argument, seconds; default 10), and what the caller cut off is told. `deno run -A bench/shutdown.ts [seconds]`.
 *
 * @module
 */
import { eventually, fixtureConfig, post, startHttpSvc } from "../tests/support/harness.ts";
import { say } from "./lib/common.ts";

const drain = Number(Deno.args[0] ?? 10);
const base = fixtureConfig();
const svc = await startHttpSvc({
  config: {
    ...base,
    McpServer: {
      RunspacePool: {
        StopTimeout: "00:00:02",
        ShutdownDrainTimeout: `00:00:${String(drain).padStart(2, "0")}`,
      },
    },
  },
});
try {
  await fetch(`${svc.url}/tools`).then((r) => r.body?.cancel());
  const call = post(`${svc.url}/call`, {
    tool: "start_sleep_seconds",
    arguments: { Seconds: 300 },
  });
  await eventually(async () =>
    ((await (await fetch(`${svc.url}/health`)).json()) as { pool: { leased: number } }).pool
      .leased === 1
  );
  const began = performance.now();
  const code = svc.stop("SIGTERM");
  const answer = await call;
  const exit = await code;
  say(
    `ShutdownDrainTimeout ${drain} s: exit ${exit} after ${
      ((performance.now() - began) / 1000).toFixed(1)
    } s; the caller got ${
      JSON.stringify(
        (answer.body as { content?: { text: string }[] }).content?.[0]?.text ?? answer.body,
      )
    }`,
  );
} finally {
  await svc[Symbol.asyncDispose]();
}
