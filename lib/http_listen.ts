/**
 * The HTTP listener: binds the address (startup errors a user can act on: a taken port, a
 * privileged one or an address this machine does not have each exit with code 3 and say what to
 * change), then accepts connections for {@linkcode Connection} to serve. svc accepts them itself
 * rather than through `Deno.serve` (Deno 2.9.6), which has no connection cap and ends its accept
 * loop on the first failure (EMFILE once svc runs out of file descriptors). Here the loop never
 * ends before shutdown: a failed accept is logged once per episode and retried after a back-off
 * (100 ms doubling to 2 s), and past `MaxConnections` a connection may only ask for `/health`.
 * With `McpServer:TlsCertificatePath` and `TlsKeyPath` each connection gets TLS (`http_tls.ts`)
 * and svc serves HTTPS only: one port, one scheme.
 *
 * @module
 */
import type { HttpSettings } from "./config_http.ts";
import { StartupError } from "./errors.ts";
import { Connection, type ConnectionOptions } from "./http_connection.ts";
import { TlsPair } from "./http_tls.ts";
import { logger } from "./log.ts";
import { tracedHttp } from "./telemetry.ts";

const log = logger("http");

/** First wait before accepting again after `accept` failed, in ms; doubled per failed attempt. */
const FIRST_BACKOFF_MS = 100;
/** Longest wait between attempts to accept again, in ms. */
const MAX_BACKOFF_MS = 2_000;
/**
 * Connections past `MaxConnections` kept open at once, each only for a health check: a load
 * balancer's probe still gets its answer while idle clients hold every regular slot.
 */
const HEALTH_ONLY_CONNECTIONS = 16;

/** The served listener: {@linkcode listen}'s result, stopped with `shutdown`. */
export interface Listener {
  /** Stops accepting, closes idle connections, then resolves once the others have answered. */
  shutdown(): Promise<void>;
}

/**
 * Serves `handler` on the configured address, over TLS when the settings name a pair, and logs
 * where once listening.
 *
 * @throws {StartupError} `TLS_PAIR` naming a TLS file that is missing, unreadable or wrong, or the
 * two that do not belong together; `CANNOT_LISTEN` naming the address and what to change.
 */
export function listen(
  http: HttpSettings,
  handler: (req: Request) => Response | Promise<Response>,
): Listener {
  const tls = http.tls === null ? null : TlsPair.open(http.tls);
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname: http.host, port: http.port });
  } catch (error) {
    tls?.[Symbol.dispose]();
    throw cannotListen(http.host, http.port, error);
  }
  const addr = listener.addr;
  log.info("svc listening on {Scheme}://{Address}:{Port} (MCP at {Paths}, mode {Mode}).", {
    Scheme: tls === null ? "http" : "https",
    Address: addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname,
    Port: addr.port,
    Paths: http.mcpPath ?? "/ and /mcp",
    Mode: http.mode,
  });
  if (tls !== null) {
    log.info("Serving HTTPS with the certificate from {Path} ({Certificate}).", {
      Path: http.tls!.certificatePath,
      Certificate: tls.describe(),
    });
  }
  const { limits } = http;
  const server = new Server(listener, {
    maxConnections: limits.maxConnections,
    tls,
    connection: {
      handler: tracedHttp(handler),
      secure: tls !== null,
      trustForwardedProto: http.trustForwardedProto,
      headerReadTimeoutMs: limits.headerReadTimeoutMs,
      keepAliveTimeoutMs: limits.keepAliveTimeoutMs,
      sendTimeoutMs: limits.sendTimeoutMs,
      maxStreamQueueBytes: limits.maxStreamQueueBytes,
    },
  });
  server.run();
  return server;
}

/** Accepts until shut down, within the connection cap. */
class Server implements Listener {
  readonly #listener: Deno.TcpListener;
  readonly #max: number;
  readonly #tls: TlsPair | null;
  readonly #options: Omit<ConnectionOptions, "healthOnly">;
  readonly #open = new Set<Connection>();
  readonly #healthOnly = new Set<Connection>();
  readonly #served = new Set<Promise<void>>();
  #stopping = false;
  /** Connections closed unserved since the cap was reached, or null while under it. */
  #refused: number | null = null;

  constructor(
    listener: Deno.TcpListener,
    options: {
      maxConnections: number;
      /** The TLS pair of HTTPS, or null for HTTP. */
      tls: TlsPair | null;
      connection: Omit<ConnectionOptions, "healthOnly">;
    },
  ) {
    this.#listener = listener;
    this.#max = options.maxConnections;
    this.#tls = options.tls;
    this.#options = options.connection;
  }

  async run(): Promise<void> {
    let backoff = FIRST_BACKOFF_MS;
    let failingSince: number | null = null;
    while (!this.#stopping) {
      let conn: Deno.TcpConn;
      try {
        conn = await this.#listener.accept();
      } catch (error) {
        if (this.#stopping) return;
        if (failingSince === null) {
          failingSince = Date.now();
          log.warning(
            "The HTTP listener cannot accept connections ({Error}); trying again after a back-off. Running out of file descriptors (EMFILE) means too many open connections or files: lower McpServer:MaxConnections or raise the open-files limit (ulimit -n).",
            { Error: error instanceof Error ? error.message : String(error) },
          );
        }
        await new Promise((resolve) => setTimeout(resolve, backoff));
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
        continue;
      }
      if (failingSince !== null) {
        log.info("The HTTP listener is accepting connections again after {Seconds} s.", {
          Seconds: ((Date.now() - failingSince) / 1000).toFixed(1),
        });
        failingSince = null;
        backoff = FIRST_BACKOFF_MS;
      }
      this.#admit(conn);
    }
  }

  #admit(conn: Deno.TcpConn): void {
    const regular = this.#open.size < this.#max;
    if (!regular && this.#healthOnly.size >= HEALTH_ONLY_CONNECTIONS) {
      this.#refuse(conn);
      return;
    }
    if (regular && this.#refused !== null) {
      log.info(
        "Accepting connections again; {Count} were closed unserved at McpServer:MaxConnections.",
        {
          Count: this.#refused,
        },
      );
      this.#refused = null;
    }
    if (!regular) this.#noteCap();
    try {
      conn.setNoDelay(true);
    } catch {
      // The peer already went away; serving finds out.
    }
    const set = regular ? this.#open : this.#healthOnly;
    const socket = this.#tls === null ? conn : this.#tls.wrap(conn);
    const connection = new Connection(socket, { ...this.#options, healthOnly: !regular });
    set.add(connection);
    const served = connection.serve().finally(() => {
      set.delete(connection);
      this.#served.delete(served);
    });
    this.#served.add(served);
  }

  #refuse(conn: Deno.TcpConn): void {
    this.#noteCap();
    this.#refused! += 1;
    try {
      conn.close();
    } catch {
      // Nothing to release.
    }
  }

  #noteCap(): void {
    if (this.#refused !== null) return;
    this.#refused = 0;
    log.warning(
      "{Count} connections are open, as many as McpServer:MaxConnections allows: new ones may only ask for /health until some close.",
      { Count: this.#open.size },
    );
  }

  async shutdown(): Promise<void> {
    this.#stopping = true;
    this.#tls?.[Symbol.dispose]();
    try {
      this.#listener.close();
    } catch {
      // Already closed.
    }
    for (const connection of [...this.#open, ...this.#healthOnly]) connection.closeIfIdle();
    await Promise.all(this.#served);
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
