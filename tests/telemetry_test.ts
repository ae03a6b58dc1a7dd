/**
 * OpenTelemetry (issue 14): with `OTEL_DENO=true`, svc over HTTP exports spans for HTTP requests
 * and tool calls and the pool's metrics to an OTLP receiver on loopback (OTLP/HTTP JSON), started
 * here.
 */
import assert from "node:assert/strict";
import { eventually, fixtureConfig, post, startHttpSvc } from "./support/harness.ts";

interface Received {
  spans: { name: string; attributes: Record<string, unknown>; status?: { code?: number } }[];
  metrics: Map<string, Record<string, unknown>[]>;
}

type KeyValue = { key: string; value: Record<string, unknown> };
const attributes = (list: KeyValue[] = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, Object.values(value)[0]]));

/** An OTLP/HTTP JSON receiver that keeps every span and every metric data point. */
function startReceiver(): { url: string; received: Received } & AsyncDisposable {
  const received: Received = { spans: [], metrics: new Map() };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json();
    const path = new URL(req.url).pathname;
    if (path === "/v1/traces") {
      for (const resource of body.resourceSpans ?? []) {
        for (const scope of resource.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            received.spans.push({
              name: span.name,
              attributes: attributes(span.attributes),
              status: span.status,
            });
          }
        }
      }
    } else if (path === "/v1/metrics") {
      for (const resource of body.resourceMetrics ?? []) {
        for (const scope of resource.scopeMetrics ?? []) {
          for (const metric of scope.metrics ?? []) {
            const data = metric.sum ?? metric.gauge ?? metric.histogram ?? {};
            const points = (data.dataPoints ?? []).map((p: { attributes?: KeyValue[] }) => ({
              ...p,
              attributes: attributes(p.attributes),
            }));
            received.metrics.set(metric.name, [
              ...(received.metrics.get(metric.name) ?? []),
              ...points,
            ]);
          }
        }
      }
    }
    return Response.json({});
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    received,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

Deno.test("OTEL_DENO=true exports spans for HTTP requests and tool calls, and the pool's metrics", async () => {
  await using receiver = startReceiver();
  await using svc = await startHttpSvc({
    config: fixtureConfig(),
    env: {
      OTEL_DENO: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_METRIC_EXPORT_INTERVAL: "300",
      // Spans are batched for 5 s by default: the test waited that long for them (10 s -> 2 s).
      OTEL_BSP_SCHEDULE_DELAY: "200",
      OTEL_SERVICE_NAME: "svc-test",
    },
  });
  const greeting = await post(`${svc.url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "otel" },
  });
  assert.equal(greeting.status, 200);
  const refused = await post(`${svc.url}/call`, { tool: "get_fixture_greeting", arguments: {} });
  assert.equal(refused.status, 400);
  // A tool that ends its worker: the pool evicts it.
  await post(`${svc.url}/call`, { tool: "invoke_fixture_exit", arguments: { Code: 3 } });
  const { received } = receiver;
  const arrived = await eventually(() => {
    const calls = received.spans.filter((s) => s.name === "svc.tool.call");
    return calls.length >= 3 && received.metrics.has("svc.pool.evictions");
  }, 15_000);
  assert.ok(arrived, `spans ${received.spans.length}, metrics ${[...received.metrics.keys()]}`);
  const calls = received.spans.filter((s) => s.name === "svc.tool.call");
  const ok = calls.find((s) => s.attributes["svc.outcome"] === "ok")!;
  assert.deepEqual(ok.attributes, {
    "mcp.tool.name": "get_fixture_greeting",
    "svc.command": "Get-FixtureGreeting",
    "svc.outcome": "ok",
  });
  const invalid = calls.find((s) => s.attributes["svc.outcome"] === "invalid-arguments")!;
  assert.equal(invalid.status?.code, 2, "a refused call is an error span");
  assert.ok(
    received.spans.some((s) => s.attributes["http.request.method"] === "POST"),
    `an HTTP server span: ${JSON.stringify(received.spans.map((s) => s.name))}`,
  );
  const states = (received.metrics.get("svc.pool.workers") ?? []).map((p) =>
    (p.attributes as Record<string, unknown>).state
  );
  for (const state of ["creating", "warm", "leased", "resetting"]) {
    assert.ok(states.includes(state), `svc.pool.workers has state ${state}`);
  }
  for (
    const name of [
      "svc.pool.acquisitions",
      "svc.pool.acquisition.wait",
      "svc.pool.resets",
      "svc.tool.call.duration",
    ]
  ) {
    assert.ok(received.metrics.has(name), `${name} in ${[...received.metrics.keys()]}`);
  }
  const reasons = (received.metrics.get("svc.pool.evictions") ?? []).map((p) =>
    (p.attributes as Record<string, unknown>).reason
  );
  assert.ok(reasons.includes("died"), `eviction reasons: ${reasons}`);
  const durations = received.metrics.get("svc.tool.call.duration")!.map((p) =>
    p.attributes as Record<string, unknown>
  );
  assert.ok(
    durations.some((a) =>
      a["mcp.tool.name"] === "get_fixture_greeting" && a["svc.outcome"] === "ok"
    ),
  );
});
