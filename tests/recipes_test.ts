/**
 * The client recipes of docs/clients.md work when pasted: each documented stdio entry is started
 * exactly as a client would start it — its `command`, `args` and `env`, from `/`, with nothing else
 * in the environment but a minimal `PATH` and `HOME` — and an MCP client gets the tool list; the
 * HTTP entry's URL and header reach a server with an API key; the Inspector commands run as
 * written; each curl line gets a 2xx JSON answer from svc started by the first line of
 * docs/http.md, and the Sha256 recipe gives the digest svc computes for the same key; the recipe of
 * docs/security.md that lets one role delete under one folder works as written.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/client";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { outputWithin, within } from "./support/deadline.ts";
import { commandLines, docBlock, startLine } from "./support/docs.ts";
import { fixtureConfig, startHttpSvc } from "./support/harness.ts";

const root = new URL("../", import.meta.url).pathname.replace(/\/$/, "");

/** The placeholders docs/clients.md tells the reader to replace, and what this machine has instead. */
const PLACEHOLDERS: [string, string][] = [["/opt/svc", root]];

interface Entry {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** The text of the fenced `language` block of docs/clients.md that follows `<!-- recipe: name -->`. */
function recipeBlock(name: string, language: string): string {
  return docBlock(CLIENTS, `recipe: ${name}`, language);
}

/** Finds the JSON block that follows `<!-- recipe: name -->` and returns its one server entry. */
function recipe(name: string): Entry {
  let text = recipeBlock(name, "json");
  for (const [placeholder, actual] of PLACEHOLDERS) text = text.replaceAll(placeholder, actual);
  const parsed = JSON.parse(text) as Record<string, Record<string, Entry>>;
  const servers = parsed.mcpServers ?? parsed.servers;
  assert.ok(servers, `recipe '${name}' has neither 'mcpServers' nor 'servers'`);
  const entry = Object.values(servers)[0]!;
  return { command: entry.command, args: entry.args ?? [], env: entry.env ?? {} };
}

const CLIENTS = "docs/clients.md";

/** The server entry `claude mcp add … <name> -- <command> <args…>` writes, from the recipe's line. */
function claudeCodeEntry(): Entry {
  let line = recipeBlock("claude-code", "sh").trim();
  for (const [placeholder, actual] of PLACEHOLDERS) line = line.replaceAll(placeholder, actual);
  const split = line.split(" -- ");
  assert.equal(split.length, 2, `'${line}' has no ' -- ' before the server's command`);
  const options = split[0]!.split(/\s+/);
  assert.deepEqual(options.slice(0, 3), ["claude", "mcp", "add"]);
  // Options before the name, each with its value; no -e: svc needs no environment of its own.
  assert.ok(!options.includes("-e") && !options.includes("--env"), line);
  const [command, ...args] = split[1]!.split(/\s+/);
  return { command: command!, args, env: {} };
}

// The stdio entries start the same server; one start, from a cold cache, proves them all.
Deno.test("recipes 'claude-desktop', 'claude-code' and 'vscode' start from / with only PATH and HOME and list tools", async () => {
  const name = "claude-desktop";
  const entry = recipe(name);
  assert.deepEqual(recipe("vscode"), entry, "the stdio entries start the same server");
  assert.deepEqual(claudeCodeEntry(), entry, "Claude Code's entry starts the same server");
  // Copied as it is, a recipe works: svc finds its own PowerShell, no SVC_PWSH needed.
  assert.deepEqual(entry.env, {});
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

const RECIPE_KEY = "recipe-key-3f9a71c2";

/** svc over HTTP with one API key, as the HTTP recipes expect. */
function startKeyedSvc() {
  return startHttpSvc({
    config: {
      ...fixtureConfig(),
      Authentication: {
        Enabled: true,
        Schemes: { keys: { Type: "ApiKey", Keys: { vscode: { Value: RECIPE_KEY } } } },
      },
    },
  });
}

Deno.test("recipe 'vscode-http' reaches svc with its header, and is refused without it", async () => {
  const parsed = JSON.parse(recipeBlock("vscode-http", "json"));
  const entry = parsed.servers.svc as {
    type: string;
    url: string;
    headers: Record<string, string>;
  };
  assert.equal(entry.type, "http");
  assert.ok(
    parsed.inputs.some((input: { id: string; password?: boolean }) =>
      entry.headers["X-API-Key"] === `\${input:${input.id}}` && input.password
    ),
    "the key comes from a password input",
  );
  await using svc = await startKeyedSvc();
  const url = new URL(entry.url.replace("http://127.0.0.1:8080", svc.url));
  const headers = { ...entry.headers, "X-API-Key": RECIPE_KEY };
  const client = new Client({ name: "svc-recipe-http", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((tool) => tool.name.startsWith("get_date")));
  } finally {
    await client.close();
  }
  const refused = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  assert.equal(refused.status, 401);
  await refused.body?.cancel();
});

/** Splits a shell line into words: spaces separate, double quotes group. */
function words(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

Deno.test("recipe 'inspector': the Inspector CLI commands list and call over stdio and HTTP", async () => {
  await using svc = await startKeyedSvc();
  const lines = recipeBlock("inspector", "sh").trim().split("\n");
  assert.equal(lines.length, 3);
  const home = await Deno.makeTempDir({ prefix: "svc-recipe-inspector-" });
  try {
    for (const line of lines) {
      let text = line.replaceAll("<key>", RECIPE_KEY).replaceAll("http://127.0.0.1:8080", svc.url);
      for (const [placeholder, actual] of PLACEHOLDERS) text = text.replaceAll(placeholder, actual);
      const [npx, inspector, ...rest] = words(text);
      assert.equal(`${npx} ${inspector}`, "npx @modelcontextprotocol/inspector@2.12.0");
      assert.equal(rest[0], "--cli", "--cli comes first, where the Inspector's launcher reads it");
      // svc finds its own PowerShell: a copied line names none that a reader may not have.
      assert.ok(!rest.includes("-e"), `${line}: passes an environment`);
      // The same package through Deno's npm support (this machine need not have Node).
      const args = [
        "run",
        "--allow-all",
        "--quiet",
        "--no-config",
        "--no-lock",
        `npm:${inspector}`,
      ];
      const run = await outputWithin(
        Deno.execPath(),
        {
          args: [...args, ...rest],
          cwd: home,
          env: { MCP_INSPECTOR_SECRET_STORE: "memory" },
          stdout: "piped",
          stderr: "piped",
        },
        `inspector: ${line}`,
        120_000,
      );
      const stdout = new TextDecoder().decode(run.stdout);
      assert.equal(run.code, 0, `${line}\n${new TextDecoder().decode(run.stderr)}`);
      const answer = JSON.parse(stdout);
      if (rest.includes("tools/call")) {
        assert.equal(answer.isError, undefined, stdout);
        assert.match(answer.content[0].text, /^\["\d{4}-\d{2}-\d{2}"\]$/);
      } else {
        assert.ok(answer.tools.some((tool: { name: string }) => tool.name.startsWith("get_date")));
      }
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("every curl line of the HTTP recipes gets a 2xx JSON answer from svc started as docs/http.md starts it", async () => {
  // The lines are written for the built-in configuration, as docs/clients.md says, which the
  // first line of docs/http.md serves from the clone.
  const [loopback] = commandLines(docBlock("docs/http.md", "recipe: serve-http", "sh"));
  assert.equal(loopback, "bin/svc serve --transport http --port 8080");
  // Port 0, a free one, where 8080 may be another program's.
  await using svc = await startLine(loopback.replace("--port 8080", "--port 0").split(" "));
  assert.match(svc.url, /^http:\/\/127\.0\.0\.1:\d+$/, "loopback only, the default");
  assert.ok(svc.stderr().includes(`config ${root}/appsettings.json`), svc.stderr());
  const lines = commandLines(docBlock(CLIENTS, "cookbook", "sh"));
  assert.ok(lines.length >= 6, `found ${lines.length} commands`);
  for (const line of lines) {
    const command = line.replaceAll("http://127.0.0.1:8080", svc.url)
      .replace(/^curl -s /, "curl -s -w '\\n%{http_code}' ");
    const run = await outputWithin("bash", {
      args: ["-c", command],
      stdout: "piped",
      stderr: "piped",
    }, line);
    const out = new TextDecoder().decode(run.stdout).trim();
    const status = Number(out.slice(out.lastIndexOf("\n") + 1));
    const body = out.slice(0, out.lastIndexOf("\n"));
    assert.ok(status >= 200 && status < 300, `${line}\n=> ${status} ${body.slice(0, 300)}`);
    const parsed = JSON.parse(body);
    assert.ok(parsed.error === undefined && !parsed.isError, `${line}\n=> ${body.slice(0, 300)}`);
    assert.ok(parsed.result?.isError !== true, `${line}\n=> ${body.slice(0, 300)}`);
  }
});

Deno.test("the Sha256 recipe gives the digest svc computes for an API key", async () => {
  const [line] = commandLines(docBlock(CLIENTS, "cookbook-sha256", "sh"));
  const run = await outputWithin("bash", { args: ["-c", line!], stdout: "piped" }, line!);
  const digest = new TextDecoder().decode(run.stdout).trim();
  assert.equal(digest, createHash("sha256").update("my-secret-key").digest("hex"));
});

/** The fenced `language` block of docs/security.md that follows `<!-- recipe: name -->`. */
function securityBlock(name: string, language: string): string {
  return docBlock("docs/security.md", `recipe: ${name}`, language);
}

Deno.test("recipe 'who may delete, and what': a role sees and calls the wrapper, which deletes only under its folder", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-recipe-scratch-" });
  try {
    const scratch = `${dir}/scratch`;
    await Deno.mkdir(scratch);
    await Deno.writeTextFile(`${scratch}/old.log`, "old");
    await Deno.writeTextFile(`${dir}/keep.txt`, "keep");
    // The recipe's folder and file, here: /srv/scratch becomes a temp folder.
    await Deno.writeTextFile(
      `${dir}/scratch.ps1`,
      (securityBlock("scratch-ps1", "powershell")).replaceAll("/srv/scratch", scratch),
    );
    const keys = { ops: "ops-key-5d1c9e", ci: "ci-key-71b0aa" };
    const digest = (key: string) => createHash("sha256").update(key).digest("hex");
    const config = JSON.parse(
      (securityBlock("scratch-config", "json"))
        .replace("<sha-256 of the ops key>", digest(keys.ops))
        .replace("<sha-256 of the ci key>", digest(keys.ci))
        .replace('"scratch.ps1"', JSON.stringify(`${dir}/scratch.ps1`)),
    );
    await using svc = await startHttpSvc({ config });
    const connect = async (key: string) => {
      const client = new Client({ name: "svc-recipe-scratch", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), {
          requestInit: { headers: { "X-API-Key": key } },
        }),
      );
      return client;
    };
    const ci = await connect(keys.ci);
    try {
      const names = (await ci.listTools()).tools.map((t) => t.name);
      assert.ok(names.some((n) => n.startsWith("get_child_item")), names.join(", "));
      assert.ok(!names.includes("remove_scratch_item"), "ci does not see the wrapper");
      assert.ok(!names.some((n) => n.startsWith("remove_item")), "Remove-Item is never offered");
      await assert.rejects(
        ci.callTool({ name: "remove_scratch_item", arguments: { Path: "old.log" } }),
        /Unknown tool 'remove_scratch_item'/,
      );
    } finally {
      await ci.close();
    }
    const ops = await connect(keys.ops);
    try {
      assert.ok((await ops.listTools()).tools.some((t) => t.name === "remove_scratch_item"));
      const call = (path: string) =>
        ops.callTool({ name: "remove_scratch_item", arguments: { Path: path } });
      for (const outside of [`${dir}/keep.txt`, "../keep.txt"]) {
        const refused = await call(outside);
        assert.equal(refused.isError, true, outside);
        assert.match(JSON.stringify(refused.content), /Only items under .* may be deleted/);
      }
      assert.equal(await Deno.readTextFile(`${dir}/keep.txt`), "keep");
      const deleted = await call("old.log");
      assert.notEqual(deleted.isError, true, JSON.stringify(deleted));
      await assert.rejects(Deno.stat(`${scratch}/old.log`), Deno.errors.NotFound);
    } finally {
      await ops.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
