/**
 * The HTTP front's resource limits (`McpServer:Max…` and the `…Timeout` settings): how many
 * connections and event streams may be open, how many requests are handled at once, how long a
 * client may take to send a head or a body, to stay idle or to read, and how far an event stream's
 * client may fall behind.
 *
 * @module
 */
import type { Reader } from "./config_reader.ts";

/** Bounds on what clients may hold in svc; see docs/security.md, "Resource limits". */
export interface HttpLimits {
  /** Most event streams one caller may hold open. @default 16 (`McpServer:MaxStreamsPerCaller`) */
  maxStreamsPerCaller: number;
  /** Most event streams open in all. @default 512 (`McpServer:MaxStreams`) */
  maxStreams: number;
  /**
   * Most HTTP requests handled at once (`/health` and `/health/ready` are not counted); the next
   * gets 503 with `Retry-After`. @default 1024 (`McpServer:MaxConcurrentRequests`)
   */
  maxConcurrentRequests: number;
  /**
   * Time for a request body to arrive in full, in ms; a slower one gets 408 and is dropped.
   * @default 30000 (`McpServer:BodyReadTimeout`)
   */
  bodyReadTimeoutMs: number;
  /**
   * Bytes of request bodies all requests may hold at once while they arrive; a body that does not
   * fit gets 503. @default 67108864 (`McpServer:MaxBufferedBodyBytes`)
   */
  maxBufferedBodyBytes: number;
  /**
   * Most connections open at once; past it a connection may only ask for `/health` (a few at a
   * time) and others are closed. @default from the open-files limit: that limit less a quarter
   * (at most 256) kept for workers and files, at most 4096 (`McpServer:MaxConnections`)
   */
  maxConnections: number;
  /**
   * Time for a request's head (request line and headers) to arrive, in ms; a slower one gets 408
   * and its connection is closed. @default 30000 (`McpServer:HeaderReadTimeout`)
   */
  headerReadTimeoutMs: number;
  /**
   * Time an idle connection is kept open for a next request, in ms. Keep it above a load
   * balancer's idle timeout (60 s on AWS ALB). @default 65000 (`McpServer:KeepAliveTimeout`)
   */
  keepAliveTimeoutMs: number;
  /**
   * Time a response write may make no progress (the client reads nothing) before the connection is
   * closed, in ms. @default 30000 (`McpServer:SendTimeout`)
   */
  sendTimeoutMs: number;
  /**
   * Most bytes of an event stream waiting for a client that reads slower than svc writes; past it
   * the stream and its connection are closed. @default 8388608 (`McpServer:MaxStreamQueueBytes`)
   */
  maxStreamQueueBytes: number;
}

/** Reads {@linkcode HttpLimits} from the `McpServer` section. */
export function readHttpLimits(read: Reader): HttpLimits {
  return {
    maxStreamsPerCaller: read.integer("McpServer:MaxStreamsPerCaller"),
    maxStreams: read.integer("McpServer:MaxStreams"),
    maxConcurrentRequests: read.integer("McpServer:MaxConcurrentRequests"),
    bodyReadTimeoutMs: read.timeSpan("McpServer:BodyReadTimeout"),
    maxBufferedBodyBytes: read.integer("McpServer:MaxBufferedBodyBytes"),
    maxConnections: read.integer("McpServer:MaxConnections", defaultMaxConnections()),
    headerReadTimeoutMs: read.timeSpan("McpServer:HeaderReadTimeout"),
    keepAliveTimeoutMs: read.timeSpan("McpServer:KeepAliveTimeout"),
    sendTimeoutMs: read.timeSpan("McpServer:SendTimeout"),
    maxStreamQueueBytes: read.integer("McpServer:MaxStreamQueueBytes"),
  };
}

/** Connections allowed when the open-files limit cannot be read (not Linux). */
const FALLBACK_MAX_CONNECTIONS = 4096;

/**
 * `MaxConnections`' default: the process's open-files limit less a quarter of it (at most 256),
 * which stays for the workers' pipes, logs and files, and never more than 4096.
 */
function defaultMaxConnections(limit = openFilesLimit()): number {
  if (limit === null) return FALLBACK_MAX_CONNECTIONS;
  const reserve = Math.min(256, Math.floor(limit / 4));
  return Math.max(1, Math.min(FALLBACK_MAX_CONNECTIONS, limit - reserve));
}

/** The soft open-files limit from `/proc/self/limits`, or null where there is none to read. */
function openFilesLimit(): number | null {
  try {
    const limits = Deno.readTextFileSync("/proc/self/limits");
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
    if (!match) return null;
    return match[1] === "unlimited" ? null : Number(match[1]);
  } catch {
    return null;
  }
}
