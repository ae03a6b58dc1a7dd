/**
 * svc's HTTP/1.1 reading (lib/http_wire.ts, lib/http_connection.ts) against a reference reading
 * written again from RFC 9112 and svc's stated rules (tests/support/http_reference.ts), on
 * generated requests: valid ones (whole, split at every byte boundary, a byte a read, pipelined)
 * and mutated ones. For every input, the requests svc hands to its handler (method, path, query,
 * fields, body) and the status it refuses the rest with must be the reference's, request for
 * request. The connection is svc's own `Connection` over a socket that delivers the bytes in the
 * pieces the test chooses, which real sockets cannot promise. The seed is printed with any failure;
 * `SVC_PROPERTY_SEED` replays it.
 */
import assert from "node:assert/strict";
import { Connection, type ConnectionSocket } from "../lib/http_connection.ts";
import { readConnection, type ReadRequest } from "./support/http_reference.ts";

const SEED = Number(Deno.env.get("SVC_PROPERTY_SEED") ?? "20261207");

/** A small, seeded generator (mulberry32): the same seed, the same requests. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  return { next, int, pick };
}
type Random = ReturnType<typeof generator>;

/** A socket that hands out `pieces` one a read, then the end of the stream; keeps what is written. */
class ScriptedSocket implements ConnectionSocket {
  readonly #pieces: Uint8Array[];
  readonly written: Uint8Array[] = [];
  constructor(pieces: Uint8Array[]) {
    this.#pieces = pieces.filter((p) => p.length > 0);
  }
  read(buffer: Uint8Array): Promise<number | null> {
    const piece = this.#pieces.shift();
    if (piece === undefined) return Promise.resolve(null);
    const n = Math.min(piece.length, buffer.length);
    buffer.set(piece.subarray(0, n));
    if (n < piece.length) this.#pieces.unshift(piece.subarray(n));
    return Promise.resolve(n);
  }
  write(bytes: Uint8Array): Promise<number> {
    this.written.push(bytes.slice());
    return Promise.resolve(bytes.length);
  }
  closeWrite(): Promise<void> {
    return Promise.resolve();
  }
  close(): void {}
}

/** What svc did with the bytes: the requests its handler got, and the status it refused with. */
async function svcReading(pieces: Uint8Array[]): Promise<{
  served: ReadRequest[];
  refused: number | null;
}> {
  const served: ReadRequest[] = [];
  const socket = new ScriptedSocket(pieces);
  const connection = new Connection(socket, {
    handler: async (req) => {
      const url = new URL(req.url);
      let body: Uint8Array | "broken";
      try {
        body = new Uint8Array(await req.arrayBuffer());
      } catch {
        body = "broken";
      }
      served.push({
        method: req.method,
        path: url.pathname,
        query: url.search,
        authority: url.host,
        fields: [...req.headers],
        body,
      });
      return new Response("served", { headers: { "x-served": "1" } });
    },
    secure: false,
    trustForwardedProto: false,
    headerReadTimeoutMs: 5000,
    keepAliveTimeoutMs: 5000,
    sendTimeoutMs: 5000,
    maxStreamQueueBytes: 1 << 20,
    healthOnly: false,
  });
  await connection.serve();
  // The first answer that is not the handler's (interim 100s aside) is the connection's refusal.
  const output = socket.written.map((b) => String.fromCharCode(...b)).join("");
  let refused: number | null = null;
  for (
    const [, status, head] of output.matchAll(/HTTP\/1\.1 (\d{3}) [^\r]*\r\n([\s\S]*?)\r\n\r\n/g)
  ) {
    if (status === "100" || /(^|\r\n)x-served: 1(\r\n|$)/.test(head!)) continue;
    refused = Number(status);
    break;
  }
  return { served, refused };
}

/** The reference's reading in the terms svc's handler sees: fields as a Headers object gives them. */
function expected(bytes: Uint8Array): { served: ReadRequest[]; refused: number | null } {
  const reading = readConnection(bytes);
  return {
    refused: reading.refused,
    served: reading.served.map((r) => {
      const appended = new Headers();
      for (const [name, value] of r.fields) appended.append(name, value);
      // A Request copies its Headers as they iterate, joined and trimmed, as svc's handler sees them.
      const { headers } = new Request("http://localhost/", { headers: appended });
      // The URL's query is the target's; its host is the authority, lower-cased by URL.
      const url = new URL(`http://${r.authority || "localhost"}${r.path}${r.query}`);
      return {
        ...r,
        query: url.search,
        authority: url.host,
        fields: [...headers],
      };
    }),
  };
}

function latin1(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

/** The input, as a string a failure message can show. */
function show(bytes: Uint8Array): string {
  return JSON.stringify(String.fromCharCode(...bytes.subarray(0, 2000)));
}

async function check(bytes: Uint8Array, pieces: Uint8Array[], what: string): Promise<void> {
  const actual = await svcReading(pieces);
  const reference = expected(bytes);
  assert.deepEqual(actual, reference, `${what} (seed ${SEED}) of ${show(bytes)}`);
}

const PCHAR = "ABCXYZabcxyz0189-._~!$&'()*+,;=:@";
const OBS = "\x80\xa0\xe9\xff";

function segment(r: Random): string {
  let out = "";
  const length = 1 + r.int(6);
  for (let i = 0; i < length; i++) {
    out += r.next() < 0.1 ? `%${r.pick(["41", "2F", "5c", "2e", "20", "ff"])}` : r.pick([...PCHAR]);
  }
  // A segment of dots alone is refused on purpose by the mutations, not generated as valid.
  return /^\.+$/.test(out) ? `${out}x` : out;
}

function fieldValue(r: Random): string {
  let out = "";
  const length = r.int(12);
  for (let i = 0; i < length; i++) {
    out += r.next() < 0.1 ? r.pick([" ", "\t", ...OBS]) : r.pick([..."aZ09-_;=/,\"'(){}"]);
  }
  const pad = () => r.pick(["", " ", "\t", "  "]);
  return `${pad()}${out}${pad()}`;
}

/** A valid request: what a conforming client sends. */
function validRequest(r: Random): string {
  const minor = r.next() < 0.85 ? 1 : 0;
  const method = r.pick(["GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "FOO"]);
  let path = "";
  for (let i = 0, n = 1 + r.int(4); i < n; i++) path += `/${r.next() < 0.15 ? "" : segment(r)}`;
  const query = r.next() < 0.3 ? `?${segment(r)}=${segment(r)}/${segment(r)}?` : "";
  const absolute = r.next() < 0.1;
  const target = absolute ? `http://svc.example:8080${path}${query}` : `${path}${query}`;
  const lines = [`${method} ${target} HTTP/1.${minor}`];
  if (minor === 1 || r.next() < 0.5) lines.push(`Host: ${r.pick(["a", "svc.example:9", "[::1]"])}`);
  for (let i = 0, n = r.int(6); i < n; i++) {
    lines.push(
      `${r.pick(["X-Gen", "Accept", "x-gen", "Cookie", "Y"])}-${r.int(3)}:${fieldValue(r)}`,
    );
  }
  if (r.next() < 0.2) lines.push(`Connection: ${r.pick(["close", "keep-alive", "x, close"])}`);
  let body = "";
  if (method !== "GET" && r.next() < 0.7) {
    const data = Array.from({ length: r.int(40) }, () => r.pick([..."{}ab\r\n\x00\xff 0"])).join(
      "",
    );
    if (minor === 1 && r.next() < 0.5) {
      lines.push(`Transfer-Encoding: ${r.pick(["chunked", "Chunked", "chunked,", " , chunked"])}`);
      let rest = data;
      while (rest.length > 0) {
        const size = 1 + r.int(rest.length);
        const ext = r.next() < 0.2 ? `;x=${r.int(9)}` : "";
        body += `${size.toString(16)}${ext}\r\n${rest.slice(0, size)}\r\n`;
        rest = rest.slice(size);
      }
      body += `0\r\n${r.next() < 0.3 ? "X-Trailer: 1\r\n" : ""}\r\n`;
    } else {
      lines.push(`Content-Length: ${data.length}`);
      body = data;
    }
  }
  return `${r.next() < 0.1 ? "\r\n" : ""}${lines.join("\r\n")}\r\n\r\n${body}`;
}

/** A valid request changed where parsers are known to differ. */
function mutated(r: Random): string {
  const text = validRequest(r);
  const end = text.indexOf("\r\n\r\n");
  const at = r.int(end + 4);
  const nasty = [
    "\n",
    "\r",
    " ",
    "\t",
    ":",
    "\x00",
    "\xa0",
    "\\",
    "%",
    ".",
    ",",
    "#",
    "\x0b",
    "\r\n ",
    "\r\nTransfer-Encoding: chunked",
    "\r\nContent-Length: 3",
    "\r\nContent-Length: 5, 6",
    "\r\nTransfer-Encoding: chunked\xa0",
    "\r\nTransfer-Encoding: gzip, chunked",
    "\r\nHost: other",
    "/..",
    "/./",
    "/%2e%2E",
  ];
  switch (r.int(4)) {
    case 0:
      return text.slice(0, at) + r.pick(nasty) + text.slice(at);
    case 1:
      return text.slice(0, at) + text.slice(at + 1);
    case 2:
      return text.slice(0, at) + r.pick(nasty) + text.slice(at + 1);
    default: {
      // A field line repeated, or the method in another case.
      const lines = text.split("\r\n");
      const line = 1 + r.int(Math.max(1, lines.indexOf("") - 1));
      if (r.next() < 0.5) lines.splice(line, 0, lines[line] ?? "");
      else lines[0] = lines[0]!.replace(/^\S+/, (m) => m.toLowerCase());
      return lines.join("\r\n");
    }
  }
}

Deno.test("svc reads generated requests as the reference does: whole, pipelined and mutated", async () => {
  const r = generator(SEED);
  for (let i = 0; i < 400; i++) {
    const bytes = latin1(validRequest(r));
    await check(bytes, [bytes], `valid request ${i}`);
  }
  for (let i = 0; i < 300; i++) {
    const bytes = latin1(validRequest(r) + validRequest(r) + validRequest(r));
    await check(bytes, [bytes], `three pipelined requests ${i}`);
  }
  // The mutations reach every kind of refusal, and leave many requests served.
  const outcomes = new Map<string, number>();
  for (let i = 0; i < 3000; i++) {
    const bytes = latin1(r.next() < 0.3 ? validRequest(r) + mutated(r) : mutated(r));
    await check(bytes, [bytes], `mutated request ${i}`);
    const { refused } = readConnection(bytes);
    const outcome = refused === null ? "served" : String(refused);
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  }
  for (const [outcome, least] of [["served", 300], ["400", 300], ["501", 20]] as const) {
    assert.ok(
      (outcomes.get(outcome) ?? 0) >= least,
      `${outcome}: ${JSON.stringify([...outcomes])}`,
    );
  }
});

Deno.test("svc reads a request split at every byte boundary, or a byte a read, as a whole one", async () => {
  const r = generator(SEED + 1);
  for (let i = 0; i < 30; i++) {
    const bytes = latin1(validRequest(r) + validRequest(r));
    for (let cut = 1; cut < bytes.length; cut++) {
      await check(bytes, [bytes.subarray(0, cut), bytes.subarray(cut)], `split at ${cut}`);
    }
    const bytewise = Array.from(bytes, (b) => Uint8Array.of(b));
    await check(bytes, bytewise, "a byte a read");
  }
  for (let i = 0; i < 300; i++) {
    const bytes = latin1(mutated(r));
    const pieces: Uint8Array[] = [];
    for (let at = 0; at < bytes.length;) {
      const size = 1 + r.int(8);
      pieces.push(bytes.subarray(at, at + size));
      at += size;
    }
    await check(bytes, pieces, "a mutated request in small pieces");
  }
});

Deno.test("the reference and svc agree on the cases the adversarial review found", async () => {
  const cases = [
    "POST /health/..\\call HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}",
    "GET http://a.example:1/x?y HTTP/1.1\r\nHost: b\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked,\r\n\r\n1\r\nx\r\n0\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\xa0\r\n\r\n1\r\nx\r\n0\r\n\r\n",
    "post / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
    "GET / HTTP/1.1\nHost: a\n\n",
    `GET / HTTP/1.1\r\nHost: a\r\n${"X: 1\r\n".repeat(100)}\r\n`,
  ];
  const statuses = [400, null, null, 501, 501, 400, 431];
  for (const [i, text] of cases.entries()) {
    const bytes = latin1(text);
    await check(bytes, [bytes], `case ${i}`);
    assert.equal(readConnection(bytes).refused, statuses[i], text);
  }
});
