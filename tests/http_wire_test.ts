/**
 * The HTTP/1.1 wire parser refuses every head two parsers could read two ways (request smuggling)
 * and decodes chunked bodies exactly.
 */
import assert from "node:assert/strict";
import {
  ChunkedDecoder,
  headEnd,
  parseHead,
  type RequestHead,
  responseHead,
} from "../lib/http_wire.ts";

const ok = (text: string): RequestHead => {
  const head = parseHead(text);
  assert.ok(!("status" in head), `refused: ${JSON.stringify(head)}`);
  return head as RequestHead;
};
const refused = (text: string, status = 400): string => {
  const head = parseHead(text);
  assert.ok("status" in head, `accepted: ${text}`);
  assert.equal(head.status, status, head.message);
  return head.message;
};

Deno.test("parseHead reads a request line, fields, framing and keep-alive", () => {
  const head = ok("POST /call?x=1 HTTP/1.1\r\nHost: a:1\r\nContent-Length: 12\r\nX-A:  b ");
  assert.equal(head.method, "POST");
  assert.equal(head.target, "/call?x=1");
  assert.deepEqual(head.body, { kind: "length", length: 12 });
  assert.deepEqual(head.fields[2], ["x-a", "b"]);
  assert.equal(head.keepAlive, true);
  assert.equal(ok("GET / HTTP/1.1\r\nHost: a\r\nConnection: close").keepAlive, false);
  assert.equal(ok("GET / HTTP/1.0").keepAlive, false);
  assert.equal(ok("GET / HTTP/1.0\r\nConnection: keep-alive").keepAlive, true);
  assert.deepEqual(ok("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked").body, {
    kind: "chunked",
  });
  assert.deepEqual(ok("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0").body, { kind: "none" });
  assert.equal(ok("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue").expectContinue, true);
});

Deno.test("parseHead refuses what could be smuggled or misread", () => {
  const base = "POST / HTTP/1.1\r\nHost: a\r\n";
  assert.match(refused(`${base}Content-Length: 5\r\nTransfer-Encoding: chunked`), /both/);
  refused(`${base}Content-Length: 5\r\nContent-Length: 6`);
  refused(`${base}Content-Length: 5, 6`);
  refused(`${base}Content-Length: +5`);
  refused(`${base}Content-Length: 0x5`);
  refused(`${base}Transfer-Encoding: gzip, chunked`, 501);
  refused(`${base}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked`, 501);
  refused("POST / HTTP/1.0\r\nTransfer-Encoding: chunked");
  refused(`${base}X-A: b\r\n c`);
  refused(`${base}X-A: b\nX-B: c`);
  refused(`${base}Bad Name: b`);
  refused(`${base}X-A: b\x00c`);
  refused(`${base}: b`);
  refused("GET / HTTP/1.1");
  refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b");
  refused("GET evil/ HTTP/1.1\r\nHost: a");
  refused("GET  / HTTP/1.1\r\nHost: a");
  refused("G(T / HTTP/1.1\r\nHost: a");
  refused("GET / HTTP/2.0\r\nHost: a", 505);
  refused("GET / FTP/1.1\r\nHost: a");
  // Duplicate lengths that agree are one length.
  assert.deepEqual(ok(`${base}Content-Length: 5\r\nContent-Length: 5`).body, {
    kind: "length",
    length: 5,
  });
});

function decodeAll(
  text: string,
  splits: number[] = [],
): { body: string; end: boolean; error?: string } {
  const decoder = new ChunkedDecoder();
  const bytes = new TextEncoder().encode(text);
  let buffered = new Uint8Array(0);
  let body = "";
  const cuts = [...splits, bytes.length];
  let from = 0;
  for (const cut of cuts) {
    const joined = new Uint8Array(buffered.length + cut - from);
    joined.set(buffered);
    joined.set(bytes.subarray(from, cut), buffered.length);
    buffered = joined;
    from = cut;
    for (;;) {
      const step = decoder.step(buffered);
      if (step.kind === "more") break;
      if (step.kind === "error") return { body, end: false, error: step.message };
      if (step.kind === "data") body += new TextDecoder().decode(step.data);
      buffered = buffered.subarray(step.consumed);
      if (step.kind === "end") return { body, end: true };
    }
  }
  return { body, end: false };
}

Deno.test("ChunkedDecoder decodes chunks, extensions and trailers, in any split", () => {
  const text = "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n";
  assert.deepEqual(decodeAll(text), { body: "hello, world", end: true });
  for (let split = 1; split < text.length; split++) {
    assert.deepEqual(
      decodeAll(text, [split]),
      { body: "hello, world", end: true },
      `split ${split}`,
    );
  }
  assert.deepEqual(decodeAll("5\r\nhel"), { body: "hel", end: false });
});

Deno.test("ChunkedDecoder refuses malformed framing", () => {
  assert.match(decodeAll("z\r\nhello\r\n0\r\n\r\n").error!, /hexadecimal/);
  assert.match(decodeAll("5\r\nhelloXX0\r\n\r\n").error!, /CRLF/);
  assert.match(decodeAll("5\nhello\r\n0\r\n\r\n").error!, /CRLF/);
  assert.match(decodeAll("123456789\r\n").error!, /hexadecimal/);
  assert.match(decodeAll(`5;${"x".repeat(5000)}`).error!, /too long/);
});

Deno.test("responseHead frames the body itself and drops a handler's framing fields", () => {
  const headers = new Headers({ "content-length": "999", connection: "keep-alive", "x-a": "b" });
  headers.append("set-cookie", "a=1");
  headers.append("set-cookie", "b=2");
  const head = responseHead(200, headers, { length: 3, keepAlive: true, date: "D" });
  assert.equal(
    head,
    "HTTP/1.1 200 OK\r\ndate: D\r\nset-cookie: a=1\r\nset-cookie: b=2\r\nx-a: b\r\ncontent-length: 3\r\n\r\n",
  );
  assert.match(
    responseHead(200, new Headers(), { length: "chunked", keepAlive: false, date: "D" }),
    /transfer-encoding: chunked\r\nconnection: close\r\n\r\n$/,
  );
});

Deno.test("parseHead refuses a target that svc and a proxy could read as different paths", () => {
  const refusedTarget = (target: string) =>
    assert.match(refused(`POST ${target} HTTP/1.1\r\nHost: a`), /target/, target);
  // The URL parser reads `\` as `/` and then removes the dot segments; nginx reads neither.
  refusedTarget("/health/..\\call");
  refusedTarget("/health\\..\\call");
  refusedTarget("/health\\call");
  // Dot segments, plain or percent-encoded, are removed by some readers and kept by others.
  for (const target of ["/a/./b", "/a/../call", "/health/..", "/.", "/a/%2e%2E/b", "/a/.%2e"]) {
    refusedTarget(target);
  }
  refusedTarget("/health/%2E%2e?x=1");
  // Characters RFC 3986 does not allow in a path or query, and broken percent-encoding.
  for (
    const target of [
      "/a#b",
      '/a"b',
      "/a{b}",
      "/a|b",
      "/a^b",
      "/a<b>",
      "/a`b",
      "/a%zz",
      "/a%2",
      "/[x]",
    ]
  ) {
    refusedTarget(target);
  }
  refusedTarget("*");
  refusedTarget("svc.example:443");
  // What origin-form allows is kept exactly as sent.
  for (
    const target of [
      "/",
      "/mcp",
      "/a/b/?c=/d?e&f=%41",
      "/a;b=c,d",
      "/%41",
      "/a..b",
      "/.well-known/oauth-protected-resource/mcp",
      "/a/.b/...",
      "//call",
      "/a:b@c!$&'()*+-._~",
    ]
  ) {
    assert.equal(ok(`GET ${target} HTTP/1.1\r\nHost: a`).target, target);
  }
});

Deno.test("parseHead accepts an absolute-form target and takes the host from it", () => {
  const head = ok("GET http://svc.example:8080/mcp?x=1 HTTP/1.1\r\nHost: other.example");
  assert.equal(head.target, "/mcp?x=1");
  assert.equal(head.authority, "svc.example:8080");
  const upper = ok("GET HTTPS://[::1]:9/ HTTP/1.1\r\nHost: a");
  assert.equal(upper.target, "/");
  assert.equal(upper.authority, "[::1]:9");
  assert.equal(ok("GET http://a.example HTTP/1.1\r\nHost: a").target, "/");
  assert.equal(ok("GET http://a.example?q HTTP/1.1\r\nHost: a").target, "/?q");
  assert.equal(ok("GET /x HTTP/1.1\r\nHost: a").authority, "a");
  for (
    const target of [
      "http://user@a.example/",
      "ftp://a.example/",
      "http:///x",
      "http://a.example/..\\call",
      "http://a.example/a/../b",
      "http://a b/",
    ]
  ) {
    refused(`GET ${target} HTTP/1.1\r\nHost: a`);
  }
  // Host is still required once in HTTP/1.1 (RFC 9112 §3.2).
  refused("GET http://a.example/ HTTP/1.1");
});

Deno.test("parseHead refuses more than 100 header fields with 431", () => {
  const fields = (count: number) =>
    Array.from({ length: count }, (_, i) => `X-F${i}: ${i}`).join("\r\n");
  assert.equal(ok(`GET / HTTP/1.1\r\nHost: a\r\n${fields(99)}`).fields.length, 100);
  assert.match(refused(`GET / HTTP/1.1\r\nHost: a\r\n${fields(100)}`, 431), /100 header fields/);
  // Distinct names or one name repeated: each line counts.
  assert.match(
    refused(`GET / HTTP/1.1\r\nHost: a\r\n${"X: 1\r\n".repeat(100)}X: 1`, 431),
    /100 header fields/,
  );
});

Deno.test("parseHead trims only spaces and tabs, and ignores empty Transfer-Encoding elements", () => {
  const base = "POST / HTTP/1.1\r\nHost: a\r\n";
  // 0xA0 (no-break space in Latin-1) is a field byte like any other, not whitespace.
  refused(`${base}Transfer-Encoding: chunked\xa0`, 501);
  refused(`${base}Transfer-Encoding: \xa0chunked`, 501);
  refused(`${base}Content-Length: 5\xa0`);
  refused(`${base}Content-Length: \x0b5`);
  assert.deepEqual(ok(`${base}X-A: \t\xa0b \xa0\t `).fields[1], ["x-a", "\xa0b \xa0"]);
  assert.equal(ok(`GET / HTTP/1.1\r\nHost: a\r\nConnection: close\xa0`).keepAlive, true);
  // RFC 9110 §5.6.1: empty list elements are ignored.
  for (const value of ["chunked,", ", chunked", "chunked, ,", " ,\t,chunked , "]) {
    assert.deepEqual(ok(`${base}Transfer-Encoding: ${value}`).body, { kind: "chunked" }, value);
  }
  refused(`${base}Transfer-Encoding: ,`);
  refused(`${base}Transfer-Encoding: chunked, gzip`, 501);
  // Content-Length is no list: an empty element is an error, as before.
  refused(`${base}Content-Length: 5,`);
});

Deno.test("parseHead's work grows linearly with the head", () => {
  const time = (text: string) => {
    const started = performance.now();
    for (let i = 0; i < 5; i++) parseHead(text);
    return (performance.now() - started) / 5;
  };
  const value = (inner: string) => `GET / HTTP/1.1\r\nHost: a\r\nX-A: a${inner}b`;
  const letters = time(value("x".repeat(32_000)));
  const spaces = time(value(" ".repeat(32_000)));
  // Before, the trimming expression backtracked: 32,000 inner spaces took about a second.
  assert.ok(spaces < 20 * letters + 5, `${spaces.toFixed(2)} ms against ${letters.toFixed(2)} ms`);
  const target = (path: string) => `GET ${path} HTTP/1.1\r\nHost: a`;
  const plain = time(target(`/${"a".repeat(32_000)}`));
  const slashes = time(target(`${"/".repeat(32_000)}a`));
  assert.ok(slashes < 20 * plain + 5, `${slashes.toFixed(2)} ms against ${plain.toFixed(2)} ms`);
});

Deno.test("headEnd finds the blank line, and a bare LF before it at once", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  assert.deepEqual(headEnd(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\nbody\n")), { end: 23 });
  assert.deepEqual(headEnd(bytes("GET / HTTP/1.1\r\nHost: a\r\n")), { end: -1 });
  assert.deepEqual(headEnd(bytes("GET / HTTP/1.1\nHost: a\n")), { bareLf: true });
  assert.deepEqual(headEnd(bytes("GET / HTTP/1.1\r\nHost: a\n\r\n")), { bareLf: true });
  // Scanning on from where the last call stopped still sees a LF whose CR came before.
  assert.deepEqual(headEnd(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 25), { end: 23 });
  assert.deepEqual(headEnd(bytes("\nGET / HTTP/1.1\r\n\r\n")), { bareLf: true });
});
