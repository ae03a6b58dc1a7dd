/**
 * svc never exits when clients hold many connections, and keeps answering health checks (issue 28,
 * finding 1). Under a limit of 256 open files, 400 idle TCP connections used to exhaust svc's file
 * descriptors and end it. Now `MaxConnections` (derived from that limit: 192) stops them short of
 * EMFILE, and a connection past it may still ask for `/health`; with the cap set above the limit,
 * EMFILE itself is survived: the accept loop backs off and accepts again once connections close.
 */
import assert from "node:assert/strict";
import { rawRequest } from "./raw_http.ts";
import {
  answersOk,
  type CallResult,
  eventually,
  fixtureConfig,
  isAlive,
  logged,
  outputOf,
  post,
  startHttpSvc,
} from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };
const IDLE_CONNECTIONS = 400;

/** Opens up to `count` idle connections to `url`; stops at the first that fails. */
async function holdConnections(url: string, count: number): Promise<Deno.Conn[]> {
  const { hostname, port } = new URL(url);
  const idle: Deno.Conn[] = [];
  for (let i = 0; i < count; i++) {
    try {
      idle.push(await Deno.connect({ hostname, port: Number(port) }));
    } catch {
      break;
    }
  }
  return idle;
}

/** A request on a new connection each time (fetch would reuse one svc accepted before). */
async function fresh(url: string, path: string): Promise<number> {
  try {
    return (await rawRequest(url, { method: "GET", path, headers: { Host: new URL(url).host } }))
      .status;
  } catch {
    return 0;
  }
}

async function callsAgain(url: string): Promise<void> {
  const called = await post(`${url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "again" },
  });
  assert.equal(called.status, 200, JSON.stringify(called.body));
  assert.deepEqual(outputOf(called.body as CallResult), ["Hello, again!"]);
}

Deno.test("under a low open-files limit, idle connections stop at MaxConnections and /health still answers", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
    wrapper: ["prlimit", "--nofile=256:256", "--"],
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const idle = await holdConnections(svc.url, IDLE_CONNECTIONS);
  try {
    await logged(
      svc.stderr,
      /192 connections are open, as many as McpServer:MaxConnections allows/,
    );
    assert.ok(isAlive(svc.pid), `svc exited:\n${svc.stderr()}`);
    // Connections past the cap that sent nothing are closed within a second, so a probe finds room.
    assert.ok(await eventually(async () => await fresh(svc.url, "/health") === 200, 20_000));
    assert.equal(await fresh(svc.url, "/tools"), 503);
    assert.doesNotMatch(svc.stderr(), /Too many open files/);
  } finally {
    for (const conn of idle) conn.close();
  }
  assert.ok(await eventually(async () => await fresh(svc.url, "/tools") === 200, 20_000));
  await callsAgain(svc.url);
});

Deno.test("svc survives running out of file descriptors and accepts again once connections close", async () => {
  await using svc = await startHttpSvc({
    // A cap above the limit lets the connections reach EMFILE.
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL, MaxConnections: 10_000 } },
    wrapper: ["prlimit", "--nofile=256:256", "--"],
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const idle = await holdConnections(svc.url, IDLE_CONNECTIONS);
  try {
    await logged(svc.stderr, /cannot accept connections \(.*Too many open files/);
    assert.ok(isAlive(svc.pid), `svc exited:\n${svc.stderr()}`);
  } finally {
    for (const conn of idle) conn.close();
  }
  // The back-off is at most 2 s between attempts; the bound leaves room for two busy cores.
  assert.ok(await eventually(async () => await fresh(svc.url, "/health") === 200, 30_000));
  assert.ok(isAlive(svc.pid));
  await callsAgain(svc.url);
  await logged(svc.stderr, /accepting connections again after/);
  assert.equal(svc.stderr().match(/cannot accept connections/g)?.length, 1, svc.stderr());
});
