/**
 * A module author's loop, on real PowerShell with real MCP clients: an edit to a module is seen. A
 * restart serves no stale catalog (an edit, a new dot-sourced file); while svc runs, an edit is
 * noticed, `notifications/tools/list_changed` reaches a stdio client and a Stateful HTTP session,
 * the new tool is called, a call running during the edit ends on the old code, and a module broken
 * by an edit (over stdio) keeps the last good tools until it is fixed.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { parse } from "jsonc-parser";
import {
  eventually,
  outputOf,
  startHttpSvc,
  startSvc,
  type SvcConnection,
} from "./support/harness.ts";
import { within } from "./support/deadline.ts";
import { walkConfiguration } from "./support/walk.ts";

/** A function that runs for a while, so that an edit can land during a call. */
const SLOW =
  "\nfunction Wait-Moment { param([int] $Seconds) Start-Sleep -Seconds $Seconds; 'waited' }\n";

/** The walk's module and configuration, plus a slow function, with a catalog cache of their own. */
async function walkWithSlowFunction() {
  const walk = await walkConfiguration();
  await Deno.writeTextFile(walk.module, SLOW, { append: true });
  const config = parse(await Deno.readTextFile(walk.config)) as Record<string, unknown>;
  return { walk, config, env: { SVC_CACHE_DIR: `${walk.dir}/cache` } };
}

/** Counts `notifications/tools/list_changed` a client receives. */
function countListChanged(client: Client): { count: number } {
  const seen = { count: 0 };
  client.setNotificationHandler("notifications/tools/list_changed", () => {
    seen.count++;
  });
  return seen;
}

const names = async (svc: { listTools(): Promise<{ tools: { name: string }[] }> }) =>
  (await svc.listTools()).tools.map((tool) => tool.name);

Deno.test("a restart after an edit serves no stale catalog, and says when it serves a cached one", async () => {
  const { walk, config, env } = await walkWithSlowFunction();
  try {
    {
      await using svc = await startSvc({ config, env });
      assert.ok((await names(svc)).includes("get_greeting"));
    }
    {
      await using svc = await startSvc({ config, env });
      assert.ok((await names(svc)).includes("get_greeting"));
      assert.match(svc.stderr(), /INFO +catalog: Serving 21 tools from the catalog cache/);
    }
    // A function in a new file the module dot-sources: a file the catalog never knew of.
    await Deno.mkdir(`${walk.dir}/Public`);
    await Deno.writeTextFile(
      `${walk.dir}/Public/Show-Progress.ps1`,
      "function Show-Progress { 'shown' }\n",
    );
    await Deno.writeTextFile(walk.module, "\n. $PSScriptRoot/Public/Show-Progress.ps1\n", {
      append: true,
    });
    {
      await using svc = await startSvc({ config, env });
      assert.ok((await names(svc)).includes("show_progress"), "the new function is a tool");
      assert.match(
        svc.stderr(),
        /Not serving the cached catalog: .*MyTools\.psm1 changed since it was built/,
      );
    }
    // An edit to the dot-sourced file alone.
    await Deno.writeTextFile(
      `${walk.dir}/Public/Show-Progress.ps1`,
      "function Show-Progress { param([switch] $Twice) 'shown' }\n",
    );
    await using svc = await startSvc({ config, env });
    const tool = (await svc.listTools()).tools.find((t) => t.name === "show_progress");
    assert.ok(
      tool && "Twice" in (tool.inputSchema.properties as object),
      "the new switch is offered",
    );
    assert.match(svc.stderr(), /Not serving the cached catalog: .*Show-Progress\.ps1 changed/);
  } finally {
    await walk[Symbol.asyncDispose]();
  }
});

/** Edits under a running server: a new tool, a call during the edit, a broken module, the fix. */
async function editWhileServing(
  connection: {
    listTools(): Promise<{ tools: { name: string; inputSchema: Record<string, unknown> }[] }>;
    call(name: string, args: Record<string, unknown>): Promise<unknown>;
    stderr(): string;
  },
  seen: { count: number },
  module: string,
  options: { breakAndFix: boolean },
): Promise<void> {
  const original = await Deno.readTextFile(module);
  assert.ok(!(await names(connection)).includes("show_progress"));
  // A call running while the file changes ends on the code it started with.
  const running = connection.call("wait_moment", { Seconds: 4 });
  await new Promise((resolve) => setTimeout(resolve, 500));
  await Deno.writeTextFile(
    module,
    original.replace(
      "[ValidateSet('Plain', 'Loud')] [string] $Style = 'Plain'",
      "[ValidateSet('Plain', 'Loud')] [string] $Style = 'Plain',\n        [switch] $Twice",
    ) +
      "\nfunction Show-Progress { 'progress shown' }\n",
  );
  assert.ok(await eventually(() => seen.count >= 1, 60_000), "tools/list_changed was sent");
  assert.deepEqual(await running, ["waited"], "the call in flight finished on the old code");
  const tools = (await connection.listTools()).tools;
  assert.ok(tools.some((t) => t.name === "show_progress"), "the new function is a tool");
  const greeting = tools.find((t) => t.name === "get_greeting")!;
  assert.ok("Twice" in (greeting.inputSchema.properties as object), "the new switch is offered");
  assert.deepEqual(await connection.call("show_progress", {}), ["progress shown"]);
  assert.deepEqual(await connection.call("get_greeting", { Name: "Ada", Twice: true }), [
    "Hello, Ada",
  ]);

  if (!options.breakAndFix) return;
  // Broken by an edit: the last good tools stay, and the log says why.
  await Deno.writeTextFile(module, original + "\nfunction Broken-Thing {\n");
  assert.ok(
    await eventually(() => /no longer loads/.test(connection.stderr()), 60_000),
    "the broken module is reported",
  );
  assert.equal(seen.count, 1, "no tools/list_changed for a module that does not load");
  assert.ok((await names(connection)).includes("show_progress"), "the last good tools stay");
  assert.deepEqual(await connection.call("show_progress", {}), ["progress shown"]);
  // The fix is noticed too.
  await Deno.writeTextFile(module, original);
  assert.ok(
    await eventually(() => seen.count >= 2, 60_000),
    `the fix is announced; svc logged: ${
      connection.stderr().split("\n").filter((l) => !/DEBUG/.test(l)).slice(-15).join("\n")
    }`,
  );
  assert.ok(!(await names(connection)).includes("show_progress"));
}

Deno.test("stdio: an edit under a running svc reaches the client, without losing a call in flight", async () => {
  const { walk, config, env } = await walkWithSlowFunction();
  try {
    await using svc: SvcConnection = await startSvc({ config, env });
    const seen = countListChanged(svc.client!);
    await editWhileServing(
      {
        listTools: () => svc.listTools(),
        call: async (name, args) => outputOf(await svc.callTool(name, args)),
        stderr: () => svc.stderr(),
      },
      seen,
      walk.module,
      { breakAndFix: true },
    );
    assert.match(svc.stderr(), /New calls run on worker \d+, started with the new code/);
    // An edit of the configuration file is said, and applied at the next start.
    const configFile = `${svc.dir}/appsettings.json`;
    await Deno.writeTextFile(configFile, (await Deno.readTextFile(configFile)) + "\n");
    assert.ok(
      await eventually(() =>
        /WARNING.*The configuration file .*appsettings\.json changed; svc reads its configuration at start, so restart it to apply the change/
          .test(svc.stderr())
      ),
      "the configuration change is said",
    );
  } finally {
    await walk[Symbol.asyncDispose]();
  }
});

Deno.test("http, Stateful: with ReloadOnChange an edit reaches the session and new workers run the new code", async () => {
  const { walk, config, env } = await walkWithSlowFunction();
  try {
    const shell = config.ShellConfiguration as Record<string, unknown>;
    await using svc = await startHttpSvc({
      config: {
        ...config,
        ShellConfiguration: { ...shell, ReloadOnChange: true },
        McpServer: {
          HttpTransportMode: "Stateful",
          RunspacePool: { MinPoolSize: 1, EagerWarmCount: 1 },
        },
      },
      env,
    });
    const client = new Client({ name: "svc-reload-test", version: "1.0.0" });
    const seen = countListChanged(client);
    await within(
      client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`))),
      "connect",
    );
    try {
      await editWhileServing(
        {
          listTools: () => client.listTools() as never,
          call: async (name, args) =>
            outputOf(await client.callTool({ name, arguments: args }) as never),
          stderr: () => svc.stderr(),
        },
        seen,
        walk.module,
        // A broken module and its fix take the path they take over stdio (CatalogStore.reload).
        { breakAndFix: false },
      );
    } finally {
      await client.close();
    }
  } finally {
    await walk[Symbol.asyncDispose]();
  }
});
