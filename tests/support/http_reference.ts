/**
 * A reference reading of HTTP/1.1 requests, for the tests that check svc's parser against it: RFC
 * 9112 and the rules docs/security.md states ("The request target", "Connections and file
 * descriptors"), written again from those texts, plainly and without regard to speed, and sharing
 * no code with lib/. Given the bytes a client (or a proxy) sent on one connection, it says which
 * requests a server keeping those rules serves, and with what status it refuses the rest.
 *
 * @module
 */

/** One request as the reference reads it. */
export interface ReadRequest {
  method: string;
  /** The target's path, as sent (absolute form: the path part, `/` when empty). */
  path: string;
  /** The target's query with its `?`, or "". */
  query: string;
  /** The host the request names: an absolute-form target's authority, else its Host field. */
  authority: string;
  /** Field lines in order, names lower-cased, values without surrounding spaces and tabs. */
  fields: [string, string][];
  /** The body, or "broken" when it does not arrive whole or its chunked framing is wrong. */
  body: Uint8Array | "broken";
}

/** What a server keeping svc's rules does with the bytes of one connection. */
export interface Reading {
  /** The requests it serves, in order. */
  served: ReadRequest[];
  /** The status it refuses the next request with (then it closes), or null. */
  refused: number | null;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const ORIGIN_FORM =
  /^\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*(?:\?(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*)?$/;
const AUTHORITY = /^[A-Za-z0-9.\-_~%!$&'()*+,;=:[\]]+$/;
const MAX_HEAD = 32 * 1024;
const MAX_FIELDS = 100;

function text(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => String.fromCharCode(b)).join("");
}

function ows(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value[start] === " " || value[start] === "\t")) start++;
  while (end > start && (value[end - 1] === " " || value[end - 1] === "\t")) end--;
  return value.slice(start, end);
}

function elements(values: string[]): string[] {
  return values.join(",").split(",").map(ows).filter((v) => v !== "");
}

/** The target as path, query and authority; null when svc's rules refuse it. */
function target(raw: string): { path: string; query: string; authority: string | null } | null {
  let origin = raw;
  let authority: string | null = null;
  if (!raw.startsWith("/")) {
    const absolute = /^https?:\/\/([^/?]*)(.*)$/i.exec(raw);
    if (!absolute || !AUTHORITY.test(absolute[1]!)) return null;
    authority = absolute[1]!;
    origin = absolute[2]!.startsWith("/") ? absolute[2]! : `/${absolute[2]}`;
  }
  if (!ORIGIN_FORM.test(origin)) return null;
  const q = origin.indexOf("?");
  const path = q < 0 ? origin : origin.slice(0, q);
  const dots = path.split("/").map((s) => s.replace(/%2e/gi, "."));
  if (dots.some((s) => s === "." || s === "..")) return null;
  return { path, query: q < 0 ? "" : origin.slice(q), authority };
}

/** Reads the chunked body at `at`: the data and where it ends, "broken", or "more" (incomplete). */
function chunked(bytes: Uint8Array, at: number): { data: Uint8Array; end: number } | "broken" {
  const data: number[] = [];
  let i = at;
  const line = (): string | "broken" | "more" => {
    for (let j = i; j < bytes.length && j < i + 4098; j++) {
      if (bytes[j] !== 10) continue;
      if (j === i || bytes[j - 1] !== 13) return "broken";
      const found = text(bytes.subarray(i, j - 1));
      i = j + 1;
      return found;
    }
    return bytes.length - i > 4096 ? "broken" : "more";
  };
  for (;;) {
    const size = line();
    if (size === "broken" || size === "more") return "broken";
    const hex = /^([0-9A-Fa-f]{1,8})(?:[ \t]*;.*)?$/.exec(size);
    if (!hex) return "broken";
    const length = parseInt(hex[1]!, 16);
    if (length === 0) {
      for (;;) {
        const trailer = line();
        if (trailer === "broken" || trailer === "more") return "broken";
        if (trailer === "") return { data: Uint8Array.from(data), end: i };
      }
    }
    if (i + length + 2 > bytes.length) return "broken";
    data.push(...bytes.subarray(i, i + length));
    i += length;
    if (bytes[i] !== 13 || bytes[i + 1] !== 10) return "broken";
    i += 2;
  }
}

/** What a server keeping svc's rules does with `bytes`, all a client sent on one connection. */
export function readConnection(bytes: Uint8Array): Reading {
  const served: ReadRequest[] = [];
  let at = 0;
  for (;;) {
    while (bytes[at] === 13 && bytes[at + 1] === 10) at += 2;
    if (at >= bytes.length) return { served, refused: null };
    let end = -1;
    for (let i = at; i < bytes.length; i++) {
      if (bytes[i] !== 10) continue;
      if (i === at || bytes[i - 1] !== 13) return { served, refused: 400 };
      if (i - at >= 3 && bytes[i - 2] === 10 && bytes[i - 3] === 13) {
        end = i - 3;
        break;
      }
    }
    if (end < 0) return { served, refused: bytes.length - at > MAX_HEAD ? 431 : null };
    if (end - at > MAX_HEAD) return { served, refused: 431 };
    const lines = text(bytes.subarray(at, end)).split("\r\n");
    at = end + 4;
    if (lines.some((l) => l.includes("\r"))) return { served, refused: 400 };
    if (lines.length - 1 > MAX_FIELDS) return { served, refused: 431 };
    const start = /^([^ ]+) ([^ ]+) ([^ ]+)$/.exec(lines[0]!);
    if (!start || !TOKEN.test(start[1]!)) return { served, refused: 400 };
    const [, method, rawTarget, version] = start as unknown as [string, string, string, string];
    if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
      return { served, refused: /^HTTP\/\d\.\d$/.test(version) ? 505 : 400 };
    }
    const parsed = target(rawTarget);
    if (!parsed) return { served, refused: 400 };
    const fields: [string, string][] = [];
    for (const line of lines.slice(1)) {
      const field = /^([^:]*):(.*)$/.exec(line);
      if (!field || !TOKEN.test(field[1]!)) return { served, refused: 400 };
      const value = ows(field[2]!);
      if (!VALUE.test(value)) return { served, refused: 400 };
      fields.push([field[1]!.toLowerCase(), value]);
    }
    const all = (name: string) => fields.filter(([n]) => n === name).map(([, v]) => v);
    const minor = version === "HTTP/1.1" ? 1 : 0;
    const hosts = all("host");
    if (hosts.length > 1 || (minor === 1 && hosts.length === 0)) return { served, refused: 400 };
    const codings = all("transfer-encoding");
    const lengths = all("content-length");
    let framing: "none" | "chunked" | number = "none";
    if (codings.length > 0) {
      if (lengths.length > 0 || minor === 0) return { served, refused: 400 };
      const list = elements(codings).map((c) => c.toLowerCase());
      if (list.length === 0) return { served, refused: 400 };
      if (list.length !== 1 || list[0] !== "chunked") return { served, refused: 501 };
      framing = "chunked";
    } else if (lengths.length > 0) {
      const values = new Set(lengths.join(",").split(",").map(ows));
      const [only] = values;
      if (values.size !== 1 || !/^\d{1,15}$/.test(only!)) return { served, refused: 400 };
      framing = Number(only) === 0 ? "none" : Number(only);
    }
    if (
      /^(CONNECT|TRACE|TRACK)$/i.test(method) ||
      (/^(DELETE|GET|HEAD|OPTIONS|POST|PUT)$/i.test(method) && method !== method.toUpperCase())
    ) return { served, refused: 501 };
    const authority = parsed.authority ?? hosts[0] ?? "";
    const host = authority || "localhost";
    if (!AUTHORITY.test(host) || !URL.canParse(`http://${host}/`)) {
      return { served, refused: 400 };
    }
    // An absolute-form target's authority is the request's Host (RFC 9112 §3.2.2).
    if (parsed.authority !== null) {
      const others = fields.filter(([name]) => name !== "host");
      fields.splice(0, fields.length, ...others, ["host", parsed.authority]);
    }
    const tokens = elements(all("connection")).map((t) => t.toLowerCase());
    const keepAlive = minor === 1 ? !tokens.includes("close") : tokens.includes("keep-alive");
    const request = { method, path: parsed.path, query: parsed.query, authority, fields };
    if (framing !== "none" && (method === "GET" || method === "HEAD")) {
      // Answered without its body being read, then the connection is closed.
      served.push({ ...request, body: new Uint8Array(0) });
      return { served, refused: null };
    }
    if (framing === "none") {
      served.push({ ...request, body: new Uint8Array(0) });
    } else if (framing === "chunked") {
      const body = chunked(bytes, at);
      if (body === "broken") {
        served.push({ ...request, body: "broken" });
        return { served, refused: null };
      }
      served.push({ ...request, body: body.data });
      at = body.end;
    } else {
      if (at + framing > bytes.length) {
        served.push({ ...request, body: "broken" });
        return { served, refused: null };
      }
      served.push({ ...request, body: bytes.slice(at, at + framing) });
      at += framing;
    }
    if (!keepAlive) return { served, refused: null };
  }
}

/**
 * A reading in the terms a fetch handler of svc sees it: the fields as a Request's Headers give
 * them (joined per name, sorted), the query as the URL has it, the host lower-cased.
 */
export function handlerView(reading: Reading): Reading {
  return {
    refused: reading.refused,
    served: reading.served.map((r) => {
      const appended = new Headers();
      for (const [name, value] of r.fields) appended.append(name, value);
      // A Request copies its Headers as they iterate, joined and trimmed.
      const { headers } = new Request("http://localhost/", { headers: appended });
      const url = new URL(`http://${r.authority || "localhost"}${r.path}${r.query}`);
      return { ...r, query: url.search, authority: url.host, fields: [...headers] };
    }),
  };
}

/** What a fetch handler of svc was handed, in the reference's terms (a body that fails: "broken"). */
export async function handedRequest(req: Request): Promise<ReadRequest> {
  const url = new URL(req.url);
  let body: Uint8Array | "broken";
  try {
    body = new Uint8Array(await req.arrayBuffer());
  } catch {
    body = "broken";
  }
  return {
    method: req.method,
    path: url.pathname,
    query: url.search,
    authority: url.host,
    fields: [...req.headers],
    body,
  };
}
