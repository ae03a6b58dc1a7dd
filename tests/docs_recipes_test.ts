/**
 * The docs' blocks work when followed, beside those of docs/clients.md (`tests/recipes_test.ts`,
 * which also serves its curl lines from the first line of docs/http.md) and the nginx blocks of
 * docs/scaling-out.md (`tests/http_proxy_test.ts`, `tests/scale_out_test.ts`): docs/http.md's
 * every-interface line refuses to start without authentication; its HTTPS line, and the same line
 * of docs/scaling-out.md, serve docs/security.md's authentication sample over TLS on every
 * interface; that doc's managed-identity startup script evicts a worker whose sign-in fails; the
 * error output of docs/configuration-rules.md is what svc prints; and the objects that
 * docs/output-shaping.md shows, and the question docs/clients.md shows for Remove-Item, are what a
 * client gets.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { DEFAULT_WAIT_MS } from "./support/deadline.ts";
import { commandLines, docBlock, runLine, startLine } from "./support/docs.ts";
import { outputOf, runSvc, startHttpSvc, startSvc } from "./support/harness.ts";
import { makeAuthority, makeServerPair, trustingFetch } from "./support/tls.ts";

const root = new URL("../", import.meta.url).pathname.replace(/\/$/, "");

// bin/svc is a bash script (Windows runs bin\svc.cmd), and the listing's view is the Unix one.
const IS_UNIX = Deno.build.os !== "windows";

/** A doc's text, for what it shows inline. */
function docText(doc: string): string {
  return Deno.readTextFileSync(`${root}/${doc}`);
}

Deno.test({
  name:
    "docs/http.md: the every-interface line refuses to start without authentication, naming the way out",
  ignore: !IS_UNIX,
  fn: async () => {
    const [, everyInterface] = commandLines(docBlock("docs/http.md", "recipe: serve-http", "sh"));
    assert.equal(everyInterface, "bin/svc serve --transport http --host 0.0.0.0");
    // From the clone, on its configuration: authentication off, as the quick start serves it.
    const run = await runLine(everyInterface!.split(" "));
    assert.equal(run.code, 2, run.stderr);
    assert.match(
      run.stderr,
      /^svc: Refusing to listen on '0\.0\.0\.0' because authentication is off .*turn authentication on, bind to 127\.0\.0\.1, or accept the risk with --allow-anonymous/m,
    );
  },
});

Deno.test({
  name:
    "docs/http.md and docs/scaling-out.md: the HTTPS line serves docs/security.md's authentication sample on every interface",
  ignore: !IS_UNIX,
  fn: async () => {
    const [line] = commandLines(docBlock("docs/http.md", "recipe: serve-https", "sh"));
    const [scalingOut] = commandLines(docBlock("docs/scaling-out.md", "recipe: serve-https", "sh"));
    assert.equal(scalingOut, line!.replace(/^bin\/svc /, "svc "), "both docs give one line");
    const authority = await makeAuthority();
    try {
      const pair = await makeServerPair(authority, "tls");
      const keys = { ci: "ci-key-0c41d7", ops: "ops-key-9e2b53" };
      // The sample is the file's Authentication section; the rest of the file is the reader's
      // own (here one command). Placeholders filled: the digest, and the tenant of the JwtBearer
      // scheme, which is not the default one and so is never asked for a key here. The ops key's
      // `Value` stays as written and comes from the variable the sample names, as from a secret
      // store.
      const sample = docBlock("docs/security.md", "recipe: authentication", "jsonc")
        .replace("<hex digest of the key>", createHash("sha256").update(keys.ci).digest("hex"))
        .replace("<tenant>", "4d6f1c2a-8e3b-4a57-9c10-2f5e7b8d9a31");
      const config = `${authority.dir}/appsettings.json`;
      await Deno.writeTextFile(
        config,
        `{\n"ShellConfiguration": { "Commands": ["Get-Date"] },\n${sample}}\n`,
      );
      const words = line!
        .replace("/etc/svc/appsettings.json", config)
        .replace("/etc/svc/tls/tls.crt", pair.certificatePath)
        .replace("/etc/svc/tls/tls.key", pair.keyPath)
        .split(" ");
      // Port 0, a free one, where the default 8080 may be another program's.
      const args = [...words, "--port", "0"];

      // The value left as the sample writes it, with no variable: svc refuses, naming the entry.
      const refused = await runLine(args);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(
        refused.stderr,
        /'Authentication:Schemes:keys:Keys:ops:Value' in '[^']+': holds the placeholder/,
      );

      await using svc = await startLine(args, {
        env: { Authentication__Schemes__keys__Keys__ops__Value: keys.ops },
      });
      assert.match(svc.url, /^https:\/\/0\.0\.0\.0:\d+$/);
      const base = `https://localhost:${new URL(svc.url).port}`;
      using trusting = trustingFetch(authority);
      const get = async (path: string, headers: Record<string, string> = {}) => {
        const response = await trusting(`${base}${path}`, {
          headers,
          signal: AbortSignal.timeout(DEFAULT_WAIT_MS),
        });
        return { status: response.status, headers: response.headers, body: await response.text() };
      };
      assert.equal((await get("/health")).status, 200, "probes need no key");
      const anonymous = await get("/tools");
      assert.equal(anonymous.status, 401, anonymous.body);
      assert.equal(anonymous.headers.get("www-authenticate"), 'ApiKey header="X-API-Key"');
      for (const key of [keys.ci, keys.ops]) {
        const listed = await get("/tools", { "X-API-Key": key });
        assert.equal(listed.status, 200, listed.body);
        const names = (JSON.parse(listed.body).tools as { name: string }[]).map((t) => t.name);
        assert.ok(names.some((name) => name.startsWith("get_date")), names.join(", "));
      }
      // The sample's one allowed origin gets CORS headers; any other origin's preflight is refused.
      const preflight = async (origin: string) => {
        const response = await trusting(`${base}/mcp`, {
          method: "OPTIONS",
          headers: { Origin: origin, "Access-Control-Request-Method": "POST" },
          signal: AbortSignal.timeout(DEFAULT_WAIT_MS),
        });
        await response.body?.cancel();
        return response;
      };
      const allowed = await preflight("https://app.example");
      assert.equal(allowed.headers.get("access-control-allow-origin"), "https://app.example");
      const other = await preflight("https://elsewhere.example");
      assert.equal(other.status, 403);
      assert.equal(other.headers.get("access-control-allow-origin"), null);
    } finally {
      await Deno.remove(authority.dir, { recursive: true });
    }
  },
});

Deno.test("docs/security.md: the managed-identity startup script evicts a worker whose sign-in fails, and readiness stays 503", async () => {
  // Connect-AzAccount -Identity needs Azure's module and a managed identity, neither of which is
  // here. The script runs as written against a stand-in Az.Accounts whose Connect-AzAccount fails
  // as Azure's does where no identity is available: what the doc describes is svc's answer to that.
  const dir = await Deno.makeTempDir({ prefix: "svc-doc-identity-" });
  try {
    await Deno.writeTextFile(
      `${dir}/startup.ps1`,
      docBlock("docs/security.md", "recipe: managed-identity", "powershell"),
    );
    const failure = "ManagedIdentityCredential authentication unavailable: no identity here";
    await Deno.mkdir(`${dir}/modules/Az.Accounts`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/modules/Az.Accounts/Az.Accounts.psm1`,
      `function Connect-AzAccount { param([switch] $Identity) throw '${failure}' }\n`,
    );
    await using svc = await startHttpSvc({
      config: {
        ShellConfiguration: {
          Commands: ["Get-Date"],
          Environment: { StartupScriptPath: `${dir}/startup.ps1` },
        },
        McpServer: { RunspacePool: { MinPoolSize: 1, EagerWarmCount: 1 } },
      },
      env: { PSModulePath: `${dir}/modules` },
    });
    assert.match(
      svc.stderr(),
      new RegExp(`WARNING +pool: Worker startup failed; evicting .*Error=${failure}`),
    );
    const ready = await fetch(`${svc.url}/health/ready`, {
      signal: AbortSignal.timeout(DEFAULT_WAIT_MS),
    });
    assert.equal(ready.status, 503, await ready.text());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const RULES = "docs/configuration-rules.md";

Deno.test("docs/configuration-rules.md: svc prints exactly the documented sentences for the mistakes it describes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-doc-rules-" });
  try {
    // The doc's file is /etc/svc/appsettings.json; here it is one in a temp folder.
    const here = (text: string) => text.replaceAll("/etc/svc", dir);
    const path = `${dir}/appsettings.json`;
    const serve = async (config: Record<string, unknown>) => {
      await Deno.writeTextFile(path, JSON.stringify(config));
      return await runSvc(["serve", "--config", path]);
    };
    // "StartupScriptPath": "startup.ps1", and no startup.ps1 beside the file.
    const startup = { Environment: { StartupScriptPath: "startup.ps1" } };
    const missing = await serve({ ShellConfiguration: startup });
    assert.equal(missing.code, 2);
    assert.equal(missing.stderr, here(docBlock(RULES, "output: missing-startup-script", "text")));

    // The four mistakes the block names, in one file: all told in one run.
    const four = {
      ShellConfiguration: { ToolCallTimeout: 60, SerializationDepth: -1, ...startup },
      McpServer: { EnableLegacySse: "maybe" },
    };
    const block = here(docBlock(RULES, "output: four-mistakes", "text"));
    const all = await serve(four);
    assert.equal(all.code, 2);
    assert.equal(all.stderr, block);
    // doctor gives the same sentences as its errors.
    const doctor = await runSvc(["doctor", "--format", "json", "--config", path]);
    assert.equal(doctor.code, 2, doctor.stderr);
    const sentences = block.split("\n").filter((l) => l.startsWith("  - ")).map((l) => l.slice(4));
    assert.deepEqual(JSON.parse(doctor.stdout).errors, sentences);

    // The mistyped flag the doc quotes.
    const typo = /`(svc: Unknown option '--trasnport'[^`]*)`/.exec(docText(RULES));
    assert.ok(typo, `${RULES} quotes no mistyped flag`);
    const flag = await runSvc(["serve", "--trasnport", "http"]);
    assert.equal(flag.code, 2);
    assert.equal(flag.stderr, `${typo[1]}\n`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The keys of `value`'s object, in order. */
function keys(value: unknown): string[] {
  return Object.keys(value as Record<string, unknown>);
}

Deno.test({
  name:
    "docs/output-shaping.md and docs/clients.md: a listing, processes, drives and Remove-Item's question are as shown",
  ignore: !IS_UNIX,
  fn: async () => {
    const tree = await Deno.realPath(await Deno.makeTempDir({ prefix: "svc-doc-tree-" }));
    try {
      // "a tree of two folders and three files", 4 bytes each, modes as the example shows them.
      for (const folder of ["a", "b"]) await Deno.mkdir(`${tree}/${folder}`, { mode: 0o755 });
      for (const file of ["f1.txt", "a/f2.txt", "b/f3.txt"]) {
        await Deno.writeTextFile(`${tree}/${file}`, "text", { mode: 0o644 });
      }
      const asked: string[] = [];
      await using svc = await startSvc({
        config: {
          ShellConfiguration: {
            Commands: ["Get-ChildItem", "Get-Process", "Get-PSDrive", "Remove-Item"],
            ExcludePatterns: [],
          },
        },
        elicitation: (params) => {
          asked.push(params.message);
          return Promise.resolve({ action: "accept", content: { answer: "No" } });
        },
      });
      const call = async (name: string, args: Record<string, unknown>) => {
        const result = await svc.callTool(name, args);
        assert.notEqual(result.isError, true, JSON.stringify(result));
        return result;
      };

      // Get-ChildItem -Recurse: each item shown has the keys, in order, and the values of the
      // example's items of the same name (times, owner and a folder's size are this machine's).
      const listed = outputOf(await call("get_child_item_items", { Path: [tree], Recurse: true }));
      const items = listed as Record<string, unknown>[];
      assert.equal(items.length, 5, JSON.stringify(items));
      const shown = docBlock("docs/output-shaping.md", "output: child-items", "text").trim()
        .split("\n").map((line) => JSON.parse(line.replaceAll("/tmp/tree", tree)));
      for (const expected of shown) {
        const item = items.find((i) => i.FullName === expected.FullName);
        assert.ok(item, `no ${expected.FullName} in ${JSON.stringify(items)}`);
        assert.deepEqual(keys(item), keys(expected));
        for (const key of ["Directory", "UnixMode", "Name", "FullName"]) {
          assert.equal(item[key], expected[key], key);
        }
        if (expected.UnixMode.startsWith("-")) assert.equal(item.Size, expected.Size);
        assert.match(String(item.LastWriteTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
      }
      for (const item of items) assert.deepEqual(keys(item), keys(shown[0]));

      // Get-Process and Get-PSDrive: the columns of the examples "after", in order.
      const inline = (start: string) => {
        const match = new RegExp("`(\\{" + start.replace(/[()]/g, "\\$&") + "[^`]*\\})`")
          .exec(docText("docs/output-shaping.md"));
        assert.ok(match, `docs/output-shaping.md shows no object starting ${start}`);
        return JSON.parse(match[1]!) as Record<string, unknown>;
      };
      const processes = outputOf(await call("get_process_name", { _MaxResults: 5 })) as unknown[];
      assert.equal(processes.length, 5);
      const process = inline('"NPM(K)"');
      for (const p of processes) assert.deepEqual(keys(p), keys(process));
      const drives = outputOf(await call("get_psdrive_name", {})) as Record<string, unknown>[];
      const drive = inline('"Name":"/"');
      const rootDrive = drives.find((d) => d.Name === "/");
      assert.ok(rootDrive, JSON.stringify(drives));
      assert.deepEqual(keys(rootDrive), keys(drive));
      assert.deepEqual([rootDrive.Provider, rootDrive.Root], [drive.Provider, drive.Root]);

      // Remove-Item with Confirm: true asks the question docs/clients.md shows; No keeps the file.
      const file = `${tree}/x`;
      await Deno.writeTextFile(file, "x");
      await call("remove_item_path", { Path: [file], Confirm: true });
      const question = docBlock("docs/clients.md", "output: remove-item-question", "text").trim();
      assert.deepEqual(asked, [question.replace('"/tmp/x"', JSON.stringify(file))]);
      assert.equal(await Deno.readTextFile(file), "x");
    } finally {
      await Deno.remove(tree, { recursive: true });
    }
  },
});
