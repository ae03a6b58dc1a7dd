/**
 * Log messages to the client (MCP `notifications/message`, docs/clients.md): the level a client
 * asked for — its session's `logging/setLevel` (2025-11-25 and before) or a request's `_meta` level
 * (2026-07-28) — and a call's warning, information, verbose and debug records sent at the matching
 * level while it runs, rate-limited per call. Only the command's records reach the client: svc's own
 * log (lib/log.ts) never does.
 *
 * @module
 */
import {
  LOG_LEVEL_META_KEY,
  type LoggingLevel,
  type LoggingMessageNotificationParams,
  type Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { WorkerLog, WorkerLogLevel } from "./worker_protocol.ts";

/** MCP's levels, least severe first (RFC 5424's order). */
const LEVELS: readonly LoggingLevel[] = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
];

/** The level each PowerShell stream is sent at. */
const STREAM_LEVELS: Record<WorkerLog["records"][number]["stream"], LoggingLevel> = {
  warning: "warning",
  information: "info",
  verbose: "debug",
  debug: "debug",
};

/** Log messages a call sends as they come before the rate applies. */
export const LOG_BURST = 100;
/** Log messages a second a call sends once its first {@linkcode LOG_BURST} are spent. */
export const LOG_RATE = 10;

function severity(level: LoggingLevel): number {
  return LEVELS.indexOf(level);
}

function isLoggingLevel(value: unknown): value is LoggingLevel {
  return typeof value === "string" && (LEVELS as readonly string[]).includes(value);
}

/**
 * Serves `logging/setLevel` on `server` (one server per stdio connection, Stateful session or legacy
 * SSE connection; Stateless mode builds one per request, which forgets the level with the request)
 * and returns what the last one set. The SDK's own handler is replaced: its `ctx.mcpReq.log` sends
 * every message while no level is set, where svc sends none.
 */
export function sessionLogLevel(server: Server): () => LoggingLevel | undefined {
  let level: LoggingLevel | undefined;
  server.setRequestHandler("logging/setLevel", (request) => {
    level = request.params.level;
    return {};
  });
  return () => level;
}

/**
 * The level a request asks for in its `_meta` (`io.modelcontextprotocol/logLevel`, 2026-07-28),
 * else `session`'s (undefined: the client asked for none).
 */
export function requestLogLevel(
  ctx: ServerContext,
  session: () => LoggingLevel | undefined,
): LoggingLevel | undefined {
  const asked = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[LOG_LEVEL_META_KEY];
  return isLoggingLevel(asked) ? asked : session();
}

/**
 * One call's log messages: its records at the client's level and above (warning → `warning`,
 * information → `info`, verbose and debug → `debug`; logger `<tool>/<stream>`, data the record's
 * text). A call sends {@linkcode LOG_BURST} at once, then {@linkcode LOG_RATE} a second; the rest
 * are counted, and {@linkcode CallLog.finish} says how many in one last message.
 */
export class CallLog {
  /** The lowest record the worker sends for the client's level. */
  readonly level: WorkerLogLevel;
  readonly #tool: string;
  readonly #threshold: number;
  readonly #send: (params: LoggingMessageNotificationParams) => Promise<void>;
  readonly #now: () => number;
  #tokens = LOG_BURST;
  #refilled: number;
  #dropped = 0;

  /**
   * The log of a call of `tool` for a client that asked for `level` (undefined: none), or null when
   * no record can reach that level (none is above warning). `now` is the clock of the rate limit
   * in ms. @default `performance.now`
   */
  static for(
    tool: string,
    level: LoggingLevel | undefined,
    send: (params: LoggingMessageNotificationParams) => Promise<void>,
    now: () => number = () => performance.now(),
  ): CallLog | null {
    if (level === undefined || severity(level) > severity("warning")) return null;
    return new CallLog(tool, level, send, now);
  }

  private constructor(
    tool: string,
    level: LoggingLevel,
    send: (params: LoggingMessageNotificationParams) => Promise<void>,
    now: () => number,
  ) {
    this.level = level === "debug" ? "debug" : level === "info" ? "info" : "warning";
    this.#tool = tool;
    this.#threshold = severity(level);
    this.#send = send;
    this.#now = now;
    this.#refilled = now();
  }

  /** Sends the records of one `log` frame that the level and the rate allow. */
  readonly onLog = (log: WorkerLog): void => {
    this.#dropped += log.dropped ?? 0;
    for (const record of log.records) {
      const level = STREAM_LEVELS[record.stream];
      if (level === undefined || severity(level) < this.#threshold) continue;
      if (!this.#take()) {
        this.#dropped++;
        continue;
      }
      const params = { level, logger: `${this.#tool}/${record.stream}`, data: record.message };
      this.#send(params).catch(() => {});
    }
  };

  /** Says how many messages the rate left out, if any; call once the call has ended. */
  async finish(): Promise<void> {
    if (this.#dropped === 0) return;
    const count = this.#dropped;
    this.#dropped = 0;
    await this.#send({
      level: "warning",
      logger: `${this.#tool}/svc`,
      data:
        `svc left out ${count} of this call's log messages: a call sends ${LOG_BURST} at once, ` +
        `then ${LOG_RATE} a second. The tool result still carries its records.`,
    }).catch(() => {});
  }

  #take(): boolean {
    const now = this.#now();
    this.#tokens = Math.min(LOG_BURST, this.#tokens + (now - this.#refilled) * LOG_RATE / 1000);
    this.#refilled = now;
    if (this.#tokens < 1) return false;
    this.#tokens--;
    return true;
  }
}
