/**
 * Scale-out on one machine (issue 14): three svc replicas behind nginx (Debian's package) on
 * loopback. Stateless calls spread over all three and throughput rises with replicas; one replica
 * killed loses only the calls it had in flight. In Stateful mode each replica starts its session
 * ids with its own name (`McpServer:SessionIdPrefix`) and nginx routes on it, so every request of
 * a session reaches the replica that holds it. A held 2026-07-28 call (one waiting for its user) stays
 * on its replica: another refuses its retry's state, and nginx hashing on the caller sends every retry home.
 * Runs where an nginx binary is installed.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  eventually,
  fixtureConfig,
  type HttpSvc,
  modernToolCall,
  post,
  startHttpSvc,
} from "./support/harness.ts";
import { freePort, NGINX, startNginx } from "./support/nginx.ts";

const GREETING = { tool: "get_fixture_greeting", arguments: { Name: "replica" } };

const skip = NGINX ? "" : " [skipped: no nginx binary; apt install nginx-light]";

interface Balancer extends AsyncDisposable {
  /** Base URL of the server block proxying to every replica. */
  url: string;
  /** Base URL of a server block proxying to the first replica only. */
  oneUrl: string;
  /**
   * Base URL of a server block hashing on the caller (session id, Authorization, address), as
   * docs/scaling-out.md advises for held calls.
   */
  callerUrl: string;
  /** Access log lines: upstream address, status, request and response session ids. */
  log(): { upstream: string; status: number; session: string; issued: string }[];
}

const SCALING_OUT = await Deno.readTextFile(new URL("../docs/scaling-out.md", import.meta.url));

/** The nginx block of docs/scaling-out.md that follows `<!-- recipe: name -->`, as written. */
function docBlock(name: string): string {
  const match = new RegExp(`<!-- recipe: ${name} -->\\s*\`\`\`nginx\\n([\\s\\S]*?)\`\`\``)
    .exec(SCALING_OUT);
  assert.ok(match, `docs/scaling-out.md has no nginx block after '<!-- recipe: ${name} -->'`);
  return match[1]!;
}

/** The doc's upstream hashing on the caller, with this run's replicas for its example servers. */
function callers(addresses: string[]): string {
  const block = docBlock("nginx-callers");
  const servers = addresses.map((a) => `    server ${a};`).join("\n");
  return block.replace(/( {4}server 10\.0\.0\.\d+:8080;\n)+/, `${servers}\n`);
}

/**
 * The doc's routing on the session id's prefix, as written but for the replicas' addresses, the
 * port, and the default: round robin over every replica, which the Stateless spread test needs
 * (the doc's default hashes on the caller, and every caller of a test shares one address).
 */
function sessions(replicas: { address: string; prefix: string }[], port: number): string {
  const block = docBlock("nginx-sessions");
  assert.match(block, /proxy_set_header Host \$http_host;/, "the doc forwards the client's Host");
  const routes = replicas.map((r) => `    ~^${r.prefix}\\. ${r.address};`).join("\n");
  return block
    .replace(/( {4}~\^r\d\\\. 10\.0\.0\.\d+:8080;\n)+/, `${routes}\n`)
    .replace("default svc_replicas;", "default replicas;")
    .replace("listen 80;", `listen 127.0.0.1:${port};`);
}

/** nginx in front of `replicas`: one block for all of them (routing on the session prefix), one for the first. */
async function startBalancer(replicas: { url: string; prefix: string }[]): Promise<Balancer> {
  const [all, one, caller] = [freePort(), freePort(), freePort()];
  const address = (url: string) => new URL(url).host;
  const nginx = await startNginx(
    `
  log_format routed '$upstream_addr $status "$http_mcp_session_id" "$upstream_http_mcp_session_id"';
  access_log {dir}/access.log routed;
  upstream replicas {
${replicas.map((r) => `    server ${address(r.url)} max_fails=1 fail_timeout=30s;`).join("\n")}
  }
  upstream first { server ${address(replicas[0]!.url)}; }
${callers(replicas.map((r) => address(r.url)))}
${sessions(replicas.map((r) => ({ address: address(r.url), prefix: r.prefix })), all)}
  server {
    listen 127.0.0.1:${one};
    location / {
      proxy_pass http://first;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
    }
  }
  server {
    listen 127.0.0.1:${caller};
    location / {
      proxy_pass http://svc_replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
    }
  }
`,
    `http://127.0.0.1:${all}/health`,
  );
  return {
    url: `http://127.0.0.1:${all}`,
    oneUrl: `http://127.0.0.1:${one}`,
    callerUrl: `http://127.0.0.1:${caller}`,
    log: () =>
      Deno.readTextFileSync(`${nginx.dir}/access.log`).trim().split("\n").filter(Boolean).map(
        (line) => {
          const [, upstream, status, session, issued] = /^(\S+) (\d+) "([^"]*)" "([^"]*)"$/.exec(
            line,
          )!;
          // nginx logs an empty variable as "-".
          const value = (text: string) => text === "-" ? "" : text;
          return {
            upstream: upstream!,
            status: Number(status),
            session: value(session!),
            issued: value(issued!),
          };
        },
      ),
    [Symbol.asyncDispose]: () => nginx[Symbol.asyncDispose](),
  };
}

/** A 2026-07-28 tools/call of a client declaring elicitation; the JSON-RPC answer. */
async function modernCall(
  url: string,
  name: string,
  more: Record<string, unknown>,
): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string } }> {
  return (await modernToolCall(url, name, more)).body as { result?: Record<string, unknown> };
}

/** Three replicas of svc with small pools, so that one replica's capacity is easy to reach. */
async function startReplicas(mcpServer: Record<string, unknown> = {}): Promise<HttpSvc[]> {
  return await Promise.all(["r1", "r2", "r3"].map((prefix) =>
    startHttpSvc({
      config: {
        ...fixtureConfig(),
        McpServer: {
          RunspacePool: {
            MinPoolSize: 2,
            MaxPoolSize: 2,
            EagerWarmCount: 2,
            StopTimeout: "00:00:02",
          },
          ...mcpServer,
          ...(mcpServer.HttpTransportMode === "Stateful" ? { SessionIdPrefix: prefix } : {}),
        },
      },
    })
  ));
}

/** Calls `start_sleep` for `ms` from `concurrency` clients until `seconds` pass; calls per second. */
async function throughput(url: string, concurrency: number, seconds: number, ms: number) {
  const end = Date.now() + seconds * 1000;
  let done = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) {
      const response = await post(`${url}/call`, {
        tool: "start_sleep_milliseconds",
        arguments: { Milliseconds: ms },
      });
      assert.equal(response.status, 200);
      done++;
    }
  }));
  return done / seconds;
}

Deno.test({
  name:
    `scale-out, Stateless: calls spread over three replicas, throughput rises, a killed replica loses only its own calls${skip}`,
  ignore: !NGINX,
  fn: async (t) => {
    const replicas = await startReplicas();
    try {
      await using nginx = await startBalancer(replicas.map((r) => ({ url: r.url, prefix: "" })));
      const upstreams = new Set(replicas.map((r) => new URL(r.url).host));

      await t.step("calls spread over all three replicas", async () => {
        for (let i = 0; i < 12; i++) {
          const response = await post(`${nginx.url}/call`, GREETING);
          assert.equal(response.status, 200);
        }
        const used = new Set(nginx.log().filter((l) => l.status === 200).map((l) => l.upstream));
        assert.deepEqual([...used].sort(), [...upstreams].sort());
      });

      await t.step("throughput rises with replicas (2 workers each, 200 ms calls)", async () => {
        const one = await throughput(nginx.oneUrl, 12, 3, 200);
        const three = await throughput(nginx.url, 12, 3, 200);
        assert.ok(
          three > 2 * one,
          `3 replicas ${three.toFixed(1)} calls/s, 1 replica ${one.toFixed(1)}`,
        );
      });

      await t.step(
        "a held call: another replica refuses its state; hashing on the caller finds it",
        async () => {
          const ask = (url: string, more: Record<string, unknown> = {}) =>
            modernCall(url, "test_input_required_result_elicitation", more);
          const answer = (state: unknown, name: string) => ({
            requestState: state,
            inputResponses: { user_name: { action: "accept", content: { name } } },
          });
          const held = await ask(replicas[0]!.url);
          const state = held.result?.["requestState"];
          assert.equal(held.result?.["resultType"], "input_required", JSON.stringify(held));
          const elsewhere = await ask(replicas[2]!.url, answer(state, "Bob"));
          assert.equal(elsewhere.error?.code, -32602, JSON.stringify(elsewhere));
          assert.match(elsewhere.error!.message, /^requestState was not accepted \(mac\)/);
          const home = await ask(replicas[0]!.url, answer(state, "Ann"));
          assert.match(JSON.stringify(home.result), /Hello, Ann!/);
          // Through nginx hashing on the caller, every retry reaches the replica holding its call.
          for (let i = 0; i < 3; i++) {
            const first = await ask(nginx.callerUrl);
            const done = await ask(
              nginx.callerUrl,
              answer(first.result?.["requestState"], `C${i}`),
            );
            assert.match(
              JSON.stringify(done.result),
              new RegExp(`Hello, C${i}!`),
              JSON.stringify(done),
            );
          }
        },
      );

      await t.step("a replica killed mid-call loses only the calls it had in flight", async () => {
        const before = nginx.log().length;
        const calls = Array.from({ length: 6 }, () =>
          post(`${nginx.url}/call`, {
            tool: "start_sleep_milliseconds",
            arguments: { Milliseconds: 1500 },
          }));
        const victim = replicas[1]!;
        assert.ok(
          await eventually(async () =>
            ((await (await fetch(`${victim.url}/health`)).json()) as { pool: { leased: number } })
              .pool.leased > 0
          ),
          "the replica to kill has calls in flight",
        );
        await victim.stop("SIGKILL");
        const statuses = (await Promise.all(calls)).map((r) => r.status);
        const lines = nginx.log().slice(before);
        const lost = lines.filter((l) => l.status !== 200);
        assert.ok(lost.length > 0, "the killed replica had calls in flight");
        assert.ok(
          lost.every((l) => l.upstream === new URL(victim.url).host),
          `only the killed replica's calls failed: ${JSON.stringify(lines)}`,
        );
        assert.equal(statuses.filter((s) => s === 200).length, 6 - lost.length);
        for (let i = 0; i < 9; i++) {
          const response = await post(`${nginx.url}/call`, GREETING);
          assert.equal(response.status, 200, "later calls go to the replicas left");
        }
      });
    } finally {
      for (const replica of replicas) await replica[Symbol.asyncDispose]();
    }
  },
});

Deno.test({
  name: `scale-out, Stateful: every request of a session reaches the replica that issued it${skip}`,
  ignore: !NGINX,
  fn: async () => {
    const replicas = await startReplicas({ HttpTransportMode: "Stateful" });
    try {
      await using nginx = await startBalancer(
        replicas.map((r, i) => ({ url: r.url, prefix: `r${i + 1}` })),
      );
      for (let i = 0; i < 6; i++) {
        const client = new Client({ name: `session-${i}`, version: "1" }, {
          versionNegotiation: { mode: "legacy" },
        });
        await client.connect(new StreamableHTTPClientTransport(new URL(`${nginx.url}/mcp`)));
        try {
          await client.listTools();
          for (let call = 0; call < 3; call++) {
            const result = await client.callTool({
              name: GREETING.tool,
              arguments: GREETING.arguments,
            });
            assert.equal(result.isError, undefined);
          }
        } finally {
          await client.close();
        }
      }
      const lines = nginx.log();
      assert.ok(
        lines.every((l) => l.status < 400),
        JSON.stringify(lines.filter((l) => l.status >= 400)),
      );
      const issuedBy = new Map(lines.filter((l) => l.issued).map((l) => [l.issued, l.upstream]));
      assert.equal(issuedBy.size, 6, "six sessions");
      assert.ok(new Set(issuedBy.values()).size >= 2, "sessions were issued by several replicas");
      for (const [session, replica] of issuedBy) {
        const served = new Set(lines.filter((l) => l.session === session).map((l) => l.upstream));
        assert.deepEqual([...served], [replica], `session ${session}`);
        const prefix = session.split(".")[0]!;
        const index = Number(prefix.slice(1)) - 1;
        assert.equal(new URL(replicas[index]!.url).host, replica, "the prefix names the replica");
      }
    } finally {
      for (const replica of replicas) await replica[Symbol.asyncDispose]();
    }
  },
});
