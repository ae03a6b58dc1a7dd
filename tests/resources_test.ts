/**
 * MCP resources end to end, on real pwsh with the TypeScript SDK client: every tool's help, the
 * resources and templates the configuration backs with commands (text, JSON and bytes; values from
 * the URI bound as parameter values, never run), output cut at MaxResultBytes read back in pages,
 * over stdio and HTTP in both eras; over HTTP, roles decide what a caller lists and reads, and kept
 * output is readable by its own caller only. A reload updates the subscribed resources it may change
 * (resources/subscribe in the 2025 era, a listen's resourceSubscriptions in the 2026-07-28 era).
 */
import assert from "node:assert/strict";
import type { Client } from "@modelcontextprotocol/client";
import { docBlock } from "./support/docs.ts";
import {
  connectWithKey,
  eventually,
  runSvc,
  startHttpSvc,
  startSvc,
  TEST_PWSH,
} from "./support/harness.ts";

const MODULE = `function Get-Greeting {
    <#
    .SYNOPSIS
    Greets someone.
    .DESCRIPTION
    Returns a friendly greeting.
    .PARAMETER Name
    Who to greet.
    .EXAMPLE
    Get-Greeting -Name Ada
    #>
    param([Parameter(Mandatory)][ArgumentCompletions('Ada', 'Alan', 'Grace')][string]$Name, [int]$Times = 1)
    "Hello, $Name!" * $Times
}
function Get-Bytes { param([int]$Count = 4) , [byte[]](1..$Count) }
function Get-Setting { param([string]$Key) [pscustomobject]@{ Key = $Key; Value = 42 } }
function Get-Many { param([int]$Count = 2000) 1..$Count | ForEach-Object { [pscustomobject]@{ N = $_; Text = "item $_" } } }
`;

const ERAS = ["2025-11-25", "2026-07-28"] as const;

/** A temp dir holding the module, and a configuration serving it with resources. */
async function resourceConfig(extra: Record<string, unknown> = {}) {
  const dir = await Deno.makeTempDir({ prefix: "svc-resources-" });
  await Deno.writeTextFile(`${dir}/MyTools.psm1`, MODULE);
  const config = {
    ShellConfiguration: {
      Modules: [`${dir}/MyTools.psm1`],
      // docs/resources.md's example, as written there.
      Resources: JSON.parse(`{${docBlock("docs/resources.md", "recipe: resources", "json")}}`)
        .Resources as Record<string, unknown>,
    },
    McpServer: { RunspacePool: { StopTimeout: "00:00:02" } },
    ...extra,
  };
  return { dir, config };
}

type Contents = { uri: string; mimeType?: string; text?: string; blob?: string };

/** What every client sees, whatever its transport and era. */
async function readsAsConfigured(client: Client, era: string, marker: string): Promise<void> {
  const { resources } = await client.listResources();
  const uris = resources.map((r) => r.uri);
  for (const tool of ["get_greeting", "get_bytes", "get_setting", "get_many"]) {
    assert.ok(uris.includes(`svc://help/${tool}`), `help of ${tool} is listed`);
  }
  assert.ok(uris.includes("data://bytes"));
  assert.ok(!uris.some((uri) => uri.includes("{")), "templates are not resources");
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(), [
    "config://settings/{Key}",
    "greet://people/{Name}",
    "svc://help/{tool}",
  ]);

  const help = (await client.readResource({ uri: "svc://help/get_greeting" }))
    .contents[0] as Contents;
  assert.equal(help.mimeType, "text/markdown");
  assert.match(help.text!, /^# get_greeting\n/);
  assert.match(help.text!, /Greets someone\.\n\nReturns a friendly greeting\./);
  assert.match(
    help.text!,
    /\| `Name` \| string \(System\.String\) \| yes \| {2}\| Who to greet\. \|/,
  );
  assert.match(help.text!, /\| `Times` \| integer \(System\.Int32\) \| no \| 1 \|/);
  assert.match(
    help.text!,
    /## Examples\n\n### Example 1\n\n```powershell\nGet-Greeting -Name Ada\n```/,
  );

  const greeting = await client.readResource({ uri: "greet://people/Ada%20L" });
  assert.deepEqual(greeting.contents, [
    { uri: "greet://people/Ada%20L", mimeType: "text/plain", text: "Hello, Ada L!" },
  ]);
  // A template's variables complete: the help template's from the tools, a configured one's from
  // PowerShell's completion of the parameter it binds.
  const complete = (uri: string, name: string, value: string) =>
    client.complete({ ref: { type: "ref/resource", uri }, argument: { name, value } });
  assert.deepEqual((await complete("svc://help/{tool}", "tool", "get_s")).completion.values, [
    "get_setting",
  ]);
  assert.deepEqual((await complete("greet://people/{Name}", "Name", "A")).completion.values, [
    "Ada",
    "Alan",
  ]);
  await assert.rejects(complete("greet://people/{Name}", "Nmae", ""), /has no variable 'Nmae'/);
  // A partial value is text to PowerShell's completion too: the subexpression never runs.
  const typed = await complete(
    "greet://people/{Name}",
    "Name",
    `$(New-Item -ItemType File -Path '${marker}')`,
  );
  assert.deepEqual(typed.completion.values, []);
  await assert.rejects(Deno.stat(marker), Deno.errors.NotFound);
  // 2026-07-28 results carry the cache fields; 2025-era results have none.
  const cached = greeting as { ttlMs?: number; cacheScope?: string };
  if (era === "2026-07-28") assert.deepEqual([cached.ttlMs, cached.cacheScope], [0, "private"]);
  else assert.equal(cached.ttlMs, undefined);

  // A value is a parameter value: the subexpression is text, and never runs.
  const attack = `$(New-Item -ItemType File -Path '${marker}')`;
  const setting = await client.readResource({
    uri: `config://settings/${encodeURIComponent(attack)}`,
  });
  assert.deepEqual(JSON.parse((setting.contents[0] as Contents).text!), { Key: attack, Value: 42 });
  assert.equal((setting.contents[0] as Contents).mimeType, "application/json");
  await assert.rejects(Deno.stat(marker), Deno.errors.NotFound);

  const bytes = await client.readResource({ uri: "data://bytes" });
  assert.deepEqual(bytes.contents, [{
    uri: "data://bytes",
    mimeType: "image/png",
    blob: "AQIDBA==",
  }]);

  // One answer for every URI that names nothing readable (the SDK sends resource-not-found as
  // -32602 in both eras); a variable never spans a path segment.
  for (const uri of ["svc://help/nope", "greet://people/a/b", "other://x", "svc://results/x/1"]) {
    await assert.rejects(
      client.readResource({ uri }),
      (error: { code?: number; message: string }) => {
        assert.equal(error.code, -32602, uri);
        assert.match(error.message, /was not found/, uri);
        return true;
      },
    );
  }
}

/** A call whose output is cut links the rest; its pages hold every item after the kept ones. */
async function keepsTheRest(client: Client): Promise<string> {
  const result = await client.callTool({ name: "get_many", arguments: {} }) as {
    content: { type: string; uri?: string; text?: string }[];
    structuredContent: { output: { N: number }[]; truncated: { keptItems: number } };
  };
  const first = result.content.find((c) => c.type === "resource_link")?.uri ?? "";
  assert.match(first, /^svc:\/\/results\/[0-9a-f-]{36}\/1$/, "the result links the rest");
  const kept = result.structuredContent.output.map((item) => item.N);
  const pages = Number(/in (\d+) page/.exec(JSON.stringify(result.content))![1]);
  const rest: number[] = [];
  for (let page = 1; page <= pages; page++) {
    const uri = first.replace(/\/1$/, `/${page}`);
    const read = await client.readResource({ uri });
    const text = (read.contents[0] as Contents).text!;
    assert.ok(new TextEncoder().encode(text).length <= 24_576, "a page fits MaxResultBytes");
    rest.push(...(JSON.parse(text) as { N: number }[]).map((item) => item.N));
  }
  assert.deepEqual([...kept, ...rest], Array.from({ length: 2000 }, (_, i) => i + 1));
  return first;
}

for (const era of ERAS) {
  Deno.test(`resources over stdio (${era}): help, command-backed reads, kept output`, async () => {
    const { dir, config } = await resourceConfig();
    try {
      await using svc = await startSvc({ config, era, env: { SVC_CACHE_DIR: `${dir}/cache` } });
      await readsAsConfigured(svc.client!, era, `${dir}/pwned`);
      await keepsTheRest(svc.client!);
      // A reload is a new resource list (each tool's help is a resource), and an update of each
      // subscribed URI it may change: help (even of a tool not there yet) and what a configured
      // resource matches, never kept output or what names nothing. Any URI within the bounds is
      // accepted, readable or not. A 2025-era client subscribes with resources/subscribe, a
      // 2026-07-28 one names the URIs in the listen that also brings it list_changed.
      const client = svc.client!;
      let changed = 0;
      client.setNotificationHandler("notifications/resources/list_changed", () => {
        changed++;
      });
      const updated: string[] = [];
      client.setNotificationHandler("notifications/resources/updated", (note) => {
        updated.push(note.params.uri);
      });
      const subscribed = [
        "svc://help/get_greeting",
        "svc://help/get_added",
        "greet://people/Ada",
        "svc://results/x/1",
        "other://x",
      ];
      const tooLong = `other://${"x".repeat(2048)}`;
      const fillers = Array.from({ length: 100 }, (_, i) => `other://filler/${i}`);
      let listen: Awaited<ReturnType<Client["listen"]>> | null = null;
      if (era === "2025-11-25") {
        for (const uri of subscribed) assert.deepEqual(await client.subscribeResource({ uri }), {});
        await assert.rejects(
          client.subscribeResource({ uri: tooLong }),
          /a URI of 2056 characters is over the 2048 a subscription takes/,
        );
        for (const uri of fillers.slice(subscribed.length)) await client.subscribeResource({ uri });
        await assert.rejects(
          client.subscribeResource({ uri: "other://one-more" }),
          /this connection has 100 subscriptions, the most svc keeps/,
        );
        for (const uri of fillers) await client.unsubscribeResource({ uri });
      } else {
        // The first 100 distinct URIs within the bound are honored, and the acknowledgement says so.
        listen = await client.listen({
          resourcesListChanged: true,
          resourceSubscriptions: [tooLong, ...subscribed, subscribed[0]!, ...fillers],
        });
        assert.deepEqual(
          listen.honoredFilter.resourceSubscriptions,
          [...subscribed, ...fillers.slice(0, 100 - subscribed.length)],
        );
      }
      await Deno.writeTextFile(`${dir}/MyTools.psm1`, "function Get-Added { 'added' }\n", {
        append: true,
      });
      assert.ok(await eventually(() => changed >= 1, 60_000), "resources/list_changed was sent");
      // Sent right after list_changed, on the same stream: a short wait is room enough.
      await eventually(() => updated.length >= 3, 5_000);
      const { resources } = await client.listResources();
      assert.ok(resources.some((r) => r.uri === "svc://help/get_added"));
      assert.deepEqual(updated.sort(), [
        "greet://people/Ada",
        "svc://help/get_added",
        "svc://help/get_greeting",
      ]);
      // Unsubscribed from the help: the next reload tells of the rest only.
      updated.length = 0;
      if (listen === null) {
        assert.deepEqual(await client.unsubscribeResource({ uri: "svc://help/get_greeting" }), {});
        await client.unsubscribeResource({ uri: "svc://help/get_added" });
      } else {
        await listen.close();
        listen = await client.listen({
          resourcesListChanged: true,
          resourceSubscriptions: ["greet://people/Ada", "svc://results/x/1"],
        });
      }
      await Deno.writeTextFile(`${dir}/MyTools.psm1`, "function Get-Other { 'other' }\n", {
        append: true,
      });
      assert.ok(await eventually(() => changed >= 2, 60_000), "resources/list_changed again");
      assert.ok(await eventually(() => updated.length >= 1, 5_000), "greet://people/Ada updated");
      // In the order of subscribing: an update of the help would have come first.
      assert.deepEqual(updated, ["greet://people/Ada"]);
      await listen?.close();
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("resources over HTTP in both eras: roles decide what a caller reads, and kept output is its own", async () => {
  const { dir, config } = await resourceConfig({
    Authentication: {
      Enabled: true,
      DefaultScheme: "keys",
      DefaultPolicy: { RequireAuthentication: true, RequiredRoles: ["reader"] },
      Schemes: {
        keys: {
          Type: "ApiKey",
          Keys: {
            alice: { Value: "alice-key-7d2e", Roles: ["reader", "ops"] },
            bob: { Value: "bob-key-91ac", Roles: ["reader"] },
          },
        },
      },
    },
  });
  (config.ShellConfiguration as Record<string, unknown>).CommandOverrides = {
    "Get-Bytes": { RequiredRoles: ["ops"] },
  };
  try {
    await using svc = await startHttpSvc({ config, env: { SVC_CACHE_DIR: `${dir}/cache` } });
    const connect = (key: string, era: (typeof ERAS)[number]) =>
      connectWithKey(`${svc.url}/mcp`, key, era);
    for (const era of ERAS) {
      const alice = await connect("alice-key-7d2e", era);
      const bob = await connect("bob-key-91ac", era);
      try {
        await readsAsConfigured(alice, era, `${dir}/pwned`);
        const uri = await keepsTheRest(alice);
        // Bob may not call Get-Bytes: its help and its resource are neither listed nor readable.
        const listed = (await bob.listResources()).resources.map((r) => r.uri);
        assert.ok(listed.includes("svc://help/get_greeting"));
        assert.ok(!listed.includes("svc://help/get_bytes") && !listed.includes("data://bytes"));
        const tools = await bob.complete({
          ref: { type: "ref/resource", uri: "svc://help/{tool}" },
          argument: { name: "tool", value: "get_" },
        });
        assert.ok(!tools.completion.values.includes("get_bytes"), "nor completed");
        for (const denied of ["data://bytes", "svc://help/get_bytes", uri]) {
          await assert.rejects(bob.readResource({ uri: denied }), /not found/i, denied);
        }
      } finally {
        await alice.close();
        await bob.close();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("resources over HTTP: a reload updates what a Stateful session subscribed to and what a 2026-07-28 listen names", async () => {
  const { dir, config } = await resourceConfig();
  const shell = config.ShellConfiguration as Record<string, unknown>;
  try {
    await using svc = await startHttpSvc({
      config: {
        ...config,
        ShellConfiguration: { ...shell, ReloadOnChange: true },
        McpServer: { HttpTransportMode: "Stateful", RunspacePool: { StopTimeout: "00:00:02" } },
      },
      env: { SVC_CACHE_DIR: `${dir}/cache` },
    });
    const heard = new Map<string, string[]>();
    const connect = async (era: (typeof ERAS)[number]) => {
      const client = await connectWithKey(`${svc.url}/mcp`, null, era);
      heard.set(era, []);
      client.setNotificationHandler("notifications/resources/updated", (note) => {
        heard.get(era)!.push(note.params.uri);
      });
      return client;
    };
    const era2025 = await connect("2025-11-25");
    const era2026 = await connect("2026-07-28");
    try {
      const uris = ["svc://help/get_greeting", "other://x", "config://settings/a"];
      for (const uri of uris) await era2025.subscribeResource({ uri });
      const listen = await era2026.listen({ resourceSubscriptions: uris });
      assert.deepEqual(listen.honoredFilter.resourceSubscriptions, uris);
      // The module is watched once the catalog is known.
      await era2025.listTools();
      assert.ok(await eventually(() => /Watching 1 folder/.test(svc.stderr()), 30_000));
      await Deno.writeTextFile(`${dir}/MyTools.psm1`, "function Get-Added { 'added' }\n", {
        append: true,
      });
      const told = ["config://settings/a", "svc://help/get_greeting"];
      for (const era of ERAS) {
        assert.ok(await eventually(() => heard.get(era)!.length >= 2, 60_000), era);
        assert.deepEqual(heard.get(era)!.sort(), told, era);
      }
      await listen.close();
    } finally {
      await era2025.close();
      await era2026.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("svc doctor lists the resources and templates, and says which read nothing", async () => {
  const { dir, config } = await resourceConfig();
  const resources = config.ShellConfiguration.Resources as Record<string, unknown>;
  resources.typo = { Uri: "greet://x/{Nmae}", Command: "Get-Greeting" };
  resources.gone = { Uri: "gone://x", Command: "Get-Nothing" };
  try {
    await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config));
    const doctor = await runSvc(["doctor", "--config", `${dir}/appsettings.json`], {
      env: { SVC_CACHE_DIR: `${dir}/cache`, SVC_PWSH: TEST_PWSH },
    });
    assert.match(
      doctor.stdout,
      /Resources \(4\)\n {2}svc:\/\/help\/\{tool\} {2}\(tool help\) <- svc: the help of each of 4 tool\(s\)\n {2}greet:\/\/people\/\{Name\} {2}\(greeting\) <- tool get_greeting\n {2}data:\/\/bytes {2}\(bytes\) <- tool get_bytes\n/,
    );
    assert.match(
      doctor.stdout,
      /Resource 'typo' \(ShellConfiguration:Resources:typo\) reads nothing: \{Nmae\} of 'greet:\/\/x\/\{Nmae\}' is no parameter of tool 'get_greeting'/,
    );
    assert.match(
      doctor.stdout,
      /Resource 'gone' .* reads nothing: command 'Get-Nothing' is offered as no tool/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a resource svc cannot serve stops svc at start, naming the key (exit code 2)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-resources-bad-" });
  try {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ Uri: "people/{Name}", Command: "Get-Date" }, /Resources:r:Uri'.*has no scheme/],
      [{ Uri: "x://{+Name}", Command: "Get-Date" }, /'\{\+Name\}' is not a level-1 variable/],
      [{ Uri: "x://{A}/{a}", Command: "Get-Date" }, /variable '\{a\}' appears twice/],
      [{ Uri: "svc://help/x", Command: "Get-Date" }, /the svc: scheme is svc's own/],
      [{ Uri: "x://y" }, /Resources:r:Command'.*a resource needs a Command/],
    ];
    for (const [resource, message] of cases) {
      const config = { ShellConfiguration: { Resources: { r: resource } } };
      await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(config));
      const run = await runSvc(["doctor", "--config", `${dir}/appsettings.json`]);
      assert.equal(run.code, 2, run.stdout + run.stderr);
      assert.match(run.stdout + run.stderr, message);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
