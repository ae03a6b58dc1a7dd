/**
 * The README's desktop-client recipes work when pasted: each documented entry is started exactly as a
 * client would start it — its `command`, `args` and `env`, from `/`, with nothing else in the
 * environment but a minimal `PATH` and `HOME` — and an MCP client gets the tool list.
 */
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { within } from "./support/deadline.ts";
import { TEST_PWSH } from "./support/harness.ts";

const root = new URL("../", import.meta.url).pathname.replace(/\/$/, "");

/** The placeholders the README tells the reader to replace, and what this machine has instead. */
const PLACEHOLDERS: [string, string][] = [["/opt/svc", root], ["/usr/local/bin/pwsh", TEST_PWSH]];

interface Entry {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** Finds the JSON block that follows `<!-- recipe: name -->` and returns its one server entry. */
function recipe(readme: string, name: string): Entry {
  const match = new RegExp(`<!-- recipe: ${name} -->\\s*\`\`\`json\\n([\\s\\S]*?)\`\`\``).exec(
    readme,
  );
  assert.ok(match, `README has no JSON block after '<!-- recipe: ${name} -->'`);
  let text = match[1]!;
  for (const [placeholder, actual] of PLACEHOLDERS) text = text.replaceAll(placeholder, actual);
  const parsed = JSON.parse(text) as Record<string, Record<string, Entry>>;
  const servers = parsed.mcpServers ?? parsed.servers;
  assert.ok(servers, `recipe '${name}' has neither 'mcpServers' nor 'servers'`);
  const entry = Object.values(servers)[0]!;
  return { command: entry.command, args: entry.args ?? [], env: entry.env ?? {} };
}

const readme = await Deno.readTextFile(`${root}/README.md`);

for (const name of ["claude-desktop", "vscode"]) {
  Deno.test(`README recipe '${name}' starts from / with only PATH and HOME and lists tools`, async () => {
    const entry = recipe(readme, name);
    assert.ok(entry.command.startsWith("/"), `command '${entry.command}' is not absolute`);
    const home = await Deno.makeTempDir({ prefix: "svc-recipe-home-" });
    // The catalog cache lands in $HOME/.cache/svc, so a fresh HOME also proves a cold start works;
    // Deno's own cache follows HOME too, which proves the project's packages need no download.
    const environment = [`PATH=/usr/bin:/bin`, `HOME=${home}`].concat(
      Object.entries(entry.env).map(([key, value]) => `${key}=${value}`),
    );
    // `env -i` clears everything the SDK transport would otherwise pass on (USER, SHELL, TERM …).
    const transport = new StdioClientTransport({
      command: "/usr/bin/env",
      args: ["-i", ...environment, entry.command, ...entry.args],
      cwd: "/",
      stderr: "pipe",
    });
    let log = "";
    const stderr = transport.stderr;
    stderr?.on("data", (chunk: Uint8Array) => log += new TextDecoder().decode(chunk));
    const client = new Client({ name: "svc-recipe-test", version: "1.0.0" });
    try {
      const { tools } = await within(
        client.connect(transport).then(() => client.listTools()),
        `'${name}' to answer initialize and tools/list`,
      ).catch((error) => {
        throw new Error(`${error.message}; server stderr: ${log.trim() || "(empty)"}`);
      });
      assert.ok(
        tools.some((tool) => tool.name.startsWith("get_date")),
        `no get_date in ${tools.map((t) => t.name)}`,
      );
      assert.doesNotMatch(log, /^Task /m, "a deno task banner reached the client's stderr");
      assert.doesNotMatch(
        log,
        /embedded default|built into svc/,
        "svc did not read the --config file",
      );
    } finally {
      await client.close();
      await Deno.remove(home, { recursive: true });
    }
  });
}
