/**
 * Hand-written HTTP/1.1 requests for the security tests: fetch() cannot set `Host` or leave it out,
 * and an attacker's request is exactly what these tests need to send.
 */
import { within } from "../support/deadline.ts";

/** A parsed raw response. */
export interface RawResponse {
  status: number;
  /** Header names lowercased; repeated headers joined with ", ". */
  headers: Map<string, string>;
  body: string;
}

/**
 * Sends `method path` to the svc at `url` with exactly `headers` (no Host unless given) and reads
 * the whole response (the connection is closed by the request). A streamed answer is read until
 * `until` matches the text so far, then the connection is dropped.
 */
export async function rawRequest(
  url: string,
  request: {
    method: string;
    path: string;
    headers: Record<string, string>;
    body?: string;
    /** The `Content-Length` to declare. @default the body's size (less leaves svc waiting for the rest) */
    contentLength?: number;
    until?: RegExp;
  },
): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const body = request.body ?? "";
  const lines = [`${request.method} ${request.path} HTTP/1.1`];
  for (const [name, value] of Object.entries(request.headers)) lines.push(`${name}: ${value}`);
  if (body !== "" || request.method === "POST") {
    lines.push(`Content-Length: ${request.contentLength ?? new TextEncoder().encode(body).length}`);
  }
  lines.push("Connection: close");
  await conn.write(new TextEncoder().encode(`${lines.join("\r\n")}\r\n\r\n${body}`));
  let raw = "";
  const decoder = new TextDecoder();
  await within(
    (async () => {
      try {
        for await (const chunk of conn.readable) {
          raw += decoder.decode(chunk, { stream: true });
          if (request.until && request.until.test(raw)) break;
        }
      } catch { /* closed */ }
    })(),
    `the reply to ${request.method} ${request.path}`,
  );
  try {
    conn.close();
  } catch { /* already closed */ }
  const [head = "", ...rest] = raw.split("\r\n\r\n");
  const [statusLine = "", ...headerLines] = head.split("\r\n");
  const headers = new Map<string, string>();
  for (const line of headerLines) {
    const at = line.indexOf(":");
    const name = line.slice(0, at).trim().toLowerCase();
    const value = line.slice(at + 1).trim();
    headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value);
  }
  return { status: Number(statusLine.split(" ")[1]), headers, body: rest.join("\r\n\r\n") };
}

/**
 * Sends `request` (text as Latin-1, one byte a character, so that any byte can be sent) on a new
 * connection to `url`'s host and port and reads, as Latin-1, until the server closes it. With
 * `halfClose` the sending side is ended after the request, as some clients do.
 */
export async function exchange(
  url: string,
  request: string,
  options: { halfClose?: boolean; ms?: number } = {},
): Promise<string> {
  const { hostname, port } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const bytes = Uint8Array.from(request, (c) => c.charCodeAt(0));
  for (let offset = 0; offset < bytes.length;) offset += await conn.write(bytes.subarray(offset));
  if (options.halfClose) await conn.closeWrite();
  const text = await within(
    readToEnd(conn),
    `the answer to ${JSON.stringify(request.slice(0, 60))} and the connection's end`,
    options.ms ?? 30_000,
  );
  try {
    conn.close();
  } catch { /* already closed */ }
  return text;
}

/** Everything `conn` still delivers, as Latin-1, until the peer closes it (or resets it). */
export async function readToEnd(conn: Deno.Conn): Promise<string> {
  let text = "";
  const buffer = new Uint8Array(65_536);
  try {
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) break;
      text += String.fromCharCode(...buffer.subarray(0, n));
    }
  } catch {
    // A reset ends the reply too.
  }
  return text;
}
