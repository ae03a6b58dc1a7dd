/**
 * OpenTelemetry traces and metrics. Deno exports them over OTLP when svc runs with
 * `OTEL_DENO=true` (endpoint, protocol and interval from the standard `OTEL_*` variables), and
 * adds a span for every HTTP request `Deno.serve` answers; without it the API below is a no-op.
 *
 * Instruments (attributes in brackets):
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
import { metrics, type ObservableResult, SpanStatusCode, trace } from "@opentelemetry/api";

const meter = metrics.getMeter("svc");
const tracer = trace.getTracer("svc");

const callDuration = meter.createHistogram("svc.tool.call.duration", {
  unit: "ms",
  description: "Duration of tool calls, from lookup to result.",
});

/** Instruments of the worker pool. */
export const poolTelemetry = {
  acquisitions: meter.createCounter("svc.pool.acquisitions", {
    description: "Worker leases asked for, by outcome.",
  }),
  acquisitionWait: meter.createHistogram("svc.pool.acquisition.wait", {
    unit: "ms",
    description: "Time a call waited for a warm worker.",
  }),
  resets: meter.createCounter("svc.pool.resets", {
    description: "Worker resets after a call, by outcome.",
  }),
  evictions: meter.createCounter("svc.pool.evictions", {
    description: "Workers removed from the pool, by reason.",
  }),
};

/**
 * Reports `counts()` (workers by state) as the `svc.pool.workers` gauge at each export, until the
 * returned function is called.
 */
export function observePoolWorkers(counts: () => Record<string, number>): () => void {
  const observe = (result: ObservableResult) => {
    for (const [state, count] of Object.entries(counts())) result.observe(count, { state });
  };
  workersGauge.addCallback(observe);
  return () => workersGauge.removeCallback(observe);
}

const workersGauge = meter.createObservableGauge("svc.pool.workers", {
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
      callDuration.record(performance.now() - started, {
        "mcp.tool.name": tool,
        "svc.outcome": described.outcome,
      });
    }
  });
}
