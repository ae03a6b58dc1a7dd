/**
 * The HTTP front's resource limits (`McpServer:Max…`, `McpServer:BodyReadTimeout`): how many event
 * streams a caller, and all callers, may hold open, how many requests are handled at once, and how
 * long a request body may take to arrive.
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
}

/** Reads {@linkcode HttpLimits} from the `McpServer` section. */
export function readHttpLimits(read: Reader): HttpLimits {
  return {
    maxStreamsPerCaller: read.integer("McpServer:MaxStreamsPerCaller", 16, 1),
    maxStreams: read.integer("McpServer:MaxStreams", 512, 1),
    maxConcurrentRequests: read.integer("McpServer:MaxConcurrentRequests", 1024, 1),
    bodyReadTimeoutMs: read.timeSpan("McpServer:BodyReadTimeout", 30_000),
  };
}
