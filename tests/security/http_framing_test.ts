/**
 * How svc frames what it sends and when it lets a connection go, against hand-written requests on
 * raw sockets to a real svc on real pwsh: a response head is as long on the wire as svc counts it,
 * whatever bytes a client put into a header svc echoes back.
 */
import assert from "node:assert/strict";
import { answersOk, eventually, fixtureConfig, startHttpSvc } from "../support/harness.ts";
import { within } from "../support/deadline.ts";
import { exchange, readToEnd } from "./raw_http.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };

/** Latin-1 text as bytes, one a character: how a client puts obs-text into a header. */
function bytesOf(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

/** Writes all of `bytes` (a single write may take only part of them). */
async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let offset = 0; offset < bytes.length;) offset += await conn.write(bytes.subarray(offset));
}

/** Splits pipelined responses by their own framing (Content-Length); throws where it does not hold. */
function responses(text: string): { head: string; body: string }[] {
  const out: { head: string; body: string }[] = [];
  let rest = text;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    assert.ok(end > 0, `no end of a response head in: ${JSON.stringify(rest.slice(0, 200))}`);
    const head = rest.slice(0, end);
    assert.match(head, /^HTTP\/1\.1 \d{3} /, `not a status line: ${JSON.stringify(head)}`);
    const length = /\r\ncontent-length: (\d+)\r\n/i.exec(`${head}\r\n`);
    assert.ok(length, `no Content-Length in: ${JSON.stringify(head)}`);
    const start = end + 4;
    out.push({ head, body: rest.slice(start, start + Number(length[1])) });
    rest = rest.slice(start + Number(length[1]));
  }
  return out;
}

Deno.test("framing: a header value with bytes 0x80-0xFF is echoed byte for byte and the head stays framed", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const host = new URL(svc.url).host;
  // The URL parser reads past the path, so this Origin is svc's own and is echoed back as sent.
  const origin = `http://${host}/\xff\xff\xff\xff\xff\xff`;
  const text = await exchange(
    svc.url,
    `GET /nothing HTTP/1.1\r\nHost: ${host}\r\nOrigin: ${origin}\r\n\r\n` +
      `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
  );
  const [first, second, ...more] = responses(text);
  assert.equal(more.length, 0, text);
  assert.match(first!.head, /^HTTP\/1\.1 404 /);
  assert.ok(first!.head.includes(`\r\naccess-control-allow-origin: ${origin}\r\n`), first!.head);
  assert.equal(
    first!.body,
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not found: GET /nothing"}}',
  );
  assert.match(second!.head, /^HTTP\/1\.1 200 /);
  assert.match(second!.body, /"status":"Healthy"/);
});

Deno.test("framing: blank lines sent now and then do not keep an idle connection open", async () => {
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: {
        RunspacePool: LIGHT_POOL,
        HeaderReadTimeout: "00:00:02",
        KeepAliveTimeout: "00:00:02",
      },
    },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const { hostname, port } = new URL(svc.url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  await conn.write(bytesOf(`GET /health HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`));
  const started = Date.now();
  let closedAt: number | null = null;
  const reading = (async () => {
    const buffer = new Uint8Array(65_536);
    try {
      while (await conn.read(buffer) !== null) { /* the answer to /health */ }
    } catch {
      // A reset is a close too.
    }
    closedAt = Date.now();
  })();
  // An empty line may precede a request line (RFC 9112 §2.2); one every 500 ms, for 15 s at most.
  while (closedAt === null && Date.now() - started < 15_000) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    await conn.write(bytesOf("\r\n")).catch(() => 0);
  }
  try {
    conn.close();
  } catch { /* closed by svc */ }
  await reading;
  const ms = closedAt! - started;
  // Two seconds configured for each clock; the bound leaves room for two busy cores.
  assert.ok(ms < 12_000, `the connection was still open after ${ms} ms of blank lines`);
});

Deno.test("framing: a head larger than 32 KiB gets 431 however it arrives", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const host = new URL(svc.url).host;
  const head = (pad: number) =>
    `GET /health HTTP/1.1\r\nHost: ${host}\r\nX-Pad: ${
      "a".repeat(pad)
    }\r\nConnection: close\r\n\r\n`;
  // Written at once, 40 KB reach svc in one read, with the blank line that ends them.
  const large = await exchange(svc.url, head(40_000));
  assert.match(large, /^HTTP\/1\.1 431 /, large.slice(0, 200));
  const fits = await exchange(svc.url, head(30_000));
  assert.match(fits, /^HTTP\/1\.1 200 /, fits.slice(0, 200));
});

Deno.test("framing: methods are case-sensitive, and one fetch's Request refuses or a GET with a body is answered", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const host = new URL(svc.url).host;
  const call = JSON.stringify({ tool: "get_fixture_greeting", arguments: { Name: "lower" } });
  // `post` is not POST (RFC 9110 §9.1): before, fetch's Request upper-cased it and the call ran;
  // `head` was answered as HEAD but with a body.
  for (
    const [method, rest] of [
      ["TRACE", ""],
      ["CONNECT", ""],
      ["track", ""],
      ["post", `Content-Type: application/json\r\nContent-Length: ${call.length}\r\n\r\n${call}`],
      ["head", "\r\n"],
      ["Get", "\r\n"],
    ]
  ) {
    const path = method === "post" ? "/call" : "/health";
    const reply = await exchange(
      svc.url,
      `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${rest || "\r\n"}`,
    );
    assert.match(reply, /^HTTP\/1\.1 501 /, `${method}: ${JSON.stringify(reply)}`);
    assert.ok(reply.includes(`The request method ${method} is not supported.`), reply);
    assert.ok(!reply.includes("lower"), reply);
  }
  // Answered without reading the body, then closed: nothing after it is read as a request.
  const get = await exchange(
    svc.url,
    `GET /health HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 5\r\n\r\nhello`,
  );
  assert.match(get, /^HTTP\/1\.1 200 /, JSON.stringify(get));
  assert.match(get, /\r\nconnection: close\r\n/);
});

Deno.test("framing: requests sent a byte at a time, pipelined, with a chunked body, are each answered", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const { hostname, port, host } = new URL(svc.url);
  const body = JSON.stringify({ tool: "get_fixture_greeting", arguments: { Name: "drip" } });
  const request = `\r\nPOST /call HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
    `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)};x=y\r\n${body}\r\n0\r\n\r\n` +
    `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
  const conn = await Deno.connect({ hostname, port: Number(port) });
  conn.setNoDelay(true);
  const reading = readToEnd(conn);
  // One byte a write, a pause now and then so that svc reads most of them on their own.
  for (const [i, byte] of bytesOf(request).entries()) {
    await conn.write(Uint8Array.of(byte));
    if (i % 8 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const text = await within(reading, "the answers to the requests sent a byte at a time", 30_000);
  conn.close();
  const [call, health, ...more] = responses(text);
  assert.equal(more.length, 0, text);
  assert.match(call!.head, /^HTTP\/1\.1 200 /, text);
  assert.match(call!.body, /drip/);
  assert.match(health!.head, /^HTTP\/1\.1 200 /);
  assert.match(health!.body, /"status":"Healthy"/);
});

function peakRssMb(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024;
}

Deno.test("framing: a body sent as two million one-byte chunks is held as its bytes, not as two million arrays", async () => {
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: { RunspacePool: LIGHT_POOL, BodyReadTimeout: "00:02:00" },
    },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const { hostname, port, host } = new URL(svc.url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const json = JSON.stringify({ tool: "get_fixture_greeting", arguments: { Name: "chunks" } });
  const before = peakRssMb(svc.pid);
  await writeAll(
    conn,
    bytesOf(
      `POST /call HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
        `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
        `${json.length.toString(16)}\r\n${json}\r\n`,
    ),
  );
  // JSON may end in whitespace: two million chunks of one space each (12 MB on the wire, 2 MB of
  // body, under the default MaxRequestBodyBytes of 4 MiB).
  const spaces = bytesOf("1\r\n \r\n".repeat(65_536));
  for (let i = 0; i < 32; i++) await writeAll(conn, spaces);
  await writeAll(conn, bytesOf("0\r\n\r\n"));
  let text = "";
  const buffer = new Uint8Array(65_536);
  await within(
    (async () => {
      for (;;) {
        const n = await conn.read(buffer);
        if (n === null) break;
        text += String.fromCharCode(...buffer.subarray(0, n));
      }
    })(),
    "the answer to a body of one-byte chunks",
    60_000,
  );
  conn.close();
  assert.match(text, /^HTTP\/1\.1 200 /, text.slice(0, 600));
  assert.match(text, /chunks/);
  const grown = peakRssMb(svc.pid) - before;
  // Before, each chunk was kept as its own array: the peak grew about 1 GB for these two million.
  assert.ok(grown < 200, `svc's peak memory grew ${grown.toFixed(0)} MB for a 2 MB body`);
});

/** A POST of `body` to `target` with the headers given, closing after it. */
function postHead(target: string, host: string, body: string, more = ""): string {
  return `POST ${target} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n${more}Connection: close\r\n\r\n${body}`;
}

Deno.test("framing: the target is routed as sent; what readers could resolve differently is refused", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const host = new URL(svc.url).host;
  const call = JSON.stringify({ tool: "get_fixture_greeting", arguments: { Name: "slash" } });
  // Before, the URL parser read `\` as `/` and removed the dot segment: `/call` ran, where nginx
  // (which reads `\` as a plain character) had matched a location under /health.
  for (
    const target of [
      "/health/..\\call",
      "/health\\..\\call",
      "/health/../call",
      "/health/%2e%2e/call",
    ]
  ) {
    const reply = await exchange(svc.url, postHead(target, host, call));
    assert.match(reply, /^HTTP\/1\.1 400 /, `${target}: ${reply}`);
    assert.ok(!reply.includes("slash"), reply);
  }
  // A trailing slash is another path, as it is for a proxy's exact match.
  const slash = await exchange(svc.url, postHead("/call/", host, call));
  assert.match(slash, /^HTTP\/1\.1 404 /, slash);
  // Absolute form (RFC 9112 §3.2.2): the target's host is the one checked, not the Host field.
  const absolute = await exchange(
    svc.url,
    postHead(`http://${host}/call`, "evil.example", call),
  );
  assert.match(absolute, /^HTTP\/1\.1 200 /, absolute);
  assert.match(absolute, /slash/);
  const foreign = await exchange(svc.url, postHead("http://evil.example/call", host, call));
  assert.match(foreign, /^HTTP\/1\.1 403 /, foreign);
  assert.match(foreign, /Host 'evil\.example' is not served here/);
});

Deno.test("framing: Transfer-Encoding ignores empty list elements and 0xA0 is no whitespace", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const host = new URL(svc.url).host;
  const json = JSON.stringify({ tool: "get_fixture_greeting", arguments: { Name: "listed" } });
  const chunked = (coding: string) =>
    `POST /call HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
    `Transfer-Encoding: ${coding}\r\nConnection: close\r\n\r\n` +
    `${json.length.toString(16)}\r\n${json}\r\n0\r\n\r\n`;
  // Before: 501, though RFC 9110 §5.6.1 has a recipient ignore empty elements.
  const listed = await exchange(svc.url, chunked("chunked,"));
  assert.match(listed, /^HTTP\/1\.1 200 /, listed);
  assert.match(listed, /listed/);
  // Before: accepted as chunked, as JavaScript's trim() removes U+00A0.
  const nbsp = await exchange(svc.url, chunked("chunked\xa0"));
  assert.match(nbsp, /^HTTP\/1\.1 501 /, nbsp);
  const length = await exchange(
    svc.url,
    postHead("/call", host, json, "").replace(/Content-Length: (\d+)/, "Content-Length: $1\xa0"),
  );
  assert.match(length, /^HTTP\/1\.1 400 /, length);
});

Deno.test("framing: a head of bare LF line ends gets 400 at once, more than 100 fields 431", async () => {
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: { RunspacePool: LIGHT_POOL, HeaderReadTimeout: "00:02:00" },
    },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const host = new URL(svc.url).host;
  // Before, svc waited for a CRLF CRLF until HeaderReadTimeout (two minutes here) and sent 408.
  const started = Date.now();
  const lf = await exchange(svc.url, `GET /health HTTP/1.1\nHost: ${host}\n\n`);
  assert.match(lf, /^HTTP\/1\.1 400 /, lf);
  assert.match(lf, /not ended by CRLF/);
  assert.ok(Date.now() - started < 60_000, `answered after ${Date.now() - started} ms`);
  const fields = Array.from({ length: 100 }, (_, i) => `X-F${i}: ${i}\r\n`).join("");
  const many = await exchange(svc.url, `GET /health HTTP/1.1\r\nHost: ${host}\r\n${fields}\r\n`);
  assert.match(many, /^HTTP\/1\.1 431 /, many);
  assert.match(many, /more than 100 header fields/);
  const fewer = fields.split("\r\n").slice(0, 98).join("\r\n");
  const fits = await exchange(
    svc.url,
    `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n${fewer}\r\n\r\n`,
  );
  assert.match(fits, /^HTTP\/1\.1 200 /, fits.slice(0, 200));
});

/** Ends the client's sending side after its request (a half-close). */
const HALF = { halfClose: true };

Deno.test("framing: a client that half-closes after a complete request gets its answer", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health`), 60_000), svc.stderr());
  const host = new URL(svc.url).host;
  // Before, the end of the client's stream aborted the request and the client read nothing.
  const health = await exchange(svc.url, `GET /health HTTP/1.1\r\nHost: ${host}\r\n\r\n`, HALF);
  assert.match(health, /^HTTP\/1\.1 200 /, health);
  // A call that outlasts a probe: the client reads `100 Continue`, then the answer.
  const call = JSON.stringify({
    tool: "start_sleep_milliseconds",
    arguments: { Milliseconds: 2500 },
  });
  const slow = await exchange(
    svc.url,
    `POST /call HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${call.length}\r\n\r\n${call}`,
    HALF,
  );
  assert.match(
    slow,
    /^HTTP\/1\.1 100 Continue\r\n\r\n(HTTP\/1\.1 100 Continue\r\n\r\n)*HTTP\/1\.1 200 /,
    slow,
  );
  assert.match(slow, /"structuredContent":\{"output":\[\]\}/);
  assert.ok(!slow.includes('"isError":true'), slow);
  // Two requests sent before the half-close are both answered.
  const both = await exchange(
    svc.url,
    `GET /health HTTP/1.1\r\nHost: ${host}\r\n\r\nGET /health/ready HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
    HALF,
  );
  const [first, second, ...more] = responses(both);
  assert.equal(more.length, 0, both);
  assert.match(first!.head, /^HTTP\/1\.1 200 /);
  assert.match(second!.head, /^HTTP\/1\.1 200 /);
});
