/**
 * Bytes and an estimate of tokens of `tools/list`, whole and per tool, for the configuration built
 * into svc and for the README walk's (the `create-config` template plus the walk's module), each
 * listed by an SDK client over stdio. `deno run -A bench/tool_list.ts`.
 *
 * Tokens are estimated as bytes / 4: no tokenizer ships with svc, and the usual rule of thumb for
 * English and JSON under the tokenizers of current models is 3.5 to 4.5 bytes per token.
 *
 * @module
 */
import { parse } from "jsonc-parser";
import { startSvc } from "../tests/support/harness.ts";
import { walkConfiguration } from "../tests/support/walk.ts";
import embedded from "../appsettings.json" with { type: "json" };
import { say } from "./lib/common.ts";

const encoder = new TextEncoder();
const bytes = (value: unknown) => encoder.encode(JSON.stringify(value)).length;
const tokens = (size: number) => Math.round(size / 4);

async function measure(label: string, config: Record<string, unknown>): Promise<void> {
  await using svc = await startSvc({ config });
  const { tools } = await svc.listTools();
  const whole = bytes({ tools });
  say(`${label}: ${tools.length} tools, ${whole} bytes, about ${tokens(whole)} tokens`);
  say("| tool | bytes | tokens (est.) | description | inputSchema | outputSchema |");
  say("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const tool of tools) {
    const size = bytes(tool);
    const out = (tool as { outputSchema?: unknown }).outputSchema;
    say(
      `| ${tool.name} | ${size} | ${tokens(size)} | ${bytes(tool.description ?? "")} | ${
        bytes(tool.inputSchema)
      } | ${out === undefined ? 0 : bytes(out)} |`,
    );
  }
}

await measure("built-in configuration", embedded as Record<string, unknown>);
const walk = await walkConfiguration();
try {
  await measure("README walk", parse(await Deno.readTextFile(walk.config)));
} finally {
  await walk[Symbol.asyncDispose]();
}
