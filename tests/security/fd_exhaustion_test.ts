/**
 * svc never exits when it runs out of file descriptors (issue 28, finding 1). Under a limit of 256
 * open files, 400 idle TCP connections exhaust it: `Deno.serve`'s accept loop fails with EMFILE and
 * ends, which used to end svc with an unhandled rejection. svc now logs a warning, backs off and
 * serves again on the same port once the connections are gone.
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

Deno.test("svc survives running out of file descriptors and serves again on the same port", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
    wrapper: ["prlimit", "--nofile=256:256", "--"],
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const { hostname, port } = new URL(svc.url);
  const idle: Deno.Conn[] = [];
  try {
    // Connecting fails once svc has closed its listener; by then the limit has been reached.
    for (let i = 0; i < IDLE_CONNECTIONS; i++) {
      try {
        idle.push(await Deno.connect({ hostname, port: Number(port) }));
      } catch {
        break;
      }
    }
    await logged(svc.stderr, /stopped accepting connections \(.*Too many open files/);
    assert.ok(isAlive(svc.pid), `svc exited:\n${svc.stderr()}`);
  } finally {
    for (const conn of idle) conn.close();
  }
  // A new connection each time (fetch would reuse one the old listener accepted, which it still
  // serves). The back-off is at most 2 s between attempts; the bound leaves room for two busy cores.
  const freshHealth = async () => {
    try {
      const reply = await rawRequest(svc.url, { method: "GET", path: "/health", headers: {} });
      return reply.status === 200;
    } catch {
      return false;
    }
  };
  assert.ok(await eventually(freshHealth, 30_000), svc.stderr());
  assert.ok(isAlive(svc.pid));
  const called = await post(`${svc.url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "again" },
  });
  assert.equal(called.status, 200, JSON.stringify(called.body));
  assert.deepEqual(outputOf(called.body as CallResult), ["Hello, again!"]);
  await logged(svc.stderr, /serving again on port \d+ after/);
  assert.equal(svc.stderr().match(/stopped accepting connections/g)?.length, 1, svc.stderr());
});
