/**
 * svc's HTTP transport (lib/http.ts: the pool, the front, everything) served by the server named on
 * the command line: svc's own HTTP/1.1 server (`svc`, what `svc serve` runs) or `Deno.serve`
 * (`deno`), with or without TLS, so that bench/http_servers.ts compares the two on the same build.
 * Logs to stderr like `svc serve`, including the "listening on" line the harness waits for.
 *
 *   deno run -A bench/serve_front.ts --server svc|deno --config <file> --pwsh <path>
 *     [--port 0] [--tls-certificate <file> --tls-key <file>]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { loadSettings } from "../lib/config.ts";
import { serveHttp } from "../lib/http.ts";
import type { Listener } from "../lib/http_listen.ts";
import { configureLogging, logger } from "../lib/log.ts";

const { values } = parseArgs({
  options: {
    server: { type: "string", default: "svc" },
    config: { type: "string" },
    pwsh: { type: "string" },
    port: { type: "string", default: "0" },
    "tls-certificate": { type: "string" },
    "tls-key": { type: "string" },
  },
});
const settings = await loadSettings({
  config: values.config,
  host: "127.0.0.1",
  port: values.port,
  tlsCertificate: values["tls-certificate"],
  tlsKey: values["tls-key"],
});
await configureLogging({ level: settings.logLevel });
const log = logger("http");

/** The front on `Deno.serve`: no connection cap, no head, keep-alive or send timeouts. */
function denoServe(
  http: typeof settings.http,
  handler: (req: Request) => Response | Promise<Response>,
): Listener {
  const tls = http.tls === null ? {} : {
    cert: Deno.readTextFileSync(http.tls.certificatePath),
    key: Deno.readTextFileSync(http.tls.keyPath),
  };
  const server = Deno.serve({
    hostname: http.host,
    port: http.port,
    ...tls,
    onListen: ({ port }) => {
      log.info("Deno.serve listening on {Scheme}://127.0.0.1:{Port}.", {
        Scheme: http.tls === null ? "http" : "https",
        Port: port,
      });
    },
  }, handler);
  return { shutdown: () => server.shutdown() };
}

let stop!: () => void;
const shutdown = new Promise<void>((resolve) => stop = resolve);
Deno.addSignalListener("SIGTERM", () => stop());
await serveHttp({
  settings,
  pwsh: values.pwsh!,
  version: "bench",
  shutdown,
  ...(values.server === "deno" ? { listen: denoServe } : {}),
});
