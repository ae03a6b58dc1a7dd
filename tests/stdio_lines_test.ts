import assert from "node:assert/strict";
import { jsonRpcLineFilter, type RefusedLine } from "../lib/stdio_lines.ts";

interface Outcome {
  passed: string;
  replies: Record<string, unknown>[];
  refused: [RefusedLine, number][];
}

/** Writes `chunks` through a filter and collects what it passes on, replies and refuses. */
async function filter(chunks: (string | Uint8Array)[]): Promise<Outcome> {
  const replies: Record<string, unknown>[] = [];
  const refused: [RefusedLine, number][] = [];
  const stream = jsonRpcLineFilter({
    reply: (message) => replies.push(message),
    onRefused: (reason, bytes) => refused.push([reason, bytes]),
  });
  const out: string[] = [];
  stream.on("data", (chunk: Uint8Array | string) => {
    out.push(typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk));
  });
  const ended = new Promise((resolve) => stream.on("end", resolve));
  for (const chunk of chunks) stream.write(chunk);
  stream.end();
  await ended;
  return { passed: out.join(""), replies, refused };
}

const PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}';

Deno.test("jsonRpcLineFilter() passes requests, notifications and responses on unchanged, one per line", async () => {
  const lines = [
    PING,
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    '{"jsonrpc":"2.0","id":"a","result":{}}',
    '{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}',
  ];
  const { passed, replies, refused } = await filter([lines.join("\n") + "\n"]);
  assert.equal(passed, lines.map((l) => `${l}\n`).join(""));
  assert.deepEqual(replies, []);
  assert.deepEqual(refused, []);
});

Deno.test("jsonRpcLineFilter() joins lines split across chunks, even inside a UTF-8 character", async () => {
  const bytes = new TextEncoder().encode(
    '{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"é"}}\n',
  );
  const split = bytes.indexOf(0xc3) + 1; // between the two bytes of é
  const { passed, replies } = await filter([bytes.slice(0, split), bytes.slice(split)]);
  assert.equal(passed, '{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"é"}}\n');
  assert.deepEqual(replies, []);
});

Deno.test("jsonRpcLineFilter() drops CR of CRLF line ends and empty lines, and takes a last line without newline", async () => {
  const { passed, replies } = await filter([`\n  \r\n${PING}\r\n\n${PING}`]);
  assert.equal(passed, `${PING}\n${PING}\n`);
  assert.deepEqual(replies, []);
});

Deno.test("jsonRpcLineFilter() answers a line that is not JSON with -32700, reporting its size only", async () => {
  const { passed, replies, refused } = await filter([`not json é\n${PING}\n`]);
  assert.equal(passed, `${PING}\n`, "later lines still pass");
  assert.deepEqual(replies, [{
    jsonrpc: "2.0",
    id: null,
    error: { code: -32700, message: "Parse error: the line is not JSON" },
  }]);
  assert.deepEqual(refused, [["not JSON", 11]]);
});

Deno.test("jsonRpcLineFilter() answers JSON that is not JSON-RPC with -32600, echoing a usable id", async () => {
  const { passed, replies, refused } = await filter([
    '{"id":7,"method":"ping"}\n',
    '{"jsonrpc":"1.0","id":"s","method":"ping"}\n',
    '{"jsonrpc":"2.0","id":{"no":1}}\n',
    "[1,2]\n",
    "42\n",
    "null\n",
  ]);
  assert.equal(passed, "");
  assert.deepEqual(replies.map((r) => r.id), [7, "s", null, null, null, null]);
  for (const reply of replies) {
    assert.deepEqual(reply.error, {
      code: -32600,
      message:
        'Invalid Request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0" and a "method"',
    });
  }
  assert.deepEqual(refused.map(([reason]) => reason), Array(6).fill("not JSON-RPC"));
  assert.deepEqual(refused[0], ["not JSON-RPC", 24]);
});

Deno.test("jsonRpcLineFilter() works without onRefused", async () => {
  const replies: unknown[] = [];
  const stream = jsonRpcLineFilter({ reply: (m) => replies.push(m) });
  const ended = new Promise((resolve) => stream.on("finish", resolve));
  stream.resume();
  stream.end("oops\n");
  await ended;
  assert.equal(replies.length, 1);
});

Deno.test("jsonRpcLineFilter() passes a message onMessage changed as it is now, the rest as they came", async () => {
  const stream = jsonRpcLineFilter({
    reply: () => {},
    onMessage: (message) => {
      if (message.method !== "subscriptions/listen") return false;
      message.params = { notifications: { resourceSubscriptions: ["svc://help/x"] } };
      return true;
    },
  });
  const out: string[] = [];
  stream.on("data", (chunk: Uint8Array | string) => {
    out.push(typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk));
  });
  const ended = new Promise((resolve) => stream.on("end", resolve));
  stream.write(`${PING}\n{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{}}\n`);
  stream.end();
  await ended;
  assert.equal(
    out.join(""),
    `${PING}\n{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["svc://help/x"]}}}\n`,
  );
});
