/**
 * HTTPS on svc's own port (`McpServer:TlsCertificatePath`, `McpServer:TlsKeyPath`): the TLS pair
 * (a PEM certificate chain and its private key) checked before svc listens, watched for a renewed
 * pair while it serves, and the server side of TLS on each connection svc accepts.
 *
 * TLS is `node:tls`, which Deno 2.9 builds on rustls: TLS 1.3 and 1.2 only, as rustls implements
 * nothing older (`minVersion` says so too). `Deno.listenTls` would do the same work natively, but its
 * pair is fixed when it binds: taking a renewed pair would mean binding the port again beside the
 * old listener (`SO_REUSEPORT`, which would let any process of svc's user, a worker included, take
 * connections from it) and resetting the connections queued on the old one. So svc accepts TCP
 * itself, as for HTTP (`http_listen.ts`, with its connection cap and its accept loop that outlives
 * EMFILE), and each connection gets TLS with the pair that is current when it is accepted.
 *
 * @module
 */
import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { Duplex } from "node:stream";
import tls from "node:tls";
import type { TlsFiles } from "./config_http.ts";
import { StartupError } from "./errors.ts";
import type { ConnectionSocket } from "./http_connection.ts";
import { logger } from "./log.ts";

const log = logger("http");

/** How often the pair's files are looked at for a change, in ms. */
const CHECK_MS = 1000;
/** Bytes of decrypted data held for the connection before TLS stops reading from the client. */
const READ_HIGH_WATER = 64 * 1024;
/** The first byte of a TLS record carrying a handshake: what a client's first bytes start with. */
const TLS_HANDSHAKE = 0x16;
const PLAIN_HTTP_SAYS = "svc serves HTTPS on this port: use an https:// URL.\r\n";
const PLAIN_HTTP_REFUSAL = new TextEncoder().encode(
  "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n" +
    `content-length: ${PLAIN_HTTP_SAYS.length}\r\n\r\n${PLAIN_HTTP_SAYS}`,
);

/** A pair that was read and checked: what a connection's TLS is set up with. */
interface Pair {
  context: tls.SecureContext;
  /** The server's certificate (the chain's first). */
  leaf: X509Certificate;
  /** The files' sizes, times and inodes when read: a change to either shows in it. */
  stamp: string;
}

/**
 * The TLS pair svc serves HTTPS with, renewed without a restart: its files are looked at every
 * second, and once a change has stood still for a look a new pair is read. A pair that cannot be
 * used (unreadable, not PEM, a key of another certificate) leaves the one in use in place, with a
 * Warning naming the file, once per change.
 */
export class TlsPair implements Disposable {
  readonly #files: TlsFiles;
  #pair: Pair;
  /** A stamp that differs from the pair's, seen at the last look: read when seen again. */
  #changed: string | null = null;
  /** The stamp of files refused already: not warned about again until they change. */
  #refused: string | null = null;
  #timer: ReturnType<typeof setInterval> | undefined;
  #checking = false;

  private constructor(files: TlsFiles, pair: Pair) {
    this.#files = files;
    this.#pair = pair;
  }

  /**
   * Reads and checks the pair, then watches its files.
   *
   * @throws {StartupError} `TLS_PAIR` naming the file that is missing, unreadable or not what it
   * should be, or the two that do not belong together; never their content.
   */
  static open(files: TlsFiles): TlsPair {
    let pair: Pair;
    try {
      pair = readPair(files, stampOf(files));
    } catch (error) {
      throw new StartupError("TLS_PAIR", `Cannot serve HTTPS: ${describe(error)}`, {
        cause: error,
      });
    }
    warnIfOutOfDate(pair.leaf, files);
    const opened = new TlsPair(files, pair);
    opened.#timer = setInterval(() => void opened.#check(), CHECK_MS);
    return opened;
  }

  /** The server's certificate in use: its subject and the end of its validity, for the log. */
  describe(): string {
    return `${
      this.#pair.leaf.subject.replaceAll("\n", ", ")
    }, valid until ${this.#pair.leaf.validToDate.toISOString()}`;
  }

  /** The server side of TLS on `conn`, with the pair in use now, as a socket for a connection. */
  wrap(conn: Deno.Conn): ConnectionSocket {
    return new TlsSocket(conn, this.#pair.context);
  }

  /** Stops watching the files. */
  [Symbol.dispose](): void {
    clearInterval(this.#timer);
  }

  async #check(): Promise<void> {
    if (this.#checking) return;
    this.#checking = true;
    try {
      const stamp = await stampOfAsync(this.#files);
      if (stamp === this.#pair.stamp || stamp === this.#refused) {
        this.#changed = null;
        return;
      }
      // A change is read once it has stood still for a look: a certificate and key written one
      // after the other are taken together, not refused in between.
      if (stamp !== this.#changed) {
        this.#changed = stamp;
        return;
      }
      this.#changed = null;
      try {
        const pair = readPair(this.#files, stamp);
        this.#pair = pair;
        this.#refused = null;
        log.info("Serving HTTPS with the renewed certificate from {Path} ({Certificate}).", {
          Path: this.#files.certificatePath,
          Certificate: this.describe(),
        });
        warnIfOutOfDate(pair.leaf, this.#files);
      } catch (error) {
        this.#refused = stamp;
        log.warning(
          "The TLS files changed but cannot be used, so svc goes on serving HTTPS with the certificate it has ({Certificate}): {Error}",
          { Certificate: this.describe(), Error: describe(error) },
        );
      }
    } finally {
      this.#checking = false;
    }
  }
}

/** The files' sizes, modification times and inodes; following links, as a mounted secret has them. */
function stampOf(files: TlsFiles): string {
  return [files.certificatePath, files.keyPath].map((path) => {
    try {
      const info = Deno.statSync(path);
      return `${info.size}:${info.mtime?.getTime()}:${info.ino}`;
    } catch {
      return "missing";
    }
  }).join("|");
}

async function stampOfAsync(files: TlsFiles): Promise<string> {
  const parts = await Promise.all([files.certificatePath, files.keyPath].map(async (path) => {
    try {
      const info = await Deno.stat(path);
      return `${info.size}:${info.mtime?.getTime()}:${info.ino}`;
    } catch {
      return "missing";
    }
  }));
  return parts.join("|");
}

/**
 * Reads the pair and checks it: a certificate chain of PEM certificates, an unencrypted PEM key,
 * and the key the first certificate's. Each failure is one sentence naming the file and its key.
 */
function readPair(files: TlsFiles, stamp: string): Pair {
  const certificate = `McpServer:TlsCertificatePath '${files.certificatePath}'`;
  const keyFile = `McpServer:TlsKeyPath '${files.keyPath}'`;
  const chain = readText(files.certificatePath, certificate);
  const keyText = readText(files.keyPath, keyFile);
  const blocks = chain.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error(`${certificate} holds no PEM certificate`);
  let leaf: X509Certificate;
  try {
    [leaf] = blocks.map((block) => new X509Certificate(block)) as [X509Certificate];
  } catch {
    throw new Error(`${certificate} holds a PEM certificate that cannot be read`);
  }
  if (keyText.includes("ENCRYPTED PRIVATE KEY") || /Proc-Type:\s*4,ENCRYPTED/.test(keyText)) {
    throw new Error(`${keyFile} is encrypted; svc needs the key unencrypted (PEM)`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(keyText);
  } catch {
    throw new Error(`${keyFile} holds no PEM private key svc can read`);
  }
  if (!leaf.checkPrivateKey(key)) {
    throw new Error(`the key in ${keyFile} is not the key of the certificate in ${certificate}`);
  }
  let context: tls.SecureContext;
  try {
    context = tls.createSecureContext({ cert: chain, key: keyText, minVersion: "TLSv1.2" });
  } catch (error) {
    throw new Error(
      `TLS cannot be set up with ${certificate} and ${keyFile}: ${
        error instanceof Error ? error.message : String(error)
      }`,
    );
  }
  return { context, leaf, stamp };
}

function readText(path: string, what: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch (error) {
    const why = error instanceof Deno.errors.NotFound
      ? "there is no such file"
      : error instanceof Deno.errors.PermissionDenied
      ? "permission denied"
      : error instanceof Deno.errors.IsADirectory
      ? "it is a directory"
      : error instanceof Error
      ? error.name
      : "it cannot be read";
    throw new Error(`${what} cannot be read: ${why}`);
  }
}

function warnIfOutOfDate(leaf: X509Certificate, files: TlsFiles): void {
  const now = Date.now();
  const until = leaf.validToDate;
  const from = leaf.validFromDate;
  if (until.getTime() < now || from.getTime() > now) {
    log.warning(
      "The certificate in {Path} is valid only from {From} to {Until}: clients will refuse it.",
      { Path: files.certificatePath, From: from.toISOString(), Until: until.toISOString() },
    );
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A TCP connection as a node stream, for `tls.TLSSocket` to run TLS over: reads pulled one at a
 * time as TLS asks for bytes, writes done in full before TLS hears they are. A first byte that
 * cannot start a TLS handshake is a plain HTTP request sent to the HTTPS port: it is told so in
 * plain HTTP and the connection closed.
 */
function streamOf(conn: Deno.Conn): Duplex {
  const buffer = new Uint8Array(16 * 1024);
  let first = true;
  return new Duplex({
    async read() {
      let n: number | null;
      try {
        n = await conn.read(buffer);
      } catch {
        n = null;
      }
      if (n !== null && first) {
        first = false;
        if (buffer[0] !== TLS_HANDSHAKE) {
          await writeAll(conn, PLAIN_HTTP_REFUSAL).catch(() => {});
          this.destroy();
          return;
        }
      }
      this.push(n === null ? null : buffer.slice(0, n));
    },
    write(chunk: Uint8Array, _encoding, done) {
      writeAll(conn, chunk).then(() => done(), (error) => done(error));
    },
    final(done) {
      conn.closeWrite().then(() => done(), () => done());
    },
    destroy(_error, done) {
      try {
        conn.close();
      } catch {
        // Closed already.
      }
      done(null);
    },
  });
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let offset = 0; offset < bytes.length;) offset += await conn.write(bytes.subarray(offset));
}

/**
 * The server side of TLS on one TCP connection, read and written as `Connection` reads and writes
 * a TCP one. A write resolves once TLS has handed its records to the TCP connection, so svc's
 * `SendTimeout` sees a client that reads nothing; a write before the handshake has finished fails,
 * since nothing can be sent to a client that never completed it.
 */
class TlsSocket implements ConnectionSocket {
  readonly #tls: tls.TLSSocket;
  #queue: Uint8Array[] = [];
  #queued = 0;
  #ended = false;
  #failed: Error | null = null;
  #secure = false;
  #wake: (() => void) | null = null;
  readonly #writes = new Set<(error: Error) => void>();

  constructor(conn: Deno.Conn, context: tls.SecureContext) {
    // allowHalfOpen: a client that ends its side after its request may still read the answer.
    this.#tls = new tls.TLSSocket(streamOf(conn), {
      isServer: true,
      secureContext: context,
      allowHalfOpen: true,
    } as tls.TLSSocketOptions);
    this.#tls.on("secure", () => this.#secure = true);
    this.#tls.on("data", (chunk: Uint8Array) => {
      this.#queue.push(chunk);
      this.#queued += chunk.length;
      if (this.#queued >= READ_HIGH_WATER) this.#tls.pause();
      this.#notify();
    });
    this.#tls.on("end", () => {
      this.#ended = true;
      this.#notify();
    });
    this.#tls.on("error", (error: Error) => {
      log.debug("A TLS connection failed: {Error}", { Error: error.message });
      this.#failed ??= error;
      this.#notify();
    });
    this.#tls.on("close", () => {
      this.#ended = true;
      const closed = this.#failed ?? new Error("The TLS connection is closed.");
      for (const reject of this.#writes) reject(closed);
      this.#writes.clear();
      this.#notify();
    });
  }

  async read(buffer: Uint8Array): Promise<number | null> {
    while (this.#queue.length === 0) {
      if (this.#failed !== null) throw this.#failed;
      if (this.#ended) return null;
      await new Promise<void>((resolve) => this.#wake = resolve);
    }
    let n = 0;
    while (n < buffer.length && this.#queue.length > 0) {
      const head = this.#queue[0]!;
      const take = Math.min(head.length, buffer.length - n);
      buffer.set(head.subarray(0, take), n);
      n += take;
      if (take === head.length) this.#queue.shift();
      else this.#queue[0] = head.subarray(take);
    }
    this.#queued -= n;
    if (this.#queued < READ_HIGH_WATER && this.#tls.isPaused()) this.#tls.resume();
    return n;
  }

  write(bytes: Uint8Array): Promise<number> {
    if (!this.#secure) {
      return Promise.reject(new Error("The TLS handshake has not completed."));
    }
    if (this.#tls.destroyed) return Promise.reject(new Error("The TLS connection is closed."));
    return new Promise((resolve, reject) => {
      const fail = (error: Error) => reject(error);
      this.#writes.add(fail);
      // TLS keeps the bytes until they are sent: a copy, as the caller's array may be a view.
      this.#tls.write(bytes.slice(), (error) => {
        this.#writes.delete(fail);
        if (error) reject(error);
        else resolve(bytes.length);
      });
    });
  }

  closeWrite(): Promise<void> {
    return new Promise((resolve) => {
      if (this.#tls.destroyed || this.#tls.writableFinished) return resolve();
      this.#tls.once("close", () => resolve());
      this.#tls.end(() => resolve());
    });
  }

  close(): void {
    this.#tls.destroy();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}
