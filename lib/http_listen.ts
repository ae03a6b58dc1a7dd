/**
 * Binding the HTTP listener, with startup errors a user can act on: a taken port, a privileged one
 * or an address this machine does not have each exit with code 3 and say what to change. Once
 * bound, the listener is kept: `Deno.serve` (Deno 2.9.6) ends its accept loop when `accept` fails
 * (EMFILE once svc runs out of file descriptors, say 1,000 idle connections under a limit of 1,024),
 * closes the listening socket and rejects `finished`. Unhandled, that rejection ended svc. Instead
 * svc logs a warning, waits (100 ms doubling to 2 s) and serves again on the same address and port.
 *
 * @module
 */
import type { HttpSettings } from "./config.ts";
import { StartupError } from "./errors.ts";
import { logger } from "./log.ts";

const log = logger("http");

/** First wait before serving again after the accept loop failed, in ms; doubled per failed attempt. */
const FIRST_BACKOFF_MS = 100;
/** Longest wait between attempts to serve again, in ms. */
const MAX_BACKOFF_MS = 2_000;

/** Throws the startup error for `host:port` when it cannot be bound now (checked before workers start). */
export function checkCanListen(host: string, port: number): void {
  try {
    Deno.listen({ hostname: host, port }).close();
  } catch (error) {
    throw cannotListen(host, port, error);
  }
}

/** The served listener: {@linkcode listen}'s result, stopped with `shutdown`. */
export interface Listener {
  /** Stops accepting (and serving again), then resolves once in-flight requests are answered. */
  shutdown(): Promise<void>;
}

/**
 * Serves `handler` on the configured address and logs where once listening. If the accept loop
 * fails later, serves again on the same port after a back-off, until {@linkcode Listener.shutdown}.
 *
 * @throws {StartupError} `CANNOT_LISTEN` naming the address and what to change (first bind only).
 */
export function listen(
  http: HttpSettings,
  handler: (req: Request) => Response | Promise<Response>,
): Listener {
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: http.host,
      port: http.port,
      onListen: (addr) => {
        log.info("svc listening on http://{Address}:{Port} (MCP at {Paths}, mode {Mode}).", {
          Address: addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname,
          Port: addr.port,
          Paths: http.mcpPath ?? "/ and /mcp",
          Mode: http.mode,
        });
      },
    }, handler);
  } catch (error) {
    throw cannotListen(http.host, http.port, error);
  }
  return new KeptListener(http.host, server, handler);
}

/** Serves again whenever the accept loop fails, until shut down. */
class KeptListener implements Listener {
  readonly #host: string;
  /** The port first bound (a configured 0 became a real one): clients keep their address. */
  readonly #port: number;
  readonly #handler: (req: Request) => Response | Promise<Response>;
  #server: Deno.HttpServer | null;
  #stopping = false;
  #retry: ReturnType<typeof setTimeout> | null = null;
  #backoffMs = FIRST_BACKOFF_MS;
  /** When the current episode of failures began (ms), or null while serving normally. */
  #failingSince: number | null = null;

  constructor(
    host: string,
    server: Deno.HttpServer<Deno.NetAddr>,
    handler: (req: Request) => Response | Promise<Response>,
  ) {
    this.#host = host;
    this.#port = server.addr.port;
    this.#handler = handler;
    this.#server = server;
    this.#watch(server);
  }

  shutdown(): Promise<void> {
    this.#stopping = true;
    if (this.#retry !== null) clearTimeout(this.#retry);
    return this.#server?.shutdown() ?? Promise.resolve();
  }

  #watch(server: Deno.HttpServer): void {
    server.finished.catch((error) => {
      if (this.#stopping) return;
      this.#server = null;
      if (this.#failingSince === null) {
        this.#failingSince = Date.now();
        log.warning(
          "The HTTP listener stopped accepting connections ({Error}); serving again after a back-off. Running out of file descriptors (EMFILE) means too many open connections: raise the open-files limit (ulimit -n) or put a proxy with a connection limit in front.",
          { Error: error instanceof Error ? error.message : String(error) },
        );
      }
      this.#scheduleRestart();
    });
  }

  #scheduleRestart(): void {
    const wait = this.#backoffMs;
    this.#backoffMs = Math.min(MAX_BACKOFF_MS, this.#backoffMs * 2);
    this.#retry = setTimeout(() => {
      this.#retry = null;
      if (!this.#stopping) this.#restart();
    }, wait);
  }

  #restart(): void {
    try {
      const server = Deno.serve({
        hostname: this.#host,
        port: this.#port,
        onListen: () => {},
      }, (req) => {
        // The first request answered ends the episode: the next failure is news again.
        if (this.#failingSince !== null) this.#recovered();
        return this.#handler(req);
      });
      this.#server = server;
      this.#watch(server);
    } catch (error) {
      log.debug("Serving again on port {Port} failed ({Error}); trying again.", {
        Port: this.#port,
        Error: error instanceof Error ? error.message : String(error),
      });
      this.#scheduleRestart();
    }
  }

  #recovered(): void {
    log.info("The HTTP listener is serving again on port {Port} after {Seconds} s.", {
      Port: this.#port,
      Seconds: ((Date.now() - this.#failingSince!) / 1000).toFixed(1),
    });
    this.#failingSince = null;
    this.#backoffMs = FIRST_BACKOFF_MS;
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
