/**
 * HTTPS on svc's own port, end to end on real PowerShell: certificates the tests make with
 * `openssl`, the SDK client and `curl` calling tools, the URLs svc builds (RFC 9728 metadata, the
 * resource, the Bearer challenge) saying https all the way through an OAuth sign-in, TLS 1.2 and 1.3
 * only, a renewed pair taken without a restart and a broken one refused with a Warning, and a bad
 * pair at start named in one sentence with exit code 3.
 */
import assert from "node:assert/strict";
import {
  Client,
  ClientCredentialsProvider,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import {
  eventually,
  fixtureConfig,
  logged,
  runSvc,
  startHttpSvc,
  TEST_PWSH,
} from "./support/harness.ts";
import { startIssuer } from "./support/issuer.ts";
import {
  curl,
  makeAuthority,
  makeServerPair,
  servedSubject,
  type ServerPair,
  trustingFetch,
} from "./support/tls.ts";

const LIGHT_POOL = { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" };

function tlsArgs(pair: ServerPair): string[] {
  return ["--tls-certificate", pair.certificatePath, "--tls-key", pair.keyPath];
}

Deno.test("HTTPS: the SDK client and curl call tools over svc's own TLS port", async () => {
  const authority = await makeAuthority();
  const pair = await makeServerPair(authority, "svc-https");
  using trusting = trustingFetch(authority);
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
    args: tlsArgs(pair),
  });
  try {
    assert.match(svc.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.match(
      svc.stderr(),
      /Serving HTTPS with the certificate from \S+svc-https\.crt \(CN=svc-https, valid until/,
    );
    const port = Number(new URL(svc.url).port);
    for (const era of ["2026-07-28", "2025-11-25"] as const) {
      const client = new Client(
        { name: "https-test", version: "1" },
        era === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {},
      );
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`https://localhost:${port}/mcp`), {
          fetch: trusting,
        }),
      );
      try {
        const { tools } = await client.listTools();
        assert.ok(tools.some((t) => t.name === "get_fixture_greeting"));
        const result = await client.callTool({
          name: "get_fixture_greeting",
          arguments: { Name: `tls ${era}` },
        });
        assert.match(JSON.stringify(result.content), new RegExp(`Hello, tls ${era}!`));
      } finally {
        await client.close();
      }
    }
    const call = await curl([
      "--cacert",
      authority.caPath,
      "-H",
      "content-type: application/json",
      "--data",
      JSON.stringify({ tool: "get_fixture_greeting", arguments: { Name: "curl" } }),
      `https://localhost:${port}/call`,
    ]);
    assert.equal(call.code, 0, call.stderr);
    assert.match(call.stdout, /Hello, curl!/);
    // curl without the authority refuses svc's certificate: the TLS really is checked.
    const untrusted = await curl([`https://localhost:${port}/health`]);
    assert.notEqual(untrusted.code, 0);
    // Plain HTTP on the HTTPS port is told so, in plain HTTP.
    const plain = await curl(["--include", `http://127.0.0.1:${port}/health`]);
    assert.match(plain.stdout, /^HTTP\/1\.1 400 /);
    assert.match(plain.stdout, /svc serves HTTPS on this port: use an https:\/\/ URL/);
  } finally {
    await Deno.remove(authority.dir, { recursive: true });
  }
});

Deno.test("HTTPS: only TLS 1.2 and 1.3 are served", async () => {
  const authority = await makeAuthority();
  const pair = await makeServerPair(authority, "svc-versions");
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
    args: tlsArgs(pair),
    warm: false,
  });
  try {
    const port = new URL(svc.url).port;
    const handshake = async (version: string) => {
      const output = await new Deno.Command("openssl", {
        args: [
          "s_client",
          "-connect",
          `127.0.0.1:${port}`,
          `-${version}`,
          "-CAfile",
          authority.caPath,
        ],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      return /New, (TLSv1\.[23]), Cipher is/.exec(new TextDecoder().decode(output.stdout))?.[1] ??
        null;
    };
    assert.equal(await handshake("tls1_3"), "TLSv1.3");
    assert.equal(await handshake("tls1_2"), "TLSv1.2");
    // openssl may not even offer these (its security level); either way no session is made.
    assert.equal(await handshake("tls1_1"), null);
    assert.equal(await handshake("tls1"), null);
  } finally {
    await Deno.remove(authority.dir, { recursive: true });
  }
});

Deno.test("HTTPS: every URL svc builds says https, through an OAuth sign-in by the SDK client", async () => {
  const authority = await makeAuthority();
  const pair = await makeServerPair(authority, "svc-oauth");
  using trusting = trustingFetch(authority);
  await using issuer = await startIssuer();
  await using svc = await startHttpSvc({
    config: {
      ...fixtureConfig(),
      McpServer: { RunspacePool: LIGHT_POOL },
      Authentication: {
        Enabled: true,
        DefaultPolicy: { RequiredScopes: ["tools.call"] },
        Schemes: {
          entra: {
            Type: "JwtBearer",
            Authority: issuer.url,
            Audience: "api://svc",
            ValidIssuers: [issuer.url],
          },
        },
      },
    },
    args: tlsArgs(pair),
  });
  try {
    const base = `https://localhost:${new URL(svc.url).port}`;
    const challenge = await trusting(`${base}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    assert.equal(challenge.status, 401);
    await challenge.body?.cancel();
    assert.equal(
      challenge.headers.get("www-authenticate"),
      `Bearer scope="tools.call", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
    );
    const metadata = await (await trusting(`${base}/.well-known/oauth-protected-resource/mcp`))
      .json();
    assert.equal(metadata.resource, `${base}/mcp`);
    // The SDK client follows the challenge: metadata, token (for the https resource), call.
    const client = new Client({ name: "https-oauth", version: "1" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
        fetch: trusting,
        authProvider: new ClientCredentialsProvider({
          clientId: "svc-robot",
          clientSecret: "robot-secret-4c1d",
          expectedIssuer: issuer.url,
        }),
      }),
    );
    try {
      const result = await client.callTool({
        name: "get_fixture_greeting",
        arguments: { Name: "signed in" },
      });
      assert.match(JSON.stringify(result.content), /Hello, signed in!/);
    } finally {
      await client.close();
    }
    assert.deepEqual(issuer.tokenRequests[0], { resource: `${base}/mcp`, scope: "tools.call" });
  } finally {
    await Deno.remove(authority.dir, { recursive: true });
  }
});

Deno.test("HTTPS: a renewed pair is served without a restart; a broken one keeps the pair in use", async () => {
  const authority = await makeAuthority();
  const first = await makeServerPair(authority, "first");
  const second = await makeServerPair(authority, "second");
  const live = {
    certificatePath: `${authority.dir}/live.crt`,
    keyPath: `${authority.dir}/live.key`,
  };
  const install = async (pair: ServerPair, only?: "certificate" | "key") => {
    if (only !== "key") await Deno.copyFile(pair.certificatePath, `${live.certificatePath}.new`);
    if (only !== "certificate") await Deno.copyFile(pair.keyPath, `${live.keyPath}.new`);
    // Renamed into place, as a certificate manager writes them.
    if (only !== "key") await Deno.rename(`${live.certificatePath}.new`, live.certificatePath);
    if (only !== "certificate") await Deno.rename(`${live.keyPath}.new`, live.keyPath);
  };
  await install(first);
  await using svc = await startHttpSvc({
    config: { ...fixtureConfig(), McpServer: { RunspacePool: LIGHT_POOL } },
    args: tlsArgs(live),
    warm: false,
  });
  try {
    const port = Number(new URL(svc.url).port);
    assert.match(await servedSubject("127.0.0.1", port), /CN ?= ?first/);
    await install(second);
    assert.ok(
      await eventually(async () => /CN ?= ?second/.test(await servedSubject("127.0.0.1", port))),
      `the renewed certificate was not served: ${svc.stderr()}`,
    );
    await logged(
      svc.stderr,
      /Serving HTTPS with the renewed certificate from \S+live\.crt \(CN=second/,
    );
    // A certificate whose key is another's: refused, with a Warning; the pair in use stays.
    await install(first, "certificate");
    await logged(
      svc.stderr,
      /The TLS files changed but cannot be used, so svc goes on serving HTTPS with the certificate it has \(CN=second, [^)]*\): the key in McpServer:TlsKeyPath '[^']+live\.key' is not the key of the certificate in McpServer:TlsCertificatePath '[^']+live\.crt'/,
    );
    assert.match(await servedSubject("127.0.0.1", port), /CN ?= ?second/);
    // Then the matching key arrives too: the pair is whole again and taken.
    await install(first, "key");
    assert.ok(
      await eventually(async () => /CN ?= ?first/.test(await servedSubject("127.0.0.1", port))),
      `the completed pair was not served: ${svc.stderr()}`,
    );
    // The key's content never reaches the log.
    const keyLine = (await Deno.readTextFile(first.keyPath)).split("\n")[1]!;
    assert.ok(!svc.stderr().includes(keyLine));
  } finally {
    await Deno.remove(authority.dir, { recursive: true });
  }
});

Deno.test("HTTPS: a pair that cannot be used stops svc with exit 3, naming the file, never its content", async () => {
  const authority = await makeAuthority();
  const pair = await makeServerPair(authority, "svc-start");
  const other = await makeServerPair(authority, "svc-other");
  const dir = authority.dir;
  await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(fixtureConfig()));
  const serve = (args: string[], env: Record<string, string> = {}) =>
    runSvc(
      [
        "serve",
        "--transport",
        "http",
        "--port",
        "0",
        "--config",
        `${dir}/appsettings.json`,
        "--pwsh",
        TEST_PWSH,
        ...args,
      ],
      { env },
    );
  await Deno.writeTextFile(`${dir}/not-a-key.pem`, "-----BEGIN PRIVATE KEY-----\nnotakey\n");
  try {
    const cases: [string[], RegExp][] = [
      [
        ["--tls-certificate", `${dir}/missing.crt`, "--tls-key", pair.keyPath],
        /^svc: Cannot serve HTTPS: McpServer:TlsCertificatePath '[^']+missing\.crt' cannot be read: there is no such file$/m,
      ],
      [
        ["--tls-certificate", dir, "--tls-key", pair.keyPath],
        /McpServer:TlsCertificatePath '[^']+' cannot be read: it is a directory$/m,
      ],
      [
        ["--tls-certificate", pair.keyPath, "--tls-key", pair.keyPath],
        /McpServer:TlsCertificatePath '[^']+svc-start\.key' holds no PEM certificate$/m,
      ],
      [
        ["--tls-certificate", pair.certificatePath, "--tls-key", `${dir}/not-a-key.pem`],
        /McpServer:TlsKeyPath '[^']+not-a-key\.pem' holds no PEM private key svc can read$/m,
      ],
      [
        ["--tls-certificate", pair.certificatePath, "--tls-key", other.keyPath],
        /the key in McpServer:TlsKeyPath '[^']+svc-other\.key' is not the key of the certificate in McpServer:TlsCertificatePath '[^']+svc-start\.crt'$/m,
      ],
    ];
    const keyLines = [pair.keyPath, other.keyPath].map((path) =>
      Deno.readTextFileSync(path).split("\n")[1]!
    );
    for (const [args, message] of cases) {
      const run = await serve(args);
      assert.equal(run.code, 3, run.stderr);
      assert.match(run.stderr, message);
      assert.doesNotMatch(run.stderr, /listening on/);
      for (const line of keyLines) assert.ok(!run.stderr.includes(line), "a key's content leaked");
    }
    // One of the two alone is a configuration error: svc would otherwise serve plain HTTP.
    const alone = await serve([], { SVC_TLS_CERTIFICATE: pair.certificatePath });
    assert.equal(alone.code, 2, alone.stderr);
    assert.match(
      alone.stderr,
      /HTTPS needs both a certificate and its key: McpServer:TlsCertificatePath is set but McpServer:TlsKeyPath is not \(flag --tls-key, env SVC_TLS_KEY\)/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
