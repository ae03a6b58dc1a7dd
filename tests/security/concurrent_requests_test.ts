/**
 * At most `McpServer:MaxConcurrentRequests` HTTP requests are handled at once: past the cap a
 * request gets 503 with `Retry-After` naming the setting, while `/health` and `/health/ready` keep
 * answering; once the slow calls end, requests are admitted again.
 */
import assert from "node:assert/strict";
import { errorOf, eventually, fixtureConfig, post, startHttpSvc } from "../support/harness.ts";

const POOL = { MinPoolSize: 2, EagerWarmCount: 2, StopTimeout: "00:00:02" };

Deno.test("past McpServer:MaxConcurrentRequests a request gets 503 with Retry-After; health checks never do", async () => {
  const config = {
    ...fixtureConfig(),
    McpServer: { RunspacePool: POOL, MaxConcurrentRequests: 2 },
  };
  await using svc = await startHttpSvc({ config });
  assert.ok(await eventually(async () => (await fetch(`${svc.url}/health/ready`)).ok, 60_000));
  // The slow calls hold their workers until the test has seen what it needs, however busy the cores.
  const scratch = await Deno.makeTempDir({ prefix: "svc-concurrent-" });
  const release = `${scratch}/release`;
  const SLOW_CALL = { tool: "wait_fixture_file", arguments: { Path: release } };
  const slow = [post(`${svc.url}/call`, SLOW_CALL), post(`${svc.url}/call`, SLOW_CALL)];
  // Both slow calls hold a worker before any other request is sent: a probe sent sooner could take
  // the second slow call's place and have it refused instead (health checks are never counted).
  const leased = async () =>
    ((await (await fetch(`${svc.url}/health`)).json()) as { pool: { leased: number } }).pool
      .leased === 2;
  assert.ok(
    await eventually(leased, 30_000),
    `the slow calls never ran together:\n${svc.stderr()}`,
  );
  // A cheap request is refused once both slow calls are in flight.
  let refused: Response | null = null;
  assert.ok(
    await eventually(async () => {
      const response = await fetch(`${svc.url}/tools`);
      if (response.status === 503) {
        refused = response;
        return true;
      }
      await response.body?.cancel();
      return false;
    }, 30_000),
    `no request was refused:\n${svc.stderr()}`,
  );
  const response = refused! as Response;
  assert.equal(response.headers.get("retry-after"), "1");
  assert.match(
    errorOf(await response.json()).message,
    /at most 2 \(McpServer:MaxConcurrentRequests\)/,
  );
  const refusedCall = await post(`${svc.url}/call`, SLOW_CALL);
  assert.equal(refusedCall.status, 503);
  for (const path of ["/health", "/health/ready"]) {
    const health = await fetch(`${svc.url}${path}`);
    await health.body?.cancel();
    assert.equal(health.status, 200, `${path} while at the cap`);
  }
  await Deno.writeTextFile(release, "");
  for (const call of await Promise.all(slow)) assert.equal(call.status, 200);
  await Deno.remove(scratch, { recursive: true });
  const again = await fetch(`${svc.url}/tools`);
  await again.body?.cancel();
  assert.equal(again.status, 200);
});
