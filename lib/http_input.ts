/**
 * What one HTTP/1.1 connection has read and not yet consumed: its socket read one read at a time
 * into a buffer that grows as little as it can, and chunked body data decoded out of it. The
 * connection (`http_connection.ts`) decides what the bytes mean and how long it waits for them.
 *
 * @module
 */
import type { ChunkedDecoder } from "./http_wire.ts";

/**
 * A connection reads into a buffer of 8 KiB, grown to 64 KiB once a read fills it: an idle
 * connection holds little (1,500 idle connections cost 92 MB with 64 KiB each from the start),
 * while a large body still arrives in few reads.
 */
const FIRST_READ_BYTES = 8 * 1024;
const READ_CHUNK = 64 * 1024;
const EMPTY = new Uint8Array(0);

/** The readable side of a socket: a TCP connection, or TLS over one. */
interface Readable {
  read(buffer: Uint8Array): Promise<number | null>;
}

/** A connection's bytes read and not consumed yet; see the module documentation. */
export class ConnectionInput {
  readonly #socket: Readable;
  #chunk = new Uint8Array(FIRST_READ_BYTES);
  #buffered: Uint8Array = EMPTY;
  #reading: Promise<boolean> | null = null;

  constructor(socket: Readable) {
    this.#socket = socket;
  }

  /**
   * The bytes read and not consumed yet. Buffered bytes are never written to once read, so a view
   * of them may be handed out until it is consumed.
   */
  get buffered(): Uint8Array {
    return this.#buffered;
  }

  /** The read in progress, if any: true when it brought bytes, false at the end of the stream. */
  get reading(): Promise<boolean> | null {
    return this.#reading;
  }

  /** Reads once more into the buffer; false at the end of the stream. One read at a time. */
  readMore(): Promise<boolean> {
    this.#reading ??= this.#socket.read(this.#chunk).then((n) => {
      this.#reading = null;
      if (n === null) return false;
      this.#append(this.#chunk.subarray(0, n));
      if (n === this.#chunk.length && n < READ_CHUNK) this.#chunk = new Uint8Array(READ_CHUNK);
      return true;
    }, () => {
      this.#reading = null;
      return false;
    });
    return this.#reading;
  }

  /**
   * Reads once into the scratch buffer and drops what came: the count, or null at the end (or on a
   * failure). Draining a client this way allocates nothing however much it sends.
   */
  readAndDrop(): Promise<number | null> {
    return this.#socket.read(this.#chunk).catch(() => null);
  }

  /** Marks `count` buffered bytes consumed. */
  consume(count: number): void {
    this.#buffered = count >= this.#buffered.length ? EMPTY : this.#buffered.subarray(count);
  }

  /** Drops everything buffered. */
  clear(): void {
    this.#buffered = EMPTY;
  }

  /** Consumes the empty lines (CRLF) before a request line, which RFC 9112 §2.2 lets a server skip. */
  skipLeadingBlankLines(): void {
    const bytes = this.#buffered;
    let i = 0;
    while (i + 1 < bytes.length && bytes[i] === 13 && bytes[i + 1] === 10) i += 2;
    if (i > 0) this.consume(i);
  }

  /**
   * Decodes every chunk (and the end) that the buffer holds, consuming it, into one array. The
   * pieces are views of the buffer until joined: nothing is written over consumed bytes meanwhile.
   */
  decodeChunks(decoder: ChunkedDecoder): { data: Uint8Array; ended: boolean } | {
    error: string;
  } {
    const parts: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const step = decoder.step(this.#buffered);
      if (step.kind === "error") return { error: step.message };
      if (step.kind === "more") break;
      this.consume(step.consumed);
      if (step.kind === "end") return { data: join(parts, size), ended: true };
      if (step.data.length > 0) {
        parts.push(step.data);
        size += step.data.length;
      }
    }
    return { data: join(parts, size), ended: false };
  }

  /**
   * Adds `bytes` after what is buffered, into the buffer's spare room when it has some, else into
   * one twice as large. Copying everything buffered on every read would cost a client sending its
   * head a byte at a time 32 KiB of copying per byte (measured: 0.6 s of CPU per connection); with
   * room to spare each byte is copied a few times at most. Only bytes past the buffered ones are
   * written: every view handed out of the buffer was copied or used before it is consumed.
   */
  #append(bytes: Uint8Array): void {
    const held = this.#buffered;
    const end = held.byteOffset + held.length;
    if (held.length > 0 && end + bytes.length <= held.buffer.byteLength) {
      new Uint8Array(held.buffer).set(bytes, end);
      this.#buffered = new Uint8Array(held.buffer, held.byteOffset, held.length + bytes.length);
      return;
    }
    const size = held.length + bytes.length;
    const grown = new Uint8Array(held.length === 0 ? size : Math.max(2 * size, 4096));
    grown.set(held);
    grown.set(bytes, held.length);
    this.#buffered = grown.subarray(0, size);
  }
}

/** `parts` (`size` bytes in all) copied into one new array. */
function join(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
