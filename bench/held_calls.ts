/**
 * What a held call costs (a 2026-07-28 call waiting for its user's answer, lib/input_required.ts):
 * svc over HTTP with a warm pool of 16 workers (MinPoolSize 16, MaxPoolSize 32: held calls may take
 * half the pool), the fixture module's `test_input_required_result_elicitation` (one
 * `$Host.UI.Prompt`). Prints, as
 * markdown: the RSS of svc and of its pwsh processes with 0, 8 and 16 calls held; then the latency
 * of the first round (call → input_required), of the retry (answer → result) and of a plain call
 * without a prompt (`get_fixture_greeting`), `--rounds` times each, one at a time.
 *
 *   deno run -A bench/held_calls.ts --pwsh <path> [--rounds 30]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { descendants, rssOf } from "./lib/proc.ts";
import { benchConfig, chooseWorker, cleanupTempDirs, startSvcHttp } from "./lib/targets.ts";
import { summarize } from "./lib/stats.ts";
import { modernToolCall } from "../tests/support/harness.ts";

const { values } = parseArgs({
  options: { pwsh: { type: "string" }, rounds: { type: "string", default: "30" } },
});
const rounds = Number(values.rounds);
// Held calls may take half the pool (lib/http.ts): 32 workers at most hold the 16 measured here.
const server = await startSvcHttp({
  config: benchConfig({}, { MinPoolSize: 16, EagerWarmCount: 16, MaxPoolSize: 32 }),
  worker: chooseWorker(values.pwsh),
});
const url = server.base;
type Body = { result?: Record<string, unknown>; error?: { message: string } };

/** One 2026-07-28 tools/call, as a client declaring form elicitation sends it; a failure stops the bench. */
async function mcpCall(name: string, more: Record<string, unknown> = {}): Promise<Body> {
  const body = (await modernToolCall(url, name, more)).body as Body;
  if (body.error) throw new Error(`${name} failed: ${body.error.message}`);
  if (body.result?.["isError"]) throw new Error(`${name} failed: ${JSON.stringify(body.result)}`);
  return body;
}

const ASK = "test_input_required_result_elicitation";
const answer = (state: unknown) => ({
  requestState: state,
  inputResponses: { user_name: { action: "accept", content: { name: "bench" } } },
});

function memory(): { svc: number; pwsh: number } {
  const pwsh = descendants(server.pid).filter((pid) => {
    try {
      return Deno.readTextFileSync(`/proc/${pid}/comm`).trim() === "pwsh";
    } catch {
      return false;
    }
  });
  const mb = (bytes: number) => Math.round(bytes / 1024 / 1024 * 10) / 10;
  return { svc: mb(rssOf(server.pid)), pwsh: mb(pwsh.reduce((sum, pid) => sum + rssOf(pid), 0)) };
}

function print(line: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));
}

try {
  // Every worker runs a prompting call once, so the compiled host and the fixture are loaded.
  const warm = await Promise.all(Array.from({ length: 16 }, () => mcpCall(ASK)));
  await Promise.all(warm.map((w) => mcpCall(ASK, answer(w.result!["requestState"]))));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  print("| calls held | svc RSS (MB) | pwsh RSS (MB) |");
  print("| ---------: | -----------: | ------------: |");
  let held: Body[] = [];
  for (const n of [0, 8, 16]) {
    held.push(...await Promise.all(Array.from({ length: n - held.length }, () => mcpCall(ASK))));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const { svc, pwsh } = memory();
    print(`| ${n} | ${svc} | ${pwsh} |`);
  }
  await Promise.all(held.map((h) => mcpCall(ASK, answer(h.result!["requestState"]))));
  held = [];
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const first: number[] = [];
  const resume: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < rounds; i++) {
    let started = performance.now();
    const asked = await mcpCall(ASK);
    first.push(performance.now() - started);
    started = performance.now();
    const done = await mcpCall(ASK, answer(asked.result!["requestState"]));
    resume.push(performance.now() - started);
    if (!JSON.stringify(done).includes("Hello, bench!")) throw new Error(JSON.stringify(done));
    started = performance.now();
    await mcpCall("get_fixture_greeting", { arguments: { Name: "bench" } });
    plain.push(performance.now() - started);
  }
  print("");
  print("| round | N | median (ms) | p95 (ms) |");
  print("| ----- | -: | ----------: | -------: |");
  for (
    const [name, samples] of [["call → input_required", first], ["retry → result", resume], [
      "plain call",
      plain,
    ]] as const
  ) {
    const s = summarize(samples);
    print(`| ${name} | ${s.n} | ${s.median.toFixed(1)} | ${s.p95.toFixed(1)} |`);
  }
} finally {
  await server.stop();
  await cleanupTempDirs();
}
