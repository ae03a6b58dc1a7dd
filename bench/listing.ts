/**
 * Bytes and time of a large listing under the default configuration (issue 31, item 4): svc over
 * stdio with an SDK client, `Get-ChildItem -Recurse` of a big tree (default /usr), each call timed
 * from the client. `deno run -A bench/listing.ts [path] [calls]`.
 *
 * @module
 */
import { startSvc } from "../tests/support/harness.ts";
import { say } from "./lib/common.ts";

const path = Deno.args[0] ?? "/usr";
const calls = Number(Deno.args[1] ?? 3);
const extra = Deno.args[2] ? JSON.parse(Deno.args[2]) : {};
await using svc = await startSvc({
  config: { ShellConfiguration: { Commands: ["Get-ChildItem"], ...extra } },
});
const { tools } = await svc.listTools();
const tool = tools.find((t) => t.title === "Get-ChildItem" && /path/i.test(t.name)) ?? tools[0]!;
say(`tool ${tool.name}; meta ${JSON.stringify((tool as { _meta?: unknown })._meta ?? null)}`);
for (let i = 0; i < calls; i++) {
  const started = performance.now();
  const result = await svc.callTool(tool.name, { Path: [path], Recurse: true });
  const ms = Math.round(performance.now() - started);
  const structured = JSON.stringify(result.structuredContent ?? null).length;
  const content = result.content.reduce((n, c) => n + (c.text?.length ?? 0), 0);
  const whole = new TextEncoder().encode(JSON.stringify(result)).length;
  const s = result.structuredContent as Record<string, unknown> | undefined;
  say(
    `call ${
      i + 1
    }: ${ms} ms; result ${whole} bytes (content ${content} chars, structuredContent ${structured} chars); truncated ${
      JSON.stringify(s?.["truncated"] ?? null)
    }`,
  );
}
