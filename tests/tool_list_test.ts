/**
 * `tools/list` stays light without losing what a model needs to pick a tool. For the configuration
 * built into svc and for the README walk's (listed by a real client from svc on real PowerShell),
 * plain requests a user would make are ranked against each tool's name, title, description and
 * parameters with BM25, a text ranking with no model, and the right tool must come in the first
 * three. A cut that drops the words a request is matched by fails here; so does a list that grows
 * back past its budget.
 */
import assert from "node:assert/strict";
import { parse } from "jsonc-parser";
import embedded from "../appsettings.json" with { type: "json" };
import { startSvc, type ToolInfo } from "./support/harness.ts";
import { walkConfiguration } from "./support/walk.ts";

/** Words of a text: camel case and snake case split, lower case, plural and -ing endings cut. */
function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 1)
    .map((word) =>
      word.replace(/ies$/, "y").replace(/(s|x|ch|sh)es$/, "$1").replace(/(ing|ly|ed)$/, "")
        .replace(/([^s])s$/, "$1")
    );
}

/** What a model reads of a tool: its name, title, description, and each parameter's name, description and values. */
function toolText(tool: ToolInfo): string {
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const parameters = Object.entries(properties)
    .filter(([name]) => !name.startsWith("_"))
    .map(([name, schema]) =>
      [name, schema.description ?? "", ...(schema.enum as [] ?? [])].join(" ")
    );
  return [tool.name, tool.title ?? "", tool.description ?? "", ...parameters].join(" ");
}

/** The tools ranked for `request` by BM25 (k1 1.2, b 0.75) over {@linkcode toolText}. */
function rank(tools: ToolInfo[], request: string): string[] {
  const documents = tools.map((tool) => words(toolText(tool)));
  const average = documents.reduce((sum, d) => sum + d.length, 0) / documents.length;
  const scores = documents.map((document, i) => {
    let score = 0;
    for (const term of new Set(words(request))) {
      const frequency = document.filter((word) => word === term).length;
      if (frequency === 0) continue;
      const holding = documents.filter((d) => d.includes(term)).length;
      const idf = Math.log(1 + (documents.length - holding + 0.5) / (holding + 0.5));
      score += idf * frequency * 2.2 /
        (frequency + 1.2 * (0.25 + 0.75 * document.length / average));
    }
    return { name: tools[i]!.name, score };
  });
  return scores.sort((a, b) => b.score - a.score).map((s) => s.name);
}

/** Requests a user makes of the built-in commands, and the command whose tool answers each. */
const BUILT_IN_REQUESTS: [string, string][] = [
  ["what time zone is this machine in", "Get-TimeZone"],
  ["what is the date today", "Get-Date"],
  ["what is the uptime of this machine", "Get-Uptime"],
  ["which processes are running", "Get-Process"],
  ["is a process named pwsh running", "Get-Process"],
  ["show my current location", "Get-Location"],
  ["which culture and language settings are in use", "Get-Culture"],
  ["list the available time zones", "Get-TimeZone"],
];

/** Requests of the walk's module, and the command answering each. */
const WALK_REQUESTS: [string, string][] = [
  ["greet Ada loudly", "Get-Greeting"],
  ["say hello to Grace", "Get-Greeting"],
  ["empty my note", "Clear-Note"],
  ["clear the note in /home/you/note.txt", "Clear-Note"],
];

/** Fails unless every request ranks a tool of its command in the first three. */
function assertFound(tools: ToolInfo[], requests: [string, string][]): void {
  const command = new Map(tools.map((tool) => [tool.name, tool.title]));
  for (const [request, expected] of requests) {
    const top = rank(tools, request).slice(0, 3);
    assert.ok(
      top.some((name) => command.get(name) === expected),
      `'${request}' should find ${expected}; the first three are ${top.join(", ")}`,
    );
  }
}

/** Bytes of a tool list as the client received it. */
function bytes(tools: ToolInfo[]): number {
  return new TextEncoder().encode(JSON.stringify({ tools })).length;
}

// Measured before the lists were cut (bench/README.md, "Tool lists"): each tool carried 1.1 KB of
// output schema and 420 bytes of shaping-argument descriptions, 2.0-2.9 KB in all. A third of that.
const MOST_BYTES_PER_TOOL = 750;

Deno.test("tools/list is light, and plain requests find the right tool in the first three", async (t) => {
  await t.step("the configuration built into svc", async () => {
    await using svc = await startSvc({ config: embedded as Record<string, unknown> });
    const { tools } = await svc.listTools();
    assert.ok(bytes(tools) / tools.length <= MOST_BYTES_PER_TOOL, `${bytes(tools)} bytes`);
    assertFound(tools, BUILT_IN_REQUESTS);
  });
  await t.step("the README walk's configuration", async () => {
    await using walk = await walkConfiguration();
    await using svc = await startSvc({ config: parse(await Deno.readTextFile(walk.config)) });
    const { tools } = await svc.listTools();
    assert.ok(bytes(tools) / tools.length <= MOST_BYTES_PER_TOOL, `${bytes(tools)} bytes`);
    assertFound(tools, [...BUILT_IN_REQUESTS, ...WALK_REQUESTS]);
    // What was cut is said once, beside the list: the result's shape and the shaping arguments.
    const instructions = svc.client!.getInstructions() ?? "";
    assert.match(instructions, /structuredContent\.output/);
    assert.match(instructions, /_RequestedProperties.*_AllProperties.*_MaxResults/);
  });
});
