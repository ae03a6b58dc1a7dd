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
  refused("GET http://evil/ HTTP/1.1\r\nHost: a");
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
  assert.equal(headEnd(new TextEncoder().encode("GET / HTTP/1.1\r\n\r\nrest")), 14);
  assert.equal(headEnd(new TextEncoder().encode("GET / HTTP/1.1\r\n\r")), -1);
});
