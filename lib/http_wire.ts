/**
 * HTTP/1.1 on the wire, as pure functions: a request head parsed strictly (RFC 9112), the framing
 * of its body, chunked decoding, and a response head. Strict because svc is an origin that may sit
 * behind a proxy: anything two parsers could read two ways (both `Content-Length` and
 * `Transfer-Encoding`, differing lengths, folded lines, bare LF, a codings list, a target whose path
 * readers resolve differently) is refused with 400 rather than guessed, so no request can be
 * smuggled past the proxy's view of it, nor reach a path other than the one the proxy matched.
 *
 * @module
 */

/** A request head as parsed: what {@linkcode parseHead} returns when the head is acceptable. */
export interface RequestHead {
  method: string;
  /**
   * The request target in origin form (`/path?query`), exactly as sent, or as the path and query of
   * an absolute-form target (`http://host/path?query`).
   */
  target: string;
  /**
   * The host the request names: an absolute-form target's authority, which RFC 9112 §3.2.2 puts
   * before the `Host` field, else the `Host` field's value ("" when an HTTP/1.0 request has none).
   */
  authority: string;
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
  status: 400 | 431 | 501 | 505;
  message: string;
}

/**
 * Most header field lines a request head may have; past it: 431. Turning the fields into a fetch
 * `Headers` costs time growing with the square of the distinct names (each name is looked for among
 * those before it): 5,900 of them in a 32 KiB head took 4 to 8 seconds of svc's one thread. A client
 * of svc sends about 15 and a proxy adds about 10; 100 is also where `Deno.serve` and Apache stop.
 */
const MAX_HEADER_FIELDS = 100;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Field values: visible ASCII, spaces, tabs and obs-text; never CR, LF or NUL. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Characters of a path segment or query besides `%` escapes (RFC 3986 `pchar`, plus `/` and `?`,
 * which the scan handles): unreserved, sub-delims, `:` and `@`.
 */
const PCHAR = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@") {
  PCHAR[c.charCodeAt(0)] = 1;
}
const HEX = /^[0-9A-Fa-f]{2}$/;

/**
 * Parses a request head (the bytes before the blank line, without it) decoded as Latin-1.
 * Returns the head, or the status and sentence to refuse it with. Every step is linear in the
 * head's length, so a head built to be slow costs what any head of its size does.
 */
export function parseHead(text: string): RequestHead | HeadError {
  const lines = text.split("\r\n");
  // A bare LF anywhere is read differently by lenient parsers: refuse it.
  if (lines.some((line) => line.includes("\n") || line.includes("\r"))) {
    return bad("the request head has a line not ended by CRLF");
  }
  if (lines.length - 1 > MAX_HEADER_FIELDS) {
    return {
      status: 431,
      message: `The request head has more than ${MAX_HEADER_FIELDS} header fields.`,
    };
  }
  const parts = lines[0]!.split(" ");
  if (parts.length !== 3) return bad("the request line is not 'METHOD target HTTP/1.1'");
  const [method, rawTarget, version] = parts as [string, string, string];
  if (!TOKEN.test(method)) return bad("the request method is not a token");
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
    return /^HTTP\/\d\.\d$/.test(version)
      ? { status: 505, message: `HTTP version ${version} is not supported; use HTTP/1.1.` }
      : bad("the request line's version is not HTTP/1.x");
  }
  const target = requestTarget(rawTarget);
  if (typeof target === "string") return bad(target);
  const fields: [string, string][] = [];
  for (const line of lines.slice(1)) {
    if (line.startsWith(" ") || line.startsWith("\t")) {
      return bad("the request head has a folded header line");
    }
    const colon = line.indexOf(":");
    const name = colon > 0 ? line.slice(0, colon) : "";
    if (!TOKEN.test(name)) return bad("the request head has a header line without a valid name");
    const value = trimSpace(line.slice(colon + 1));
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
  const connection = listElements(all("connection")).map((t) => t.toLowerCase());
  const keepAlive = minor === 1 ? !connection.includes("close") : connection.includes("keep-alive");
  const expect = listElements(all("expect")).map((t) => t.toLowerCase());
  return {
    method,
    target: target.originForm,
    authority: target.authority ?? hosts[0] ?? "",
    minor,
    fields,
    body,
    keepAlive,
    expectContinue: minor === 1 && expect.length === 1 && expect[0] === "100-continue",
  };
}

/**
 * A request target in origin form (RFC 9112 §3.2.1), or in absolute form (§3.2.2, which a server
 * must accept) turned into origin form and its authority; else why it is refused. The path is kept
 * as sent, never normalised, so that svc routes exactly the path a proxy in front of it matched:
 * anything two readers could take for different paths is refused instead. That is a `\` (the URL
 * parser reads it as `/`, nginx as a plain character), a dot segment (`.` or `..`, also written
 * `%2e`, which some readers remove and others keep), a character outside RFC 3986's path and query
 * (`#`, `"`, `{`, `|` …) and a `%` not followed by two hexadecimal digits.
 */
function requestTarget(
  raw: string,
): { originForm: string; authority: string | null } | string {
  if (raw.startsWith("/")) {
    const problem = originFormProblem(raw);
    return problem ?? { originForm: raw, authority: null };
  }
  const scheme = /^https?:\/\//i.exec(raw);
  if (!scheme) return "the request target is neither a path nor an http(s) URL";
  const rest = raw.slice(scheme[0].length);
  let end = rest.length;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === "/" || rest[i] === "?") {
      end = i;
      break;
    }
  }
  const authority = rest.slice(0, end);
  if (!/^[A-Za-z0-9.\-_~%!$&'()*+,;=:\[\]]+$/.test(authority)) {
    return "the request target's host is empty or not a host name, address and port";
  }
  const pathAndQuery = rest.slice(end);
  const originForm = pathAndQuery.startsWith("/") ? pathAndQuery : `/${pathAndQuery}`;
  const problem = originFormProblem(originForm);
  return problem ?? { originForm, authority };
}

/** Why `target` (starting with `/`) is not an origin-form target svc serves, or null. One pass. */
function originFormProblem(target: string): string | null {
  let inQuery = false;
  let segmentStart = 0;
  for (let i = 0; i <= target.length; i++) {
    const c = i < target.length ? target.charCodeAt(i) : -1;
    if (!inQuery && (c === 0x2f || c === 0x3f || c === -1)) {
      if (i > 0 && isDotSegment(target.slice(segmentStart, i))) {
        return "the request target has a dot segment ('.' or '..'), which readers resolve differently";
      }
      segmentStart = i + 1;
      if (c === 0x3f) inQuery = true;
      continue;
    }
    if (c === -1 || c === 0x2f || c === 0x3f) continue;
    if (c === 0x25) {
      if (!HEX.test(target.slice(i + 1, i + 3))) {
        return "the request target has a '%' not followed by two hexadecimal digits";
      }
      i += 2;
      continue;
    }
    if (c >= 128 || PCHAR[c] !== 1) {
      return `the request target has the character '${
        target[i]
      }', which a path or query cannot hold (RFC 3986)`;
    }
  }
  return null;
}

/** `.` or `..`, with any dot written as `%2e` or `%2E`. */
function isDotSegment(segment: string): boolean {
  if (segment.length === 0 || segment.length > 6) return false;
  const dots = segment.replace(/%2e/gi, ".");
  return dots === "." || dots === "..";
}

/** `value` without leading and trailing spaces and tabs (RFC 9110 OWS): nothing else is trimmed. */
function trimSpace(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value[start] === " " || value[start] === "\t")) start++;
  while (end > start && (value[end - 1] === " " || value[end - 1] === "\t")) end--;
  return value.slice(start, end);
}

/** The elements of comma-separated list fields, each trimmed of OWS, empty ones ignored (RFC 9110 §5.6.1). */
function listElements(values: string[]): string[] {
  return values.join(",").split(",").map(trimSpace).filter((element) => element !== "");
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
    const list = listElements(codings).map((c) => c.toLowerCase());
    if (list.length === 0) return bad("the request's Transfer-Encoding names no coding");
    if (list.length !== 1 || list[0] !== "chunked") {
      return { status: 501, message: "Only Transfer-Encoding: chunked is supported." };
    }
    return { kind: "chunked" };
  }
  if (lengths.length === 0) return { kind: "none" };
  // Content-Length is not a list: an empty element is as wrong as any other text.
  const values = new Set(lengths.join(",").split(",").map(trimSpace));
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

const encoder = new TextEncoder();

/** `data` as one chunk of a chunked body: its size in hexadecimal, the data, CRLF. */
export function frameChunk(data: Uint8Array): Uint8Array {
  const size = encoder.encode(`${data.length.toString(16)}\r\n`);
  const out = new Uint8Array(size.length + data.length + 2);
  out.set(size);
  out.set(data, size.length);
  out[out.length - 2] = 13;
  out[out.length - 1] = 10;
  return out;
}

let dateSecond = -1;
let dateText = "";

/** The `Date` header's value, formatted once a second. */
export function httpDate(): string {
  const now = Math.floor(Date.now() / 1000);
  if (now !== dateSecond) {
    dateSecond = now;
    dateText = new Date(now * 1000).toUTCString();
  }
  return dateText;
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

const UTF16 = new TextDecoder("utf-16le");

/**
 * Bytes as Latin-1 text: every byte one character, so lengths match and nothing is replaced. Each
 * byte is widened to a code unit below 256 (never a surrogate or a byte-order mark) and the units are
 * decoded as UTF-16 (little-endian, as every platform Deno runs on): five times as fast as building
 * the text from character codes (0.17 against 0.88 ms for a 32 KiB head).
 */
export function latin1(bytes: Uint8Array): string {
  return UTF16.decode(new Uint16Array(bytes));
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

/**
 * Where the head at the start of `bytes` ends: `end` is the index of the blank line (CRLF CRLF) that
 * ends it, or -1 while it has not arrived; `bareLf` when a line ends with LF alone before that, which
 * svc refuses at once rather than waiting for a CRLF CRLF that may never come. `from` is how far an
 * earlier call scanned.
 */
export function headEnd(bytes: Uint8Array, from = 0): { end: number } | { bareLf: true } {
  for (let i = Math.max(0, from - 3); i < bytes.length; i++) {
    if (bytes[i] !== 10) continue;
    if (i === 0 || bytes[i - 1] !== 13) return { bareLf: true };
    if (i >= 3 && bytes[i - 2] === 10 && bytes[i - 3] === 13) return { end: i - 3 };
  }
  return { end: -1 };
}
