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
function redact(value: unknown, depth = 0): unknown {
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
  const message = renderMessage(record);
  const props = Object.entries(redact(record.properties) as Record<string, unknown>)
    .filter(([k]) => !record.rawMessage.includes(`{${k}}`))
    .map(([k, v]) => ` ${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join("");
  // CR/LF inside a value must not forge a second log line.
  const line = `${time} ${record.level.toUpperCase().padEnd(7)} ${
    record.category.slice(1).join(".")
  }: ${message}${props}`;
  return line.replace(/[\r\n]+/g, " ") + "\n";
}

/**
 * A message with its values in place: strings as they are (no quotes), other values as JSON, and
 * the value of a placeholder whose name looks secret (`{Token}`) redacted, as in the properties.
 */
function renderMessage(record: LogRecord): string {
  const names = typeof record.rawMessage === "string"
    ? [...record.rawMessage.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)
    : [];
  return record.message.map((part, i) => {
    // Odd parts are the values, in the order of the placeholders.
    if (i % 2 === 0) return part as string;
    if (SECRET_KEY.test(names[(i - 1) / 2] ?? "")) return "[redacted]";
    return typeof part === "string" ? part : JSON.stringify(redact(part));
  }).join("");
}

function jsonFormatter(record: LogRecord): string {
  const line = {
    "@timestamp": new Date(record.timestamp).toISOString(),
    level: record.level === "warning" ? "WARN" : record.level.toUpperCase(),
    message: renderMessage(record),
    logger: record.category.join("."),
    properties: redact(record.properties),
  };
  return `${JSON.stringify(line)}\n`;
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
  routeConsole();
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

const CONSOLE_LEVELS = {
  debug: "debug",
  log: "info",
  info: "info",
  warn: "warning",
  error: "error",
} as const;

/**
 * Sends what libraries print with `console.*` through the svc logger (category `svc.console`), so
 * every stderr line has the configured format and nothing reaches stdout, which carries the
 * protocol in stdio mode. The MCP SDK, for one, warns with `console.warn` on every HTTP start.
 */
function routeConsole(): void {
  const log = getLogger(["svc", "console"]);
  for (const [method, level] of Object.entries(CONSOLE_LEVELS)) {
    (console as unknown as Record<string, (...args: unknown[]) => void>)[method] = (...args) => {
      const text = args.map((a) => typeof a === "string" ? a : Deno.inspect(a)).join(" ");
      // The SDK prints this on every HTTP start; svc picks JSON responses on purpose (when the
      // client accepts only JSON), so it is a fact for debugging, not a warning for the user.
      const expected = text.startsWith("responseMode: 'json' drops mid-call notifications");
      log[expected ? "debug" : level]("{Text}", { Text: text });
    };
  }
}

/** Returns the logger of one svc module, e.g. `logger("pool")` for category `svc.pool`. */
export function logger(name: string): Logger {
  return getLogger(["svc", name]);
}

/** Flushes and closes the log sinks; call before `Deno.exit` so the last lines are not lost. */
export async function flushLogging(): Promise<void> {
  await dispose();
}
