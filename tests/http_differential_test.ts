/**
 * What nginx forwards is what svc serves, request for request: generated requests (valid and
 * mutated, tests/support/http_generate.ts) go to nginx on loopback, which proxies them over
 * kept-alive connections to svc's own HTTP/1.1 server (`listen` of lib/http_listen.ts, with a
 * handler that answers with what it was handed). A relay between the two keeps the bytes of each
 * upstream connection both ways. For each one, the requests svc answered as served, and the status
 * of the first it refused, must be the reference reading of the bytes nginx sent
 * (tests/support/http_reference.ts): no request svc serves that nginx did not forward, none read
 * with other bounds, another path or another body.
 */
import assert from "node:assert/strict";
import { loadSettings } from "../lib/config.ts";
import { listen } from "../lib/http_listen.ts";
import { generator, latin1, mutated, validRequest } from "./support/http_generate.ts";
import {
  handedRequest,
  handlerView,
  readConnection,
  type ReadRequest,
} from "./support/http_reference.ts";
import { freePort, NGINX, startNginx } from "./support/nginx.ts";

const SEED = Number(Deno.env.get("SVC_PROPERTY_SEED") ?? "20261208");
const skip = NGINX ? "" : " [skipped: no nginx binary; apt install nginx-light]";

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let offset = 0; offset < bytes.length;) offset += await conn.write(bytes.subarray(offset));
}

/** One upstream connection as the relay saw it: the bytes nginx sent and those svc answered. */
interface Upstream {
  up: Uint8Array[];
  down: Uint8Array[];
}

/** A relay on `port` to `target`, keeping each connection's bytes. */
function startRelay(port: number, target: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port });
  const connections: Upstream[] = [];
  const open = new Set<Promise<void>>();
  const pump = async (from: Deno.Conn, to: Deno.Conn, kept: Uint8Array[]) => {
    const buffer = new Uint8Array(65_536);
    for (;;) {
      const n = await from.read(buffer).catch(() => null);
      if (n === null) break;
      kept.push(buffer.slice(0, n));
      await writeAll(to, buffer.subarray(0, n)).catch(() => {});
    }
    await to.closeWrite().catch(() => {});
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      const upstream: Upstream = { up: [], down: [] };
      connections.push(upstream);
      const served = (async () => {
        const svc = await Deno.connect({ hostname: "127.0.0.1", port: target });
        await Promise.all([pump(conn, svc, upstream.up), pump(svc, conn, upstream.down)]);
        conn.close();
        svc.close();
      })();
      open.add(served);
      served.finally(() => open.delete(served));
    }
  })();
  return {
    connections,
    async close() {
      listener.close();
      await accepting.catch(() => {});
      await Promise.all(open);
    },
  };
}

function joined(pieces: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}

/** svc's answers on one connection: what its handler served (echoed), then any refusal. */
function answers(bytes: Uint8Array): { served: ReadRequest[]; refused: number | null } {
  const text = String.fromCharCode(...bytes);
  const served: ReadRequest[] = [];
  let at = 0;
  while (at < text.length) {
    const end = text.indexOf("\r\n\r\n", at);
    if (end < 0) break;
    const head = text.slice(at, end);
    const status = Number(head.slice(9, 12));
    const length = Number(/\r\ncontent-length: (\d+)/.exec(head)?.[1] ?? "0");
    const body = text.slice(end + 4, end + 4 + length);
    at = end + 4 + length;
    if (status === 100) continue;
    if (!/\r\nx-served: 1(\r\n|$)/.test(head)) return { served, refused: status };
    const echo = JSON.parse(new TextDecoder().decode(latin1(body)));
    served.push({ ...echo, body: echo.body === "broken" ? "broken" : latin1(echo.body) });
  }
  return { served, refused: null };
}

/** Sends `bytes` to nginx on a connection of its own and reads until nginx closes it. */
async function send(port: number, bytes: Uint8Array): Promise<void> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await writeAll(conn, bytes).catch(() => {});
  const buffer = new Uint8Array(65_536);
  const deadline = setTimeout(() => conn.close(), 10_000);
  try {
    while (await conn.read(buffer) !== null) { /* nginx's answers */ }
  } catch {
    // Closed by the deadline, or reset.
  } finally {
    clearTimeout(deadline);
  }
  try {
    conn.close();
  } catch { /* closed */ }
}

Deno.test({
  name: `differential: svc serves exactly what nginx forwards, request for request${skip}`,
  ignore: !NGINX,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "svc-differential-" });
    const settings = await loadSettings({ host: "127.0.0.1", port: String(freePort()) }, {
      env: {},
      cwd: dir,
    });
    const server = listen(settings.http, async (req) => {
      const handed = await handedRequest(req);
      const body = handed.body === "broken" ? "broken" : String.fromCharCode(...handed.body);
      const echo = { ...handed, body };
      return new Response(JSON.stringify(echo), { headers: { "x-served": "1" } });
    });
    const relayPort = freePort();
    const relay = startRelay(relayPort, settings.http.port);
    const port = freePort();
    const nginx = await startNginx(
      `
  # Each client gets one answer and is let go; what is not sent whole is given up after a second.
  keepalive_timeout 0;
  client_header_timeout 1s;
  client_body_timeout 1s;
  upstream svc { server 127.0.0.1:${relayPort}; keepalive 8; }
  server {
    listen 127.0.0.1:${port};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host $http_host;
    location / { proxy_pass http://svc; }
    location /9/ { proxy_pass http://svc; proxy_request_buffering off; }
  }`,
      async () => {
        try {
          await send(port, latin1(`GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`));
          return relay.connections.length > 0;
        } catch {
          return false;
        }
      },
    );
    try {
      const r = generator(SEED);
      const inputs: Uint8Array[] = [];
      for (let i = 0; i < 400; i++) {
        inputs.push(latin1(r.next() < 0.5 ? validRequest(r) : mutated(r)));
      }
      // Sixteen clients at a time, so that nginx spreads requests over kept-alive upstreams.
      for (let i = 0; i < inputs.length; i += 16) {
        await Promise.all(inputs.slice(i, i + 16).map((bytes) => send(port, bytes)));
      }
    } finally {
      await nginx[Symbol.asyncDispose]();
      await relay.close();
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
    let forwarded = 0;
    let refusedBySvc = 0;
    for (const [i, upstream] of relay.connections.entries()) {
      const sent = joined(upstream.up);
      const reference = handlerView(readConnection(sent));
      const actual = answers(joined(upstream.down));
      forwarded += reference.served.length;
      if (actual.refused !== null) refusedBySvc++;
      assert.deepEqual(
        actual,
        reference,
        `upstream connection ${i} (seed ${SEED}): ${JSON.stringify(String.fromCharCode(...sent))}`,
      );
    }
    // The run did forward plenty, over kept-alive connections, and svc refused some of it.
    assert.ok(forwarded > 150, `nginx forwarded ${forwarded} requests`);
    assert.ok(relay.connections.length < forwarded / 2, `${relay.connections.length} upstreams`);
    assert.ok(refusedBySvc > 0, "svc refused nothing nginx forwarded");
  },
});
