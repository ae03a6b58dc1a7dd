/**
 * Binding the HTTP listener, with startup errors a user can act on: a taken port, a privileged one
 * or an address this machine does not have each exit with code 3 and say what to change.
 *
 * @module
 */
import type { HttpSettings } from "./config.ts";
import { StartupError } from "./errors.ts";
import { logger } from "./log.ts";

/** Throws the startup error for `host:port` when it cannot be bound now (checked before workers start). */
export function checkCanListen(host: string, port: number): void {
  try {
    Deno.listen({ hostname: host, port }).close();
  } catch (error) {
    throw cannotListen(host, port, error);
  }
}

/**
 * Serves `handler` on the configured address and logs where once listening.
 *
 * @throws {StartupError} `CANNOT_LISTEN` naming the address and what to change.
 */
export function listen(
  http: HttpSettings,
  handler: (req: Request) => Response | Promise<Response>,
): Deno.HttpServer {
  try {
    return Deno.serve({
      hostname: http.host,
      port: http.port,
      onListen: (addr) => {
        logger("http").info(
          "svc listening on http://{Address}:{Port} (MCP at {Paths}, mode {Mode}).",
          {
            Address: addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname,
            Port: addr.port,
            Paths: http.mcpPath ?? "/ and /mcp",
            Mode: http.mode,
          },
        );
      },
    }, handler);
  } catch (error) {
    throw cannotListen(http.host, http.port, error);
  }
}

function cannotListen(host: string, port: number, error: unknown): StartupError {
  const address = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  const why = error instanceof Deno.errors.AddrInUse
    ? "the port is already in use; choose another with --port (or SVC_PORT), or 0 for a free one"
    : error instanceof Deno.errors.PermissionDenied
    ? "permission denied (ports below 1024 need privileges); choose another with --port"
    : error instanceof Deno.errors.AddrNotAvailable
    ? "no interface of this machine has that address; check --host (or SVC_HOST)"
    : error instanceof Error
    ? error.message
    : String(error);
  return new StartupError("CANNOT_LISTEN", `Cannot listen on ${address}: ${why}`, {
    cause: error,
  });
}
