/** Health: the pool's figures, 200 or 503 by liveness or readiness, GET only. */
import assert from "node:assert/strict";
import { HttpError } from "../lib/http_errors.ts";
import { health, isHealthCheck, type PoolHealth } from "../lib/http_health.ts";
import { type PoolStats, type PoolStatus, poolStatus } from "../lib/pool_contract.ts";
import { requestTo } from "./support/http_front.ts";

function poolOf(status: PoolStatus, extra: Partial<PoolStats> = {}): PoolHealth {
  const stats: PoolStats = {
    warm: 1,
    leased: 0,
    resetting: 0,
    creating: 0,
    total: 1,
    min: 2,
    max: 4,
    draining: false,
    startFailing: false,
    ...extra,
  };
  return { stats: () => stats, status: () => status };
}

Deno.test("isHealthCheck() knows /health and /health/ready, exactly", () => {
  const at = (path: string) => new URL(`http://127.0.0.1${path}`);
  assert.ok(isHealthCheck(at("/health")));
  assert.ok(isHealthCheck(at("/health/ready?x=1")));
  assert.ok(!isHealthCheck(at("/health/ready//")));
  assert.ok(!isHealthCheck(at("/health/")));
  assert.ok(!isHealthCheck(at("/healthz")));
  assert.ok(!isHealthCheck(at("/health/live")));
});

Deno.test("health() is 503 only when Unhealthy; readiness is 200 only when Healthy", async () => {
  const cases: [string, PoolStatus, number][] = [
    ["/health", "Healthy", 200],
    ["/health", "Degraded", 200],
    ["/health", "Unhealthy", 503],
    ["/health/ready", "Healthy", 200],
    ["/health/ready", "Degraded", 503],
  ];
  for (const [path, status, expected] of cases) {
    const response = health(requestTo(path), poolOf(status));
    assert.equal(response.status, expected, `${path} ${status}`);
    assert.equal(response.headers.get("cache-control"), "no-store");
    const body = await response.json();
    assert.equal(body.status, status);
    assert.equal(body.pool.min, 2);
    assert.equal(
      body.checks[0].description,
      "Worker pool: 1 warm, 0 leased, 0 creating, minimum 2",
    );
  }
  const draining = await health(requestTo("/health"), poolOf("Unhealthy", { draining: true }))
    .json();
  assert.equal(draining.checks[0].description, "Worker pool is draining");
});

Deno.test("health() refuses any method but GET with 405 and Allow: GET", () => {
  assert.throws(
    () => health(requestTo("/health", { method: "POST", body: "" }), poolOf("Healthy")),
    (error: unknown) =>
      error instanceof HttpError && error.status === 405 && error.headers.allow === "GET",
  );
});

Deno.test("liveness stays 200 while the pool only replenishes; readiness keeps the minimum", async () => {
  const at = (stats: Partial<PoolStats>): PoolHealth => {
    const all: PoolStats = {
      warm: 0,
      leased: 0,
      resetting: 0,
      creating: 0,
      total: 0,
      min: 2,
      max: 16,
      draining: false,
      startFailing: false,
      ...stats,
    };
    return { stats: () => all, status: poolStatus };
  };
  // A process retired for MaxWorkerMemoryMB: its worker still resetting, the other gone with it,
  // the replacement not started yet. svc itself is fine and recovering.
  const recovering = at({ resetting: 1, total: 1 });
  const live = health(requestTo("/health"), recovering);
  assert.equal(live.status, 200);
  assert.equal((await live.json()).status, "Degraded");
  assert.equal(health(requestTo("/health/ready"), recovering).status, 503);
  // Nothing starting and the last start failed: the pool cannot reach its minimum by itself.
  const stuck = at({ startFailing: true });
  assert.equal(health(requestTo("/health"), stuck).status, 503);
  assert.equal(poolStatus({ ...stuck.stats(), creating: 1 }), "Degraded", "a start is under way");
  assert.equal(poolStatus({ ...stuck.stats(), warm: 2, total: 2 }), "Healthy");
});
