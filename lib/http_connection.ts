/**
 * One HTTP/1.1 connection: reads requests one after another, hands each to the handler as a fetch
 * `Request` and writes its `Response` back. It is where the connection's time and memory are
 * bounded, which `Deno.serve` (Deno 2.9.6) does not allow: a head must arrive within
 * `HeaderReadTimeout`, an idle kept-alive connection is closed after `KeepAliveTimeout`, a write
 * that makes no progress for `SendTimeout` closes the connection, an event stream whose client
 * falls more than `MaxStreamQueueBytes` behind is closed instead of queuing without bound, and a
 * connection closing on a client still sending is drained for a second at most. The socket is TCP
 * or TLS over it (`lib/http_tls.ts`); which one only changes the scheme of the request's URL.
 *
 * @module
 */
import {
  ChunkedDecoder,
  frameChunk,
  headEnd,
  httpDate,
  latin1,
  latin1Bytes,
  parseHead,
  type RequestHead,
  responseHead,
} from "./http_wire.ts";
import { ConnectionInput } from "./http_input.ts";
import { withWholeBody } from "./http_body.ts";
import { isEventStream } from "./http_responses.ts";
import { logger } from "./log.ts";

const log = logger("http");

/** Largest request head (request line and header fields) accepted, in bytes; past it: 431. */
const MAX_HEAD_BYTES = 32 * 1024;
/** How long, and how much, an unread body is drained before its connection is closed. */
const LINGER_MS = 1000;
const LINGER_BYTES = 4 * 1024 * 1024;
const encoder = new TextEncoder();
const CONTINUE = encoder.encode("HTTP/1.1 100 Continue\r\n\r\n");
/**
 * How often, once an HTTP/1.1 client has ended its side of the connection after a complete request,
 * svc sends it an interim `100 Continue` while the answer is being worked out. A client that only
 * half-closed reads (and ignores) it and then gets its answer; the kernel of one that closed its
 * socket altogether answers the bytes with a reset, the next write fails, and the request is
 * aborted as for any client that went away. The two cannot be told apart otherwise: both send FIN.
 */
const PROBE_MS = 1000;
/**
 * Methods fetch's `Request` upper-cases. Methods are case-sensitive (RFC 9110 §9.1), so `post` is
 * not POST: a request naming one in another case gets 501 instead of being served as another.
 */
const FETCH_NORMALISED = /^(?:DELETE|GET|HEAD|OPTIONS|POST|PUT)$/i;
/** Methods fetch's `Request` refuses in any case (it would throw, and the client get no answer). */
const FETCH_FORBIDDEN = /^(?:CONNECT|TRACE|TRACK)$/i;
/** A host, optionally with a port: no `/`, `@`, `?`, `#` or `\` that would change the URL's shape. */
const HOST = /^[A-Za-z0-9.\-_~%!$&'()*+,;=:\[\]]+$/;

/** What a connection reads and writes: a TCP connection (a `Deno.Conn`), or TLS over one. */
export interface ConnectionSocket {
  /** Reads into `buffer`; the count read, or null at the end of the stream. */
  read(buffer: Uint8Array): Promise<number | null>;
  /** Writes some of `bytes`, resolving with how many. */
  write(bytes: Uint8Array): Promise<number>;
  /** Ends the sending side; reading goes on. */
  closeWrite(): Promise<void>;
  /** Closes both sides at once. */
  close(): void;
}

/** How a connection is bounded and what it serves. */
export interface ConnectionOptions {
  handler: (req: Request) => Response | Promise<Response>;
  /** The connection is TLS: request URLs, and every URL svc builds from them, say `https`. */
  secure: boolean;
  /**
   * A request's one `X-Forwarded-Proto` of `http` or `https` names its URL's scheme, as a proxy
   * terminating TLS in front of svc says (`McpServer:TrustForwardedProto`).
   */
  trustForwardedProto: boolean;
  /** Time for a request head to arrive, in ms (`McpServer:HeaderReadTimeout`). */
  headerReadTimeoutMs: number;
  /** Time an idle connection is kept open between requests, in ms (`McpServer:KeepAliveTimeout`). */
  keepAliveTimeoutMs: number;
  /** Time a write may make no progress before the connection is closed, in ms (`McpServer:SendTimeout`). */
  sendTimeoutMs: number;
  /** Most bytes of an event stream queued for a slow client (`McpServer:MaxStreamQueueBytes`). */
  maxStreamQueueBytes: number;
  /**
   * Only `/health` and `/health/ready` are served (the connection is past `MaxConnections`); any
   * other request gets 503 and the connection is closed.
   */
  healthOnly: boolean;
}

/** Serves one accepted connection until it closes; see the module documentation. */
export class Connection {
  readonly #conn: ConnectionSocket;
  readonly #options: ConnectionOptions;
  readonly #input: ConnectionInput;
  #closed = false;
  /** Waiting for the next request: {@linkcode closeIfIdle} may close at once. */
  #idle = true;
  #stopping = false;
  /** Aborts the request in flight when the connection closes before its response is sent. */
  #inFlight: AbortController | null = null;
  /** Cancels the event stream being sent, so that its producer learns the client is gone. */
  #cancelStream: (() => void) | null = null;
  /** The client ended its side of the connection (FIN) while its request was served. */
  #peerEnded = false;
  /** The answer to the request in flight has started: no interim response may follow. */
  #answering = false;
  /** The answer is an event stream, sent as it is produced. */
  #streaming = false;
  /** Sends `100 Continue` while a client that ended its side waits (see {@linkcode PROBE_MS}). */
  #probeTimer: ReturnType<typeof setInterval> | undefined;
  #probing: Promise<void> | null = null;

  constructor(conn: ConnectionSocket, options: ConnectionOptions) {
    this.#conn = conn;
    this.#input = new ConnectionInput(conn);
    this.#options = options;
  }

  /** Serves requests until the client closes, a bound is hit or the server stops. Never rejects. */
  async serve(): Promise<void> {
    try {
      let first = true;
      while (!this.#closed && !this.#stopping) {
        const keepAlive = await this.#serveOne(first);
        first = false;
        if (!keepAlive) break;
      }
    } catch (error) {
      log.debug("A connection ended: {Error}", { Error: describe(error) });
    } finally {
      this.close();
    }
  }

  /** Stops after the response in progress; closes at once if between requests. */
  closeIfIdle(): void {
    this.#stopping = true;
    if (this.#idle) this.close();
  }

  /** Closes the connection; a request in flight sees its signal aborted. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#probeTimer);
    this.#inFlight?.abort(new DOMException("The client connection closed.", "AbortError"));
    this.#cancelStream?.();
    try {
      this.#conn.close();
    } catch {
      // Already closed by the peer's reset.
    }
  }

  /** Serves one request; true when the connection may serve another. */
  async #serveOne(first: boolean): Promise<boolean> {
    const head = await this.#readHead(first);
    if (head === null) return false;
    if ("status" in head) {
      await this.#sendPlain(head.status, head.message);
      return false;
    }
    this.#idle = false;
    const controller = new AbortController();
    this.#inFlight = controller;
    try {
      if (
        FETCH_FORBIDDEN.test(head.method) ||
        (FETCH_NORMALISED.test(head.method) && head.method !== head.method.toUpperCase())
      ) {
        await this.#sendPlain(501, `The request method ${head.method} is not supported.`);
        return false;
      }
      const request = this.#request(head, controller.signal);
      if (request === null) {
        await this.#sendPlain(400, "Bad request: the Host header is not a host name or address.");
        return false;
      }
      if (this.#options.healthOnly && !/^\/health(\/ready)?(\?|$)/.test(head.target)) {
        await this.#sendPlain(
          503,
          "svc has as many connections open as McpServer:MaxConnections allows; try again later.",
        );
        return false;
      }
      let response: Response;
      try {
        response = await this.#options.handler(request.request);
      } catch (error) {
        log.error("A request failed: {Error}", { Error: describe(error) });
        response = new Response("Internal error.", { status: 500 });
      }
      const bodyRead = request.bodyRead();
      // A client that ended its side may have sent a next request before it did; else none can come.
      const more = !this.#peerEnded || this.#input.buffered.length > 0;
      const reusable = head.keepAlive && !this.#options.healthOnly && bodyRead && more;
      const again = await this.#send(head, response, reusable);
      if (!bodyRead) await this.#linger();
      return again && !this.#stopping;
    } finally {
      clearInterval(this.#probeTimer);
      this.#probeTimer = undefined;
      this.#answering = false;
      this.#streaming = false;
      this.#inFlight = null;
      this.#idle = true;
    }
  }

  /** Reads the next head: null when the client closed or stayed idle past the keep-alive time. */
  async #readHead(
    first: boolean,
  ): Promise<RequestHead | { status: 400 | 408 | 431 | 501 | 505; message: string } | null> {
    const { headerReadTimeoutMs, keepAliveTimeoutMs } = this.#options;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let wake: (() => void) | undefined;
    const late = new Promise<"late">((resolve) => wake = () => resolve("late"));
    const arm = (ms: number) => {
      clearTimeout(timer);
      timer = setTimeout(() => wake?.(), ms);
    };
    // On the keep-alive clock until the first byte of the next request, then on the head's: once.
    let idleClock = !this.#options.healthOnly && !first && this.#input.buffered.length === 0;
    arm(
      this.#options.healthOnly
        ? Math.min(1000, headerReadTimeoutMs)
        : idleClock
        ? keepAliveTimeoutMs
        : headerReadTimeoutMs,
    );
    let scanned = 0;
    try {
      for (;;) {
        this.#input.skipLeadingBlankLines();
        const found = headEnd(this.#input.buffered, scanned);
        if ("bareLf" in found) {
          return {
            status: 400,
            message: "Bad request: the request head has a line not ended by CRLF.",
          };
        }
        const { end } = found;
        // A head that arrived whole in one read is measured too, not only one still arriving.
        if (end > MAX_HEAD_BYTES || (end < 0 && this.#input.buffered.length > MAX_HEAD_BYTES)) {
          return {
            status: 431,
            message: `The request head is larger than ${MAX_HEAD_BYTES} bytes.`,
          };
        }
        if (end >= 0) {
          const text = latin1(this.#input.buffered.subarray(0, end));
          this.#input.consume(end + 4);
          return parseHead(text);
        }
        scanned = this.#input.buffered.length;
        const more = await Promise.race([this.#input.readMore(), late]);
        if (more === "late") {
          return idleClock ? null : {
            status: 408,
            message: "The request head did not arrive within McpServer:HeaderReadTimeout.",
          };
        }
        if (!more) return null;
        // The first byte of a request starts its head's own clock. Blank lines before a request
        // line count as its first bytes: were they to re-arm the clock, a client sending CRLF now
        // and then would hold the connection past both timeouts.
        if (idleClock && this.#input.buffered.length > 0) {
          idleClock = false;
          arm(headerReadTimeoutMs);
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** The fetch `Request` for a head, with a body that reads from the connection; null for a bad Host. */
  #request(
    head: RequestHead,
    signal: AbortSignal,
  ): { request: Request; bodyRead: () => boolean } | null {
    // At most 100 fields (http_wire.ts): building Headers costs the square of the distinct names.
    const headers = new Headers();
    for (const [name, value] of head.fields) headers.append(name, value);
    // An absolute-form target names the host, before the Host field (RFC 9112 §3.2.2).
    if (head.authority !== "") headers.set("host", head.authority);
    const host = head.authority || "localhost";
    if (!HOST.test(host)) return null;
    let url: string;
    try {
      // The target is origin form with no dot segment or `\` (http_wire.ts): the URL's path is the
      // target's path, byte for byte, as a proxy in front of svc saw it.
      url = new URL(`${this.#scheme(head)}://${host}${head.target}`).href;
    } catch {
      return null;
    }
    if (head.body.kind === "none" || head.method === "GET" || head.method === "HEAD") {
      // A GET or HEAD with a body is answered without reading it, then the connection is closed.
      const read = head.body.kind === "none";
      if (read) this.#watchForClose(signal, head);
      return {
        request: new Request(url, { method: head.method, headers, signal }),
        bodyRead: () => read,
      };
    }
    if (
      head.body.kind === "length" && !head.expectContinue &&
      this.#input.buffered.length >= head.body.length
    ) {
      // The whole body came with the head (a small POST, the usual case): it is taken as it is,
      // rather than through a stream pulled piece by piece, and the connection is free to watch.
      const bytes = this.#input.buffered.slice(0, head.body.length);
      this.#input.consume(head.body.length);
      this.#watchForClose(signal, head);
      const request = new Request(url, { method: head.method, headers, body: bytes, signal });
      return { request: withWholeBody(request, bytes), bodyRead: () => true };
    }
    const body = this.#body(head, signal);
    return {
      request: new Request(url, { method: head.method, headers, body: body.stream, signal }),
      bodyRead: () => body.done(),
    };
  }

  /** The scheme the client used: TLS or not, or what a trusted proxy says it was. */
  #scheme(head: RequestHead): "http" | "https" {
    const own = this.#options.secure ? "https" : "http";
    if (!this.#options.trustForwardedProto) return own;
    const given = head.fields.filter(([name]) => name === "x-forwarded-proto");
    // Anything but one plain value (a list from proxies in a row, a typo) is not taken.
    const value = given.length === 1 ? given[0]![1].toLowerCase() : "";
    return value === "https" || value === "http" ? value : own;
  }

  /** A body stream that reads the framed body from the connection as it is pulled. */
  #body(
    head: RequestHead,
    signal: AbortSignal,
  ): { stream: ReadableStream<Uint8Array>; done: () => boolean } {
    let done = false;
    let continued = !head.expectContinue;
    let left = head.body.kind === "length" ? head.body.length : 0;
    const decoder = head.body.kind === "chunked" ? new ChunkedDecoder() : null;
    const finish = (controller: ReadableStreamDefaultController<Uint8Array>) => {
      done = true;
      controller.close();
      this.#watchForClose(signal, head);
    };
    const stream = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        if (!continued) {
          continued = true;
          await this.#write(CONTINUE);
        }
        for (;;) {
          if (decoder === null) {
            if (this.#input.buffered.length > 0) {
              const take = Math.min(left, this.#input.buffered.length);
              // Buffered arrays are never written to once read, so a view is safe to hand out.
              controller.enqueue(this.#input.buffered.subarray(0, take));
              this.#input.consume(take);
              left -= take;
              if (left === 0) finish(controller);
              return;
            }
          } else {
            // Every chunk buffered goes out as one piece: a body of one-byte chunks handed on a
            // chunk a pull cost a second of CPU per million chunks.
            const decoded = this.#input.decodeChunks(decoder);
            if ("error" in decoded) {
              controller.error(new Error(decoded.error));
              return;
            }
            if (decoded.data.length > 0) controller.enqueue(decoded.data);
            if (decoded.ended) return finish(controller);
            if (decoded.data.length > 0) return;
          }
          if (!await this.#input.readMore()) {
            controller.error(new Error("The client closed the connection before the body ended."));
            return;
          }
        }
      },
    }, { highWaterMark: 0 });
    return { stream, done: () => done };
  }

  /**
   * Reads on while a complete request is served so that a client that goes away aborts it (as
   * `Deno.serve`'s `request.signal` does). Bytes of a next, pipelined request are kept for it, up to
   * a head's size. The end of the client's stream is not yet its departure: a client may half-close
   * after its request and wait for the answer (see {@linkcode PROBE_MS}). Once an event stream has
   * started, it is: the stream has no end for such a client to wait for, and a slot held by a
   * client that is gone would never be given back.
   */
  #watchForClose(signal: AbortSignal, head: RequestHead): void {
    const watch = async () => {
      while (!signal.aborted && this.#inFlight?.signal === signal && !this.#closed) {
        if (this.#input.buffered.length > MAX_HEAD_BYTES) return;
        if (!await this.#input.readMore()) {
          if (this.#inFlight?.signal !== signal) return;
          if (this.#streaming) return this.close();
          this.#peerEnded = true;
          // 1xx responses may not be sent to an HTTP/1.0 client (RFC 9110 §15.2).
          if (head.minor === 1 && !this.#answering) {
            this.#probeTimer = setInterval(() => this.#probe(), PROBE_MS);
          }
          return;
        }
      }
    };
    void watch();
  }

  /** Sends one interim `100 Continue` unless the answer has started; a failed write closes. */
  #probe(): void {
    if (this.#closed || this.#answering || this.#probing !== null) return;
    this.#probing = this.#write(CONTINUE).catch(() => this.close()).finally(() => {
      this.#probing = null;
    });
  }

  /** Writes the response; true when the connection may serve another request. */
  async #send(head: RequestHead, response: Response, reusable: boolean): Promise<boolean> {
    this.#answering = true;
    clearInterval(this.#probeTimer);
    await this.#probing;
    const { status } = response;
    const bodiless = head.method === "HEAD" || status === 204 || status === 304;
    const streamed = isEventStream(response);
    if (bodiless || response.body === null) {
      await response.body?.cancel().catch(() => {});
      await this.#write(latin1Bytes(responseHead(status, response.headers, {
        length: bodiless ? "none" : 0,
        keepAlive: reusable,
        date: httpDate(),
      })));
      return reusable;
    }
    if (!streamed) {
      const body = new Uint8Array(await response.arrayBuffer());
      const head = latin1Bytes(responseHead(status, response.headers, {
        length: body.length,
        keepAlive: reusable,
        date: httpDate(),
      }));
      const bytes = new Uint8Array(head.length + body.length);
      bytes.set(head);
      bytes.set(body, head.length);
      await this.#write(bytes);
      return reusable;
    }
    const chunked = head.minor === 1;
    // Once a stream is under way, the client's end of its stream is its departure (#watchForClose).
    this.#streaming = true;
    await this.#write(latin1Bytes(responseHead(status, response.headers, {
      length: chunked ? "chunked" : "close",
      keepAlive: reusable && chunked,
      date: httpDate(),
    })));
    await this.#pump(response.body, chunked);
    return reusable && chunked;
  }

  /**
   * Sends an event stream as it is produced. The stream is read at once, whatever the client reads,
   * so that what waits for the client is counted here: past `MaxStreamQueueBytes` the connection is
   * closed and the stream cancelled, rather than growing svc without bound.
   */
  async #pump(body: ReadableStream<Uint8Array>, chunked: boolean): Promise<void> {
    // Streams built by hand may carry text; the SDK's carry bytes.
    const reader = (body as ReadableStream<Uint8Array | string>).getReader();
    const queue: Uint8Array[] = [];
    let queued = 0;
    let ended = false;
    let wake: (() => void) | null = null;
    const produce = async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          const bytes = typeof value === "string" ? encoder.encode(value) : value;
          queue.push(bytes);
          queued += bytes.length;
          if (queued > this.#options.maxStreamQueueBytes && queue.length > 1) {
            // Closed here, not by the writer: it is the one waiting on the client.
            log.warning(
              "Closed an event stream whose client fell more than {Bytes} bytes behind (McpServer:MaxStreamQueueBytes).",
              { Bytes: this.#options.maxStreamQueueBytes },
            );
            this.close();
            break;
          }
          wake?.();
        }
      } catch {
        // The stream was cancelled (client gone) or failed: the response ends either way.
      }
      ended = true;
      wake?.();
    };
    const producing = produce();
    this.#cancelStream = () => {
      reader.cancel().catch(() => {});
      wake?.();
    };
    try {
      while (!this.#closed) {
        const next = queue.shift();
        if (next === undefined) {
          if (ended) break;
          await new Promise<void>((resolve) => wake = resolve);
          wake = null;
          continue;
        }
        queued -= next.length;
        if (next.length === 0) continue;
        await this.#write(chunked ? frameChunk(next) : next);
      }
      if (chunked) await this.#write(encoder.encode("0\r\n\r\n"));
    } finally {
      this.#cancelStream = null;
      await reader.cancel().catch(() => {});
      await producing;
    }
  }

  /**
   * Before closing on a client still sending a body nobody read (a 401 or 413 answered early),
   * reads and drops what it sends for a moment: closing with unread bytes makes the kernel reset
   * the connection, and the client could lose the answer already sent.
   */
  async #linger(): Promise<void> {
    try {
      await this.#conn.closeWrite();
    } catch {
      return;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), LINGER_MS));
    try {
      // A read started before (by a body stream) finishes first, within the same second: a client
      // that stopped sending mid-body and keeps its socket open would otherwise hold the connection
      // (and its MaxConnections slot) for good. Then bytes are read into the one scratch buffer and
      // dropped, so draining allocates nothing however much the client sends.
      const reading = this.#input.reading;
      if (reading !== null && await Promise.race([reading, late]) === null) return;
      this.#input.clear();
      for (let dropped = 0; dropped < LINGER_BYTES;) {
        const n = await Promise.race([this.#input.readAndDrop(), late]);
        if (n === null) return;
        dropped += n;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** Answers with a short text and closes after it. */
  async #sendPlain(status: number, message: string): Promise<void> {
    const body = encoder.encode(message);
    const headers = new Headers({ "content-type": "text/plain; charset=utf-8" });
    const head = responseHead(status, headers, {
      length: body.length,
      keepAlive: false,
      date: httpDate(),
    });
    await this.#write(new Uint8Array([...latin1Bytes(head), ...body])).catch(() => {});
  }

  /** Writes all of `bytes`; a write that makes no progress for `SendTimeout` closes the connection. */
  async #write(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < bytes.length) {
      if (this.#closed) throw new Error("The connection is closed.");
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stalled = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          this.close();
          reject(new Error("The client read nothing within McpServer:SendTimeout."));
        }, this.#options.sendTimeoutMs);
      });
      try {
        offset += await Promise.race([this.#conn.write(bytes.subarray(offset)), stalled]);
      } finally {
        clearTimeout(timer);
      }
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
