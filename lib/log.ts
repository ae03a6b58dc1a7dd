/**
 * Logging for svc: every line goes to stderr, never stdout, because stdout carries the MCP protocol in
 * stdio mode. Wraps `@logtape/logtape` with a text or JSON-lines formatter and a level taken from
 * configuration. Secret redaction of structured fields happens here, before any sink sees them.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  configure,
  dispose,
  getJsonLinesFormatter,
  getLogger,
  getStreamSink,
  type Logger,
  type LogLevel,
  type LogRecord,
  reset,
} from "@logtape/logtape";

export type { Logger, LogLevel };

/** Output format of log lines. `text` is one readable line per event; `json` is JSON lines. */
export type LogFormat = "text" | "json";

/** Options of {@linkcode configureLogging}. */
export interface LoggingOptions {
  /** Lowest level written. @default "info" (config `Logging:LogLevel:Default`, env `SVC_LOG_LEVEL`) */
  level?: LogLevel;
  /** Line format. @default "text" (flag `--log-format`) */
  format?: LogFormat;
}

const SECRET_KEY = /pass(word)?|secret|token|api[-_]?key|credential/i;

/** Replaces values of secret-looking fields with a fixed marker, recursively. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET_KEY.test(k) ? "[redacted]" : redact(v, depth + 1);
  }
  return out;
}

function textFormatter(record: LogRecord): string {
  const time = new Date(record.timestamp).toISOString();
  const message = record.message.map((part) =>
    typeof part === "string" ? part : JSON.stringify(redact(part))
  ).join("");
  const props = Object.entries(record.properties)
    .filter(([k]) => !record.rawMessage.includes(`{${k}}`))
    .map(([k, v]) => ` ${k}=${typeof v === "string" ? v : JSON.stringify(redact(v))}`)
    .join("");
  // CR/LF inside a value must not forge a second log line.
  const line = `${time} ${record.level.toUpperCase().padEnd(7)} ${
    record.category.slice(1).join(".")
  }: ${message}${props}`;
  return line.replace(/[\r\n]+/g, " ") + "\n";
}

const jsonLines = getJsonLinesFormatter();

function jsonFormatter(record: LogRecord): string {
  return jsonLines({
    ...record,
    properties: redact(record.properties) as Record<string, unknown>,
  });
}

function stderrStream(): WritableStream<Uint8Array> {
  return new WritableStream({
    write(chunk) {
      let offset = 0;
      while (offset < chunk.length) offset += Deno.stderr.writeSync(chunk.subarray(offset));
    },
  });
}

/** Configures the process-wide logger; may be called again to change level or format. */
export async function configureLogging(options: LoggingOptions = {}): Promise<void> {
  const { level = "info", format = "text" } = options;
  await reset();
  await configure({
    reset: true,
    // Lets the HTTP transport attach a correlation id to every line logged while serving a request.
    contextLocalStorage: new AsyncLocalStorage(),
    sinks: {
      stderr: getStreamSink(stderrStream(), {
        formatter: format === "json" ? jsonFormatter : textFormatter,
      }),
    },
    loggers: [
      { category: ["svc"], lowestLevel: level, sinks: ["stderr"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["stderr"] },
    ],
  });
}

/** Returns the logger of one svc module, e.g. `logger("pool")` for category `svc.pool`. */
export function logger(name: string): Logger {
  return getLogger(["svc", name]);
}

/** Flushes and closes the log sinks; call before `Deno.exit` so the last lines are not lost. */
export async function flushLogging(): Promise<void> {
  await dispose();
}
