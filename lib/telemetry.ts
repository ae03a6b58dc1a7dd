/**
 * OpenTelemetry traces and metrics. Deno exports them over OTLP when svc runs with
 * `OTEL_DENO=true` (endpoint, protocol and interval from the standard `OTEL_*` variables); without
 * it the OpenTelemetry API is not loaded and everything below does nothing.
 *
 * Instruments (attributes in brackets):
 * - an HTTP server span per request [`http.request.method`, `url.path`,
 *   `http.response.status_code`], made here because svc serves HTTP itself (`lib/http_listen.ts`),
 *   not through `Deno.serve`, which Deno would trace on its own;
 * - `svc.tool.call` span per tool call [`mcp.tool.name`, `svc.command`, `svc.outcome`];
 * - `svc.tool.call.duration` histogram, ms [`mcp.tool.name`, `svc.outcome`];
 * - `svc.pool.workers` gauge [`state`: creating, warm, leased, resetting];
 * - `svc.pool.acquisitions` counter [`outcome`: ok, exhausted, draining, cancelled];
 * - `svc.pool.acquisition.wait` histogram, ms;
 * - `svc.pool.resets` counter [`outcome`: ok, failed];
 * - `svc.pool.evictions` counter [`reason`: idle, died, reset_failure, retired, shutdown, …].
 *
 * @module
 */
import type { ObservableResult } from "@opentelemetry/api";

/** True unless `OTEL_DENO` is unset, empty, "false" or "0": only then can anything be exported. */
function otelRequested(): boolean {
  try {
    const value = Deno.env.get("OTEL_DENO")?.trim().toLowerCase() ?? "";
    return value !== "" && value !== "false" && value !== "0";
  } catch {
    return false; // no permission to read the environment: Deno cannot have been asked either
  }
}

// Without OTEL_DENO the API would only hand out no-op instruments; not importing it at all keeps
// its module load off every start (svc's stdio start is measured against the bare SDK) and the
// no-op span off every call.
const api = otelRequested() ? await import("@opentelemetry/api") : null;
const meter = api?.metrics.getMeter("svc");
const tracer = api?.trace.getTracer("svc");

/** A counter as svc uses it; a no-op when telemetry is off. */
interface Counter {
  add(value: number, attributes?: Record<string, string>): void;
}

/** A histogram as svc uses it; a no-op when telemetry is off. */
interface Histogram {
  record(value: number, attributes?: Record<string, string>): void;
}

const NONE: Counter & Histogram = { add() {}, record() {} };

const callDuration = meter?.createHistogram("svc.tool.call.duration", {
  unit: "ms",
  description: "Duration of tool calls, from lookup to result.",
});

/** Instruments of the worker pool. */
export const poolTelemetry: {
  acquisitions: Counter;
  acquisitionWait: Histogram;
  resets: Counter;
  evictions: Counter;
} = {
  acquisitions: meter?.createCounter("svc.pool.acquisitions", {
    description: "Worker leases asked for, by outcome.",
  }) ?? NONE,
  acquisitionWait: meter?.createHistogram("svc.pool.acquisition.wait", {
    unit: "ms",
    description: "Time a call waited for a warm worker.",
  }) ?? NONE,
  resets: meter?.createCounter("svc.pool.resets", {
    description: "Worker resets after a call, by outcome.",
  }) ?? NONE,
  evictions: meter?.createCounter("svc.pool.evictions", {
    description: "Workers removed from the pool, by reason.",
  }) ?? NONE,
};

/** The worker states the `svc.pool.workers` gauge reports, one series each. */
const WORKER_STATES = ["creating", "warm", "leased", "resetting"] as const;

/** Workers by state (the pool's stats carry more; only these are reported). */
type WorkerCounts = Record<typeof WORKER_STATES[number], number>;

/**
 * Reports `counts()` (workers by state) as the `svc.pool.workers` gauge at each export, until the
 * returned function is called.
 */
export function observePoolWorkers(counts: () => WorkerCounts): () => void {
  if (!workersGauge) return () => {};
  const observe = (result: ObservableResult) => {
    const now = counts();
    for (const state of WORKER_STATES) result.observe(now[state], { state });
  };
  workersGauge.addCallback(observe);
  return () => workersGauge.removeCallback(observe);
}

const workersGauge = meter?.createObservableGauge("svc.pool.workers", {
  description: "Workers in the pool, by state.",
});

/** How a tool call ended, for its span and duration. */
export interface CallDescription {
  /** `ok`, `error`, `invalid-arguments`, `unknown-tool`, `unavailable`. */
  outcome: string;
  /** The tool's name; null for an unknown one (client input, so not a metric attribute). */
  tool: string | null;
  /** The PowerShell command, when the tool is known. */
  command: string | null;
}

/** Runs one tool call inside an `svc.tool.call` span and records its duration. */
export async function tracedCall<T>(
  call: () => Promise<T>,
  describe: (value: T) => CallDescription,
): Promise<T> {
  if (!api || !tracer) return await call();
  const { SpanStatusCode } = api;
  const started = performance.now();
  return await tracer.startActiveSpan("svc.tool.call", async (span) => {
    let described: CallDescription = { outcome: "failed", tool: null, command: null };
    try {
      const value = await call();
      described = describe(value);
      return value;
    } finally {
      const tool = described.tool ?? "(unknown)";
      span.setAttribute("mcp.tool.name", tool);
      if (described.command) span.setAttribute("svc.command", described.command);
      span.setAttribute("svc.outcome", described.outcome);
      if (described.outcome !== "ok") {
        span.setStatus({ code: SpanStatusCode.ERROR, message: described.outcome });
      }
      span.end();
      callDuration?.record(performance.now() - started, {
        "mcp.tool.name": tool,
        "svc.outcome": described.outcome,
      });
    }
  });
}

/**
 * `handler` with an HTTP server span around each request, the tool call spans nested in it; the
 * handler itself when telemetry is off.
 */
export function tracedHttp(
  handler: (req: Request) => Response | Promise<Response>,
): (req: Request) => Response | Promise<Response> {
  if (!api || !tracer) return handler;
  const { SpanKind, SpanStatusCode } = api;
  return (req) => {
    const path = new URL(req.url).pathname;
    return tracer.startActiveSpan(
      `${req.method} ${path}`,
      {
        kind: SpanKind.SERVER,
        attributes: { "http.request.method": req.method, "url.path": path },
      },
      async (span) => {
        try {
          const response = await handler(req);
          span.setAttribute("http.response.status_code", response.status);
          if (response.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          return response;
        } catch (error) {
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  };
}
