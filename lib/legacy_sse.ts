/**
 * The deprecated HTTP+SSE transport (protocol 2024-11-05), served only when
 * `McpServer:EnableLegacySse` is true: `GET /sse` opens an event stream whose first event names the
 * endpoint for client messages, and `POST /messages?sessionId=…` delivers them. The v2 SDK has this
 * transport only for Node's HTTP objects, so this is a web-standard one. It works in both HTTP
 * modes: a legacy SSE session is a protocol connection, never a worker. A post is answered 202
 * before its request runs, so the requests a session has waiting for an answer are bounded
 * ({@linkcode MAX_PENDING_REQUESTS}): without it one client could post thousands and have svc work
 * out, and hold, every answer at once.
 *
 * @module
 */
import type {
  AuthInfo,
  JSONRPCMessage,
  MessageExtraInfo,
  Transport,
} from "@modelcontextprotocol/server";

const encoder = new TextEncoder();

/** Requests of one legacy session posted and not answered yet; past it a post gets 429. */
export const MAX_PENDING_REQUESTS = 32;

/** One SSE connection, used as an MCP `Transport` by a server instance. */
export class SseTransport implements Transport {
  /** The session id named in the endpoint event. */
  readonly sessionId: string = crypto.randomUUID();
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  #controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  #closed = false;
  readonly #endpoint: string;
  readonly #keepAlive: ReturnType<typeof setInterval>;

  /** Who opened the stream (the auth module's `ownerOf`); only they may post to it. */
  readonly owner: string;

  /** `messagesPath` is where the client posts its messages; `owner` identifies the caller. */
  constructor(messagesPath: string, owner: string) {
    this.owner = owner;
    this.#endpoint = `${messagesPath}?sessionId=${this.sessionId}`;
    // A comment line now and then keeps proxies from closing a quiet stream.
    this.#keepAlive = setInterval(() => this.#write(": keep-alive\n\n"), 15_000);
  }

  /** The response that carries the event stream. */
  response(headers: HeadersInit = {}): Response {
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
        this.#write(`event: endpoint\ndata: ${this.#endpoint}\n\n`);
      },
      cancel: () => void this.close(),
    });
    return new Response(stream, {
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers },
    });
  }

  /** Nothing to do: the stream starts with {@linkcode SseTransport.response}. */
  start(): Promise<void> {
    return Promise.resolve();
  }

  /** Ids of the requests posted and not answered yet. */
  readonly #pending = new Set<string | number>();

  /** Why the next post is refused (429), or null: {@linkcode MAX_PENDING_REQUESTS} are waiting. */
  get busy(): string | null {
    return this.#pending.size < MAX_PENDING_REQUESTS
      ? null
      : `Too many requests waiting on this SSE session: at most ${MAX_PENDING_REQUESTS}; wait for answers before posting more`;
  }

  /** Writes one message event. */
  send(message: JSONRPCMessage): Promise<void> {
    if ("id" in message && !("method" in message) && message.id !== undefined) {
      this.#pending.delete(message.id);
    }
    // JSON.stringify never emits a raw newline, so one data line per event is enough.
    this.#write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    return Promise.resolve();
  }

  /** Delivers a posted message to the server, with the caller's identity. */
  receive(message: JSONRPCMessage, authInfo: AuthInfo): void {
    for (const one of Array.isArray(message) ? message : [message]) {
      if (one && typeof one === "object" && "id" in one && "method" in one) {
        this.#pending.add(one.id);
      }
    }
    this.onmessage?.(message, { authInfo });
  }

  /** Ends the stream. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    clearInterval(this.#keepAlive);
    try {
      this.#controller?.close();
    } catch { /* already closed by the client */ }
    this.onclose?.();
    return Promise.resolve();
  }

  #write(text: string): void {
    if (this.#closed || !this.#controller) return;
    try {
      this.#controller.enqueue(encoder.encode(text));
    } catch (error) {
      this.onerror?.(error as Error);
      void this.close();
    }
  }
}
