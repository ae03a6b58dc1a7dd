/**
 * HTTP/1.1 on the wire, as pure functions: a request head parsed strictly (RFC 9112), the framing
 * of its body, chunked decoding, and a response head. Strict because svc is an origin that may sit
 * behind a proxy: anything two parsers could read two ways (both `Content-Length` and
 * `Transfer-Encoding`, differing lengths, folded lines, bare LF, a codings list) is refused with
 * 400 rather than guessed, so no request can be smuggled past the proxy's view of it.
 *
 * @module
 */

/** A request head as parsed: what {@linkcode parseHead} returns when the head is acceptable. */
export interface RequestHead {
  method: string;
  /** The request target as sent (origin form, `/path?query`). */
  target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: 0 | 1;
  /** Header fields in order, names lower-cased. */
  fields: [string, string][];
  /** How the body is framed. */
  body: BodyFraming;
  /** Whether the connection may serve another request after this one. */
  keepAlive: boolean;
  /** The client asked for `100 Continue` before it sends the body. */
  expectContinue: boolean;
}

/** No body, a body of a known length, or a chunked one. */
export type BodyFraming = { kind: "none" } | { kind: "length"; length: number } | {
  kind: "chunked";
};

/** Why a head was refused: the status to answer with, and one sentence. */
export interface HeadError {
  status: 400 | 501 | 505;
  message: string;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Field values: visible ASCII, spaces, tabs and obs-text; never CR, LF or NUL. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const TARGET = /^\/[\x21-\x7e]*$/;

/**
 * Parses a request head (the bytes before the blank line, without it) decoded as Latin-1.
 * Returns the head, or the status and sentence to refuse it with.
 */
export function parseHead(text: string): RequestHead | HeadError {
  const lines = text.split("\r\n");
  // A bare LF anywhere is read differently by lenient parsers: refuse it.
  if (lines.some((line) => line.includes("\n") || line.includes("\r"))) {
    return bad("the request head has a line not ended by CRLF");
  }
  const parts = lines[0]!.split(" ");
  if (parts.length !== 3) return bad("the request line is not 'METHOD target HTTP/1.1'");
  const [method, target, version] = parts as [string, string, string];
  if (!TOKEN.test(method)) return bad("the request method is not a token");
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
    return /^HTTP\/\d\.\d$/.test(version)
      ? { status: 505, message: `HTTP version ${version} is not supported; use HTTP/1.1.` }
      : bad("the request line's version is not HTTP/1.x");
  }
  if (!TARGET.test(target)) return bad("the request target is not an absolute path");
  const fields: [string, string][] = [];
  for (const line of lines.slice(1)) {
    if (line.startsWith(" ") || line.startsWith("\t")) {
      return bad("the request head has a folded header line");
    }
    const colon = line.indexOf(":");
    const name = colon > 0 ? line.slice(0, colon) : "";
    if (!TOKEN.test(name)) return bad("the request head has a header line without a valid name");
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
    if (!FIELD_VALUE.test(value)) return bad(`header ${name} has a control character`);
    fields.push([name.toLowerCase(), value]);
  }
  const minor = version === "HTTP/1.1" ? 1 : 0;
  const all = (name: string) => fields.filter(([n]) => n === name).map(([, v]) => v);
  const hosts = all("host");
  if (hosts.length > 1 || (minor === 1 && hosts.length === 0)) {
    return bad("the request must have exactly one Host header");
  }
  const body = framing(all("transfer-encoding"), all("content-length"), minor);
  if ("status" in body) return body;
  const connection = all("connection").join(",").toLowerCase().split(",").map((t) => t.trim());
  const keepAlive = minor === 1 ? !connection.includes("close") : connection.includes("keep-alive");
  const expect = all("expect").join(",").toLowerCase().trim();
  return {
    method,
    target,
    minor,
    fields,
    body,
    keepAlive,
    expectContinue: minor === 1 && expect === "100-continue",
  };
}

function framing(
  codings: string[],
  lengths: string[],
  minor: 0 | 1,
): BodyFraming | HeadError {
  if (codings.length > 0) {
    if (lengths.length > 0) {
      return bad("the request has both Transfer-Encoding and Content-Length");
    }
    if (minor === 0) return bad("HTTP/1.0 requests cannot use Transfer-Encoding");
    const list = codings.join(",").split(",").map((c) => c.trim().toLowerCase());
    if (list.length !== 1 || list[0] !== "chunked") {
      return { status: 501, message: "Only Transfer-Encoding: chunked is supported." };
    }
    return { kind: "chunked" };
  }
  if (lengths.length === 0) return { kind: "none" };
  const values = new Set(lengths.join(",").split(",").map((v) => v.trim()));
  const [only] = values;
  if (values.size !== 1 || !/^\d{1,15}$/.test(only!)) {
    return bad("the request's Content-Length is not one whole number");
  }
  const length = Number(only);
  return length === 0 ? { kind: "none" } : { kind: "length", length };
}

function bad(message: string): HeadError {
  return { status: 400, message: `Bad request: ${message}.` };
}

/** Reason phrases for the statuses svc answers with; others are sent with an empty reason. */
const REASONS: Record<number, string> = {
  100: "Continue",
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  304: "Not Modified",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  408: "Request Timeout",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  505: "HTTP Version Not Supported",
};

/** Fields svc sets itself from how it frames the response; a handler's values are dropped. */
const FRAMING_FIELDS = new Set(["connection", "content-length", "transfer-encoding", "keep-alive"]);

/**
 * The status line and header block of a response, ending in the blank line. `length` is the body's
 * size when known (sent as `Content-Length`), or `"chunked"`, or `"close"` (the body ends when the
 * connection does, for HTTP/1.0 streams), or `"none"` for statuses that have no body.
 */
export function responseHead(
  status: number,
  headers: Headers,
  options: { length: number | "chunked" | "close" | "none"; keepAlive: boolean; date: string },
): string {
  let head = `HTTP/1.1 ${status} ${REASONS[status] ?? ""}\r\ndate: ${options.date}\r\n`;
  for (const [name, value] of headers) {
    // Headers yields each set-cookie on its own, as the spec has it.
    if (FRAMING_FIELDS.has(name) || name === "date") continue;
    head += `${name}: ${value}\r\n`;
  }
  const { length } = options;
  if (typeof length === "number") head += `content-length: ${length}\r\n`;
  else if (length === "chunked") head += "transfer-encoding: chunked\r\n";
  head += options.keepAlive && length !== "close" ? "" : "connection: close\r\n";
  return `${head}\r\n`;
}

/** One step of decoding a chunked body: data, the end, or a need for more bytes. */
export type ChunkStep =
  | { kind: "data"; data: Uint8Array; consumed: number }
  | { kind: "end"; consumed: number }
  | { kind: "more" }
  | { kind: "error"; message: string };

/** Longest chunk-size line (with extensions) or trailer line accepted, in bytes. */
const MAX_CHUNK_LINE = 4096;

/**
 * Decodes chunked framing incrementally. Feed it the buffered bytes with {@linkcode ChunkedDecoder.step};
 * it says how many it consumed and yields body data as it goes.
 */
export class ChunkedDecoder {
  /** Bytes left in the current chunk, or -1 when a size line is expected next. */
  #left = -1;
  /** The CRLF after a chunk's data is still to come. */
  #crlf = false;
  #trailers = false;

  /** Decodes from `bytes` (which starts where the last step stopped). */
  step(bytes: Uint8Array): ChunkStep {
    if (this.#crlf) {
      if (bytes.length < 2) return { kind: "more" };
      if (bytes[0] !== 13 || bytes[1] !== 10) return chunkError("a chunk is not followed by CRLF");
      this.#crlf = false;
      return { kind: "data", data: bytes.subarray(0, 0), consumed: 2 };
    }
    if (this.#left > 0) {
      if (bytes.length === 0) return { kind: "more" };
      const take = Math.min(this.#left, bytes.length);
      this.#left -= take;
      if (this.#left === 0) {
        this.#left = -1;
        this.#crlf = true;
      }
      return { kind: "data", data: bytes.subarray(0, take), consumed: take };
    }
    const line = lineAt(bytes);
    if (line === null) {
      return bytes.length > MAX_CHUNK_LINE
        ? chunkError("a chunk line is too long")
        : { kind: "more" };
    }
    if (line === "error") return chunkError("a chunk line is not ended by CRLF");
    const consumed = line.length + 2;
    if (this.#trailers) {
      if (line === "") return { kind: "end", consumed };
      return { kind: "data", data: bytes.subarray(0, 0), consumed };
    }
    const size = /^([0-9A-Fa-f]{1,8})(?:[ \t]*;.*)?$/.exec(line);
    if (!size) return chunkError("a chunk size is not hexadecimal");
    const length = parseInt(size[1]!, 16);
    if (length === 0) {
      this.#trailers = true;
      return { kind: "data", data: bytes.subarray(0, 0), consumed };
    }
    this.#left = length;
    return { kind: "data", data: bytes.subarray(0, 0), consumed };
  }
}

function chunkError(message: string): ChunkStep {
  return { kind: "error", message: `Bad request: ${message}.` };
}

/** The Latin-1 line at the start of `bytes` without its CRLF, null if incomplete, "error" on a bare LF. */
function lineAt(bytes: Uint8Array): string | null | "error" {
  const end = Math.min(bytes.length, MAX_CHUNK_LINE + 2);
  for (let i = 0; i < end; i++) {
    if (bytes[i] === 10) {
      if (i === 0 || bytes[i - 1] !== 13) return "error";
      return latin1(bytes.subarray(0, i - 1));
    }
  }
  return null;
}

/** Bytes as Latin-1 text: every byte one character, so lengths match and nothing is replaced. */
export function latin1(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    text += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return text;
}

/**
 * Text whose characters are all below 256 (a response head: header values are byte strings) as
 * Latin-1 bytes, one byte a character. UTF-8 would send a value's bytes 0x80 to 0xFF (an `Origin`
 * echoed back, say) as two bytes each, and the head would no longer be as long as its text.
 */
export function latin1Bytes(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/** Index of the blank line (CRLF CRLF) ending a head in `bytes`, or -1. */
export function headEnd(bytes: Uint8Array, from = 0): number {
  for (let i = Math.max(0, from - 3); i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}
