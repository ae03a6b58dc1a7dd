/**
 * Generated HTTP/1.1 requests for the tests of svc's reading (the property test, the differential
 * run through nginx): valid ones, as a conforming client writes them, and mutated ones, changed
 * where parsers are known to differ. Seeded, so a failure can be replayed.
 *
 * @module
 */

/** A small, seeded generator (mulberry32): the same seed, the same requests. */
export function generator(seed: number) {
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
/** A seeded source of choices. */
export type Random = ReturnType<typeof generator>;

/** Latin-1 text as bytes, one a character. */
export function latin1(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
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
export function validRequest(r: Random): string {
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
export function mutated(r: Random): string {
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
