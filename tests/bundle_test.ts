/**
 * `deno task bundle` builds one JS file that runs with just `deno`, the host script and the default
 * configuration embedded (ARCHITECTURE Decision 10). The bundle is run from an empty directory, far
 * from the sources, with the narrow permissions the Dockerfile and the compiled binaries use: every
 * command (`--version`, `doctor`, `serve` over stdio and over HTTP) works.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { PERMISSIONS } from "../scripts/compile.ts";
import { answersOk, eventually, TEST_PWSH } from "./support/harness.ts";
import { outputWithin } from "./support/deadline.ts";

const root = new URL("../", import.meta.url).pathname;

/** The bundle, built once into an empty directory, and how to run it there. */
async function buildBundle(): Promise<{ dir: string; args: (more: string[]) => string[] }> {
  const dir = await Deno.makeTempDir({ prefix: "svc-bundle-" });
  const bundle = await outputWithin(
    Deno.execPath(),
    {
      args: ["bundle", "--platform", "deno", "-o", `${dir}/svc.js`, `${root}main.ts`],
      cwd: root,
      stdout: "null",
      stderr: "piped",
    },
    "deno bundle",
    120_000,
  );
  assert.equal(bundle.code, 0, new TextDecoder().decode(bundle.stderr));
  return {
    dir,
    args: (more) => ["run", ...PERMISSIONS, "--no-config", `${dir}/svc.js`, ...more],
  };
}

/** Lists the tools, calls the Get-Date one, and closes the client. */
async function listAndCallDate(client: Client): Promise<void> {
  try {
    const { tools } = await client.listTools();
    const date = tools.find((tool) => tool.name.startsWith("get_date"))!;
    const result = await client.callTool({ name: date.name, arguments: {} });
    assert.equal(result.isError, undefined);
  } finally {
    await client.close();
  }
}

const env = (dir: string) => ({
  ...Deno.env.toObject(),
  SVC_INVOCATION_DIR: "",
  SVC_CACHE_DIR: `${dir}/cache`,
});

Deno.test("the bundle runs on its own with narrow permissions: --version, doctor, serve over stdio and HTTP", async (t) => {
  const { dir, args } = await buildBundle();
  try {
    await t.step(
      "--version, and doctor starts a worker from the embedded host script",
      async () => {
        const run = (more: string[]) =>
          outputWithin(Deno.execPath(), {
            args: args(more),
            cwd: dir,
            env: env(dir),
            stdout: "piped",
            stderr: "piped",
          }, `the bundle run with ${more.join(" ")}`);
        const version = await run(["--version"]);
        assert.equal(version.code, 0);
        assert.match(new TextDecoder().decode(version.stdout), /^\d+\.\d+\.\d+/);
        const doctor = await run(["doctor", "--format", "json", "--pwsh", TEST_PWSH]);
        const report = JSON.parse(new TextDecoder().decode(doctor.stdout));
        assert.equal(report.configuration.path, null, "the embedded default configuration is used");
        assert.ok(
          report.pool.workers.length > 0 && report.pool.workers.every((w: { ok: boolean }) => w.ok),
        );
        assert.ok(report.tools.some((t: { command: string }) => t.command === "Get-Date"));
        // The image runs doctor at build time to have these ready for its first start (Dockerfile).
        const cached = [...Deno.readDirSync(`${dir}/cache`)].map((entry) => entry.name);
        assert.ok(cached.some((name) => /^catalog-\w+\.json$/.test(name)), cached.join(", "));
        assert.ok(cached.some((name) => /^svc-host-\w+-\w+\.dll$/.test(name)), cached.join(", "));
      },
    );

    await t.step("serve over stdio: an SDK client lists and calls", async () => {
      const client = new Client({ name: "bundle-stdio", version: "1" });
      await client.connect(
        new StdioClientTransport({
          command: Deno.execPath(),
          args: args(["serve", "--pwsh", TEST_PWSH]),
          cwd: dir,
          env: env(dir),
          stderr: "pipe",
        }),
      );
      await listAndCallDate(client);
    });

    await t.step("serve over HTTP: health, then an SDK client lists and calls", async () => {
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (listener.addr as Deno.NetAddr).port;
      listener.close();
      const server = new Deno.Command(Deno.execPath(), {
        args: args(["serve", "--transport", "http", "--port", String(port), "--pwsh", TEST_PWSH]),
        cwd: dir,
        env: env(dir),
        stdout: "null",
        stderr: "null",
      }).spawn();
      try {
        const url = `http://127.0.0.1:${port}`;
        const ready = await eventually(() => answersOk(`${url}/health/ready`), 30_000);
        assert.ok(ready, "/health/ready answers 200");
        const client = new Client({ name: "bundle-http", version: "1" });
        await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
        await listAndCallDate(client);
      } finally {
        server.kill("SIGTERM");
        assert.equal((await server.status).code, 0, "SIGTERM drains and exits 0");
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
