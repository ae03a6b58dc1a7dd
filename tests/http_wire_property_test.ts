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
import {
  handedRequest,
  handlerView,
  readConnection,
  type ReadRequest,
} from "./support/http_reference.ts";
import { generator, latin1, mutated, validRequest } from "./support/http_generate.ts";

const SEED = Number(Deno.env.get("SVC_PROPERTY_SEED") ?? "20261207");

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
      served.push(await handedRequest(req));
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

/** The input, as a string a failure message can show. */
function show(bytes: Uint8Array): string {
  return JSON.stringify(String.fromCharCode(...bytes.subarray(0, 2000)));
}

async function check(bytes: Uint8Array, pieces: Uint8Array[], what: string): Promise<void> {
  const actual = await svcReading(pieces);
  const reference = handlerView(readConnection(bytes));
  assert.deepEqual(actual, reference, `${what} (seed ${SEED}) of ${show(bytes)}`);
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
