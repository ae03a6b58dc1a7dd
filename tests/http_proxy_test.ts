/**
 * svc behind nginx on loopback (Debian's nginx-light): the nginx recipes of docs/scaling-out.md run
 * as written, the HTTPS one (TLS at nginx, `Host` passed on, the scheme trusted from
 * `X-Forwarded-Proto`) with the SDK client and `curl`, and the replica routing one in front of two
 * Stateful replicas; and a front that exposes only `/health`, which a target with `\` no longer
 * gets past.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { answersOk, eventually, fixtureConfig, startHttpSvc } from "./support/harness.ts";
import { freePort, NGINX, startNginx } from "./support/nginx.ts";
import { curl, makeAuthority, makeServerPair, trustingFetch } from "./support/tls.ts";
import { exchange } from "./security/raw_http.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };
const skip = NGINX ? "" : " [skipped: no nginx binary; apt install nginx-light]";
const root = new URL("../", import.meta.url).pathname;
const SCALING_OUT = "docs/scaling-out.md";

/** The text of the fenced `language` block after `<!-- recipe: name -->` in docs/scaling-out.md. */
function recipe(name: string, language: string): string {
  const text = Deno.readTextFileSync(`${root}${SCALING_OUT}`);
  const match = new RegExp(`<!-- recipe: ${name} -->\\s*\`\`\`${language}\\n([\\s\\S]*?)\`\`\``)
    .exec(text);
  assert.ok(match, `${SCALING_OUT} has no ${language} block after '<!-- recipe: ${name} -->'`);
  return match[1]!;
}

Deno.test({
  name: `proxy: the nginx TLS recipe of docs/scaling-out.md works as written${skip}`,
  ignore: !NGINX,
  fn: async () => {
    const authority = await makeAuthority();
    const pair = await makeServerPair(authority, "nginx-tls", ["svc.example.com", "other.example"]);
    using trusting = trustingFetch(authority);
    const settings = JSON.parse(recipe("nginx-tls-svc", "json")) as {
      McpServer: Record<string, unknown>;
    };
    await using svc = await startHttpSvc({
      config: {
        ...fixtureConfig(),
        McpServer: { ...settings.McpServer, RunspacePool: LIGHT_POOL },
      },
    });
    const port = freePort();
    // Only what the reader replaces: the port, the certificate's files and svc's address.
    const server = recipe("nginx-tls", "nginx")
      .replace("listen 443 ssl;", `listen 127.0.0.1:${port} ssl;`)
      .replace("/etc/nginx/tls/svc.example.com.crt", pair.certificatePath)
      .replace("/etc/nginx/tls/svc.example.com.key", pair.keyPath)
      .replace("http://127.0.0.1:8080", `http://${new URL(svc.url).host}`);
    const base = `https://svc.example.com:${port}`;
    const resolve = ["--resolve", `svc.example.com:${port}:127.0.0.1`];
    const resolveOther = ["--resolve", `other.example:${port}:127.0.0.1`];
    await using nginx = await startNginx(server, async () => {
      try {
        const response = await trusting(`https://localhost:${port}/health`);
        await response.body?.cancel();
        return response.status === 200;
      } catch {
        return false;
      }
    });
    try {
      // curl as a user would: the public name, over TLS, a tool called.
      const call = await curl([
        ...resolve,
        "--cacert",
        authority.caPath,
        "-H",
        "content-type: application/json",
        "--data",
        JSON.stringify({ tool: "get_fixture_greeting", arguments: { Name: "proxied" } }),
        `${base}/call`,
      ]);
      assert.equal(call.code, 0, call.stderr + nginx.errors());
      assert.match(call.stdout, /Hello, proxied!/);
      // Host is passed on: a name svc does not serve is refused by svc, not let through.
      const other = await curl([
        ...resolveOther,
        "--cacert",
        authority.caPath,
        "--write-out",
        "%{http_code}",
        `https://other.example:${port}/tools`,
      ]);
      assert.match(other.stdout, /Host 'other\.example:\d+' is not served here/);
      assert.match(other.stdout, /403$/);
      // The scheme is the client's: its https origin is svc's own, the http one is not.
      const origin = (value: string) =>
        curl([
          ...resolve,
          "--cacert",
          authority.caPath,
          "-H",
          `Origin: ${value}`,
          "--output",
          "/dev/null",
          "--write-out",
          "%{http_code}",
          `${base}/tools`,
        ]);
      assert.equal((await origin(base)).stdout, "200");
      assert.equal((await origin(`http://svc.example.com:${port}`)).stdout, "403");
      // The SDK client, both eras (2025-11-25 answers stream through as SSE).
      for (const era of ["2026-07-28", "2025-11-25"] as const) {
        const client = new Client(
          { name: "proxied", version: "1" },
          era === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {},
        );
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`https://localhost:${port}/mcp`), {
            fetch: trusting,
          }),
        );
        try {
          const result = await client.callTool({
            name: "get_fixture_greeting",
            arguments: { Name: era },
          });
          assert.match(JSON.stringify(result.content), new RegExp(`Hello, ${era}!`));
        } finally {
          await client.close();
        }
      }
    } finally {
      await Deno.remove(authority.dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    `proxy: behind a front that exposes only /health, a target with \\ reaches no other route${skip}`,
  ignore: !NGINX,
  fn: async () => {
    await using svc = await startHttpSvc({
      config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
    });
    assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
    const port = freePort();
    await using _nginx = await startNginx(
      `
  upstream svc { server ${new URL(svc.url).host}; keepalive 4; }
  server {
    listen 127.0.0.1:${port};
    location /health {
      proxy_pass http://svc;
      proxy_set_header Host $http_host;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
    location / { return 403; }
  }`,
      `http://127.0.0.1:${port}/health`,
    );
    const call = JSON.stringify({ tool: "get_fixture_greeting", arguments: { Name: "bypass" } });
    const post = (target: string) =>
      exchange(
        `http://127.0.0.1:${port}`,
        `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${call.length}\r\nConnection: close\r\n\r\n${call}`,
      );
    // nginx reads `\` as a plain character and matches /health; before, svc read it as `/`,
    // removed the dot segment and ran /call.
    for (const target of ["/health/..\\call", "/health\\..\\call"]) {
      const answer = await post(target);
      assert.match(answer, /^HTTP\/1\.1 400 /, `${target}: ${answer}`);
      assert.match(answer, /request target has the character '\\'/);
      assert.ok(!answer.includes("bypass"), answer);
    }
    // What nginx resolves itself never reaches svc's /call either.
    for (const target of ["/call", "/health/../call", "/health/%2e%2e/call"]) {
      assert.match(await post(target), /^HTTP\/1\.1 403 /, target);
    }
  },
});

Deno.test({
  name: `proxy: the replica routing lines of docs/scaling-out.md work as written${skip}`,
  ignore: !NGINX,
  fn: async () => {
    const replicas = await Promise.all(["r1", "r2"].map((prefix) =>
      startHttpSvc({
        config: {
          ...fixtureConfig(),
          McpServer: {
            RunspacePool: LIGHT_POOL,
            HttpTransportMode: "Stateful",
            SessionIdPrefix: prefix,
          },
        },
      })
    ));
    try {
      const port = freePort();
      const [first, second] = replicas.map((r) => new URL(r.url).host) as [string, string];
      // Only what the reader replaces: the replicas' addresses and the port.
      const conf = [recipe("nginx-callers", "nginx"), recipe("nginx-sessions", "nginx")]
        .join("\n")
        .replaceAll("10.0.0.11:8080", first)
        .replaceAll("10.0.0.12:8080", second)
        .replace("listen 80;", `listen 127.0.0.1:${port};`);
      const base = `http://127.0.0.1:${port}`;
      await using _nginx = await startNginx(conf, `${base}/health`);
      // A request without a session goes to the upstream of all replicas: Host passed on, svc
      // serves it (without the Host line nginx sent "svc_replicas", and svc answered 403).
      const tools = await fetch(`${base}/tools`);
      const listed = await tools.text();
      assert.equal(tools.status, 200, listed);
      for (let i = 0; i < 4; i++) {
        const client = new Client({ name: `replicas-${i}`, version: "1" }, {
          versionNegotiation: { mode: "legacy" },
        });
        const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`));
        await client.connect(transport);
        try {
          assert.match(transport.sessionId ?? "", /^r[12]\./);
          for (let call = 0; call < 2; call++) {
            const result = await client.callTool({
              name: "get_fixture_greeting",
              arguments: { Name: `session ${i}` },
            });
            assert.match(JSON.stringify(result.content), new RegExp(`Hello, session ${i}!`));
          }
        } finally {
          await client.close();
        }
      }
    } finally {
      for (const replica of replicas) await replica[Symbol.asyncDispose]();
    }
  },
});
