/**
 * The HTTP front's resource limits (`McpServer:Max…`): how many event streams a caller, and all
 * callers, may hold open.
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
}

/** Reads {@linkcode HttpLimits} from the `McpServer` section. */
export function readHttpLimits(read: Reader): HttpLimits {
  return {
    maxStreamsPerCaller: read.integer("McpServer:MaxStreamsPerCaller", 16, 1),
    maxStreams: read.integer("McpServer:MaxStreams", 512, 1),
  };
}
