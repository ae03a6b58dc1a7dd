/**
 * Certificates for the HTTPS tests, made with the `openssl` command line (CI installs it): a test
 * certificate authority, and server certificates it signs for `localhost` and `127.0.0.1`, written
 * as PEM files into a directory, with a fetch that trusts that authority; and `curl`, which CI
 * installs too.
 *
 * @module
 */

/** A certificate authority made for one test, and where its files are. */
export interface TestAuthority {
  /** The directory holding every file made. */
  dir: string;
  /** The authority's certificate, PEM. */
  caPem: string;
  /** Path of the authority's certificate. */
  caPath: string;
}

/** A server certificate signed by a {@linkcode TestAuthority}. */
export interface ServerPair {
  /** The chain file: the server's certificate, then the authority's. */
  certificatePath: string;
  /** The server's private key, PEM (PKCS#8). */
  keyPath: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  const output = await new Deno.Command("openssl", {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (output.code !== 0) {
    throw new Error(`openssl ${args.join(" ")} failed: ${new TextDecoder().decode(output.stderr)}`);
  }
}

/** Makes a certificate authority in a new temporary directory. */
export async function makeAuthority(): Promise<TestAuthority> {
  const dir = await Deno.makeTempDir({ prefix: "svc-tls-" });
  await openssl([
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=svc test authority",
  ], dir);
  return { dir, caPem: await Deno.readTextFile(`${dir}/ca.pem`), caPath: `${dir}/ca.pem` };
}

/**
 * A server certificate for `localhost`, `127.0.0.1` and the `hosts` given, whose subject is
 * `CN=<name>`, signed by `authority`, as `<name>.crt` (chain) and `<name>.key` in its directory.
 */
export async function makeServerPair(
  authority: TestAuthority,
  name: string,
  hosts: string[] = [],
): Promise<ServerPair> {
  const { dir } = authority;
  await openssl([
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    `/CN=${name}`,
  ], dir);
  await Deno.writeTextFile(
    `${dir}/${name}.ext`,
    `subjectAltName=${["localhost", ...hosts].map((h) => `DNS:${h}`).join(",")},IP:127.0.0.1\n` +
      "basicConstraints=CA:FALSE\n" +
      "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
  );
  await openssl([
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
    "-out",
    `${name}.leaf`,
  ], dir);
  const chain = await Deno.readTextFile(`${dir}/${name}.leaf`) + authority.caPem;
  await Deno.writeTextFile(`${dir}/${name}.crt`, chain);
  return { certificatePath: `${dir}/${name}.crt`, keyPath: `${dir}/${name}.key` };
}

/** A fetch that trusts `authority` (and nothing else), for the SDK client and for plain requests. */
export function trustingFetch(authority: TestAuthority): typeof fetch & Disposable {
  const client = Deno.createHttpClient({ caCerts: [authority.caPem] });
  const trusting =
    ((input: RequestInfo | URL, init?: RequestInit) =>
      fetch(input, { ...init, client } as RequestInit)) as typeof fetch & Disposable;
  trusting[Symbol.dispose] = () => client.close();
  return trusting;
}

/** The subject of the certificate the server at `host:port` presents, as `openssl` prints it. */
export async function servedSubject(host: string, port: number): Promise<string> {
  const connect = await new Deno.Command("openssl", {
    args: ["s_client", "-connect", `${host}:${port}`, "-servername", "localhost"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(connect.stdout);
  return /subject=([^\n]*)/.exec(text)?.[1]?.trim() ?? `(none: ${text.slice(0, 300)})`;
}

/** Runs `curl` (silent, errors shown, at most 60 s) with `args`; its exit code and output. */
export async function curl(
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command("curl", {
    args: ["--silent", "--show-error", "--max-time", "60", ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}
