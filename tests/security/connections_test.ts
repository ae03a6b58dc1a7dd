/**
 * What one connection may hold in svc (issue 28, findings 1, 2 and 5), with real sockets against a
 * real svc on real pwsh: a head that never ends is cut off by `HeaderReadTimeout`, an idle kept-alive
 * connection by `KeepAliveTimeout`; past `MaxConnections` a new connection may only ask for
 * `/health`; an event stream whose client stops reading is closed past `MaxStreamQueueBytes`, and
 * one the client cannot take at all after `SendTimeout`.
 */
import assert from "node:assert/strict";
import { rawRequest } from "./raw_http.ts";
import {
  answersOk,
  eventually,
  fixtureConfig,
  logged,
  post,
  processMemory,
  startHttpSvc,
} from "../support/harness.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };
const encoder = new TextEncoder();

async function connect(url: string): Promise<Deno.TcpConn> {
  const { hostname, port } = new URL(url);
  return await Deno.connect({ hostname, port: Number(port) });
}

/** Reads until the peer closes; the text read and the ms it took, or "open" if still open at `ms`. */
async function readUntilClosed(
  conn: Deno.Conn,
  ms: number,
): Promise<{ text: string; ms: number } | "open"> {
  const started = Date.now();
  const buffer = new Uint8Array(65_536);
  let text = "";
  const reading = (async () => {
    try {
      for (;;) {
        const n = await conn.read(buffer);
        if (n === null) break;
        text += new TextDecoder().decode(buffer.subarray(0, n));
      }
    } catch {
      // A reset is a close too.
    }
    return { text, ms: Date.now() - started };
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const open = new Promise<"open">((resolve) => timer = setTimeout(() => resolve("open"), ms));
  const result = await Promise.race([reading, open]);
  clearTimeout(timer);
  return result;
}

Deno.test("connections: a slow head gets 408 after HeaderReadTimeout, an idle one is closed after KeepAliveTimeout", async () => {
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
  const { host } = new URL(svc.url);
  // Slowloris: 20 connections each send part of a head and a byte more every 300 ms, never the end.
  const slow = await Promise.all(Array.from({ length: 20 }, () => connect(svc.url)));
  for (const conn of slow) {
    await conn.write(encoder.encode(`GET /health HTTP/1.1\r\nHost: ${host}\r\n`));
  }
  let dripping = true;
  const drip = (async () => {
    while (dripping) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const conn of slow) await conn.write(encoder.encode("X")).catch(() => 0);
    }
  })();
  const cut = await Promise.all(slow.map((conn) => readUntilClosed(conn, 20_000)));
  dripping = false;
  await drip;
  for (const result of cut) {
    assert.notEqual(result, "open", "a head that never ended was still open after 20 s");
    if (result === "open") continue;
    assert.match(result.text, /^HTTP\/1\.1 408 /);
    assert.match(result.text, /McpServer:HeaderReadTimeout/);
    // Two seconds configured; the upper bound leaves room for two busy cores.
    assert.ok(result.ms >= 1500 && result.ms < 15_000, `closed after ${result.ms} ms`);
  }
  for (const conn of slow) conn.close();

  // Keep-alive: one request answered, then nothing; svc closes the connection.
  const idle = await connect(svc.url);
  await idle.write(encoder.encode(`GET /health HTTP/1.1\r\nHost: ${host}\r\n\r\n`));
  const closed = await readUntilClosed(idle, 20_000);
  idle.close();
  assert.notEqual(closed, "open", "an idle kept-alive connection was still open after 20 s");
  if (closed !== "open") {
    assert.match(closed.text, /^HTTP\/1\.1 200 /);
    assert.ok(closed.ms >= 1500, `closed after ${closed.ms} ms, before the 2 s configured`);
  }
});

Deno.test("connections: past MaxConnections a new connection may only ask for /health", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL, MaxConnections: 4 } },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health/ready`), 60_000), svc.stderr());
  // Four idle connections take every slot (the default HeaderReadTimeout, 30 s, outlasts the test).
  const held = await Promise.all(Array.from({ length: 4 }, () => connect(svc.url)));
  try {
    // Let svc accept them before the probes below connect.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const tools = await rawRequest(svc.url, {
      method: "GET",
      path: "/tools",
      headers: { Host: new URL(svc.url).host },
    });
    assert.equal(tools.status, 503, tools.body);
    assert.match(tools.body, /McpServer:MaxConnections/);
    await logged(svc.stderr, /as many as McpServer:MaxConnections allows/);
    for (const path of ["/health", "/health/ready"]) {
      const health = await rawRequest(svc.url, {
        method: "GET",
        path,
        headers: { Host: new URL(svc.url).host },
      });
      assert.equal(health.status, 200, `${path} past the cap: ${health.body}`);
    }
  } finally {
    for (const conn of held) conn.close();
  }
  // Once they close, a call is served again.
  assert.ok(
    await eventually(async () => {
      const reply = await rawRequest(svc.url, {
        method: "GET",
        path: "/tools",
        headers: { Host: new URL(svc.url).host },
      });
      return reply.status === 200;
    }, 20_000),
  );
  const called = await post(`${svc.url}/call`, {
    tool: "get_fixture_greeting",
    arguments: { Name: "again" },
  });
  assert.equal(called.status, 200);
});

/** Opens `GET /sse` on a raw connection, reads its head and endpoint event, then stops reading. */
async function unreadStream(url: string): Promise<{ conn: Deno.TcpConn; messages: string }> {
  const conn = await connect(url);
  await conn.write(
    encoder.encode(
      `GET /sse HTTP/1.1\r\nHost: ${new URL(url).host}\r\nAccept: text/event-stream\r\n\r\n`,
    ),
  );
  const buffer = new Uint8Array(4096);
  let text = "";
  while (!/event: endpoint\r?\ndata: ([^\r\n]+)/.test(text)) {
    const n = await conn.read(buffer);
    if (n === null) throw new Error(`the stream closed: ${text}`);
    text += new TextDecoder().decode(buffer.subarray(0, n));
  }
  return { conn, messages: /event: endpoint\r?\ndata: ([^\r\n]+)/.exec(text)![1]! };
}

/** Posts `tools/list` to a legacy session until `stop` says so or `max` posts; how many were accepted. */
async function flood(
  url: string,
  messages: string,
  stop: () => boolean,
  max: number,
): Promise<number> {
  let accepted = 0;
  for (let i = 0; i < max && !stop(); i++) {
    const response = await fetch(new URL(messages, url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/list" }),
    });
    await response.body?.cancel();
    // 429: the session has as many requests waiting as it may; they are answered soon.
    if (response.status === 429) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      continue;
    }
    if (response.status !== 202) break;
    accepted++;
  }
  return accepted;
}

/** svc with the legacy SSE transport and these stream bounds, ready, its catalog built. */
async function sseSvc(bounds: { MaxStreamQueueBytes: number; SendTimeout: string }) {
  const svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: { RunspacePool: LIGHT_POOL, EnableLegacySse: true, ...bounds },
    },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health/ready`), 60_000), svc.stderr());
  // The catalog first: until it is ready, answers would wait for it and then come all at once.
  assert.ok(await answersOk(`${svc.url}/tools`));
  return svc;
}

Deno.test("connections: an event stream whose client stops reading is closed past MaxStreamQueueBytes", async () => {
  // SendTimeout long enough that the queue bound, not the stalled write, closes the stream.
  await using svc = await sseSvc({ MaxStreamQueueBytes: 1_048_576, SendTimeout: "00:05:00" });
  const { conn, messages } = await unreadStream(svc.url);
  const before = processMemory(svc.pid);
  const sent = await flood(svc.url, messages, () => /fell more than/.test(svc.stderr()), 6000);
  await logged(
    svc.stderr,
    /Closed an event stream whose client fell more than 1048576 bytes behind/,
  );
  const grown = (processMemory(svc.pid) - before) / 1024 / 1024;
  conn.close();
  // Before the bound, one unread stream and a few thousand posts grew svc by hundreds of MB.
  assert.ok(
    grown < 80,
    `svc grew ${grown.toFixed(0)} MB after ${sent} unread answers:\n${svc.stderr()}`,
  );
});

Deno.test("connections: a client that reads nothing is dropped after SendTimeout", async () => {
  await using svc = await sseSvc({ MaxStreamQueueBytes: 268_435_456, SendTimeout: "00:00:02" });
  const { conn, messages } = await unreadStream(svc.url);
  // Answers fill the socket's buffers; then a write makes no progress and the 2 s run out.
  const sent = await flood(svc.url, messages, () => false, 6000);
  assert.ok(
    await eventually(async () => await flood(svc.url, messages, () => false, 1) === 0, 30_000),
    `the session still took messages ${sent} answers later:\n${svc.stderr()}`,
  );
  conn.close();
});

Deno.test("connections: chunked bodies, 100-continue and pipelined requests on one connection", async () => {
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
  });
  assert.ok(await eventually(() => answersOk(`${svc.url}/health/ready`), 60_000), svc.stderr());
  const { host } = new URL(svc.url);
  const conn = await connect(svc.url);
  const call = JSON.stringify({ tool: "get_fixture_greeting", arguments: { Name: "chunks" } });
  const half = Math.floor(call.length / 2);
  // Expect: 100-continue, then the body in two chunks; a HEAD and a GET pipelined behind it.
  await conn.write(encoder.encode(
    `POST /call HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n`,
  ));
  const buffer = new Uint8Array(65_536);
  const first = new TextDecoder().decode(buffer.subarray(0, (await conn.read(buffer))!));
  assert.match(first, /^HTTP\/1\.1 100 Continue\r\n\r\n/);
  await conn.write(encoder.encode(
    `${half.toString(16)}\r\n${call.slice(0, half)}\r\n${(call.length - half).toString(16)}\r\n${
      call.slice(half)
    }\r\n0\r\n\r\nHEAD /health HTTP/1.1\r\nHost: ${host}\r\n\r\nGET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
  ));
  const rest = await readUntilClosed(conn, 30_000);
  conn.close();
  assert.notEqual(rest, "open");
  if (rest === "open") return;
  const answers = rest.text.split(/(?=HTTP\/1\.1 )/);
  assert.equal(answers.length, 3, rest.text);
  assert.match(answers[0]!, /^HTTP\/1\.1 200 OK\r\n[\s\S]*Hello, chunks!/);
  // svc's routes answer HEAD with 405; whatever the status, a HEAD answer has no body.
  assert.match(answers[1]!, /^HTTP\/1\.1 \d{3} [^\r]*\r\n[\s\S]*\r\n\r\n$/);
  assert.match(answers[2]!, /^HTTP\/1\.1 200 OK\r\n[\s\S]*connection: close[\s\S]*Healthy/);
});

Deno.test("connections: a body abandoned mid-way is closed soon after its 408, freeing its slot and the shutdown", async () => {
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: {
        RunspacePool: { ...LIGHT_POOL, ShutdownDrainTimeout: "00:02:00" },
        MaxConnections: 4,
        BodyReadTimeout: "00:00:02",
      },
    },
  });
  const { host } = new URL(svc.url);
  // Asked on connections that close after the answer: fetch would keep one open, taking a slot.
  const ready = async () =>
    (await rawRequest(svc.url, { method: "GET", path: "/health/ready", headers: { Host: host } }))
      .status === 200;
  assert.ok(await eventually(ready, 60_000), svc.stderr());
  // Every slot: a body promised 1000 bytes, 10 sent, then nothing, the socket kept open.
  const stalled = await Promise.all(Array.from({ length: 4 }, () => connect(svc.url)));
  for (const conn of stalled) {
    await conn.write(encoder.encode(
      `POST /call HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"tool": "`,
    ));
  }
  try {
    // Each gets its 408 and is then closed, though the client never closes nor sends again: before,
    // the connection waited for the client's next bytes with no timer and kept its slot for good.
    const answers = await Promise.all(stalled.map((conn) => readUntilClosed(conn, 20_000)));
    for (const answer of answers) {
      assert.notEqual(answer, "open", "a connection was still open 20 s after its body stalled");
      if (answer !== "open") assert.match(answer.text, /^HTTP\/1\.1 408 /);
    }
    // svc ends its side first and drains what the client still sends for a second at most.
    const served = async () =>
      (await rawRequest(svc.url, { method: "GET", path: "/tools", headers: { Host: host } }))
        .status === 200;
    assert.ok(await eventually(served, 20_000), "the stalled connections kept every slot");
    // A stalled body again, then shutdown: svc exits without waiting out ShutdownDrainTimeout.
    const again = await connect(svc.url);
    stalled.push(again);
    await again.write(encoder.encode(
      `POST /call HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"tool": "`,
    ));
    const answer = await readUntilClosed(again, 20_000);
    assert.notEqual(answer, "open");
    const stopping = Date.now();
    await svc.stop();
    // Two minutes of drain configured; the bound leaves room for two busy cores and pwsh's exit.
    assert.ok(Date.now() - stopping < 60_000, `svc took ${Date.now() - stopping} ms to stop`);
  } finally {
    for (const conn of stalled) conn.close();
  }
});
