/**
 * The SDK floor: the smallest server on svc's own stack (MCP TypeScript SDK v2 `Server`,
 * `createMcpHandler` over `Deno.serve` for HTTP, `serveStdio` for stdio) with one tool, `get_date`
 * (title `Get-Date`), that returns a constant shaped like svc's Get-Date result. Whatever svc adds on
 * top of this (pool, worker control channel, argument binding, result shaping, logging) is svc's own
 * cost. Also serves `GET /raw` (a constant text: the loopback HTTP floor) and `GET /health`.
 *
 * With `--payload` it also offers `get_fixture_large_result` (a string of `Kilobytes` KB), so P5 can
 * show what large results cost on the bare SDK stack.
 *
 * Usage: `deno run -A bench/floor_server.ts --transport http|stdio [--port 0] [--host 127.0.0.1]
 * [--payload]`.
 * Over HTTP it logs `floor listening on http://<host>:<port>` to stderr. SIGTERM/SIGINT stop it.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createMcpHandler, Server } from "@modelcontextprotocol/server";
import type { CallToolResult, Tool } from "@modelcontextprotocol/server";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";

const DATE = "2026-01-01T00:00:00.00+00:00";

const TOOL: Tool = {
  name: "get_date",
  title: "Get-Date",
  description: "Returns a constant date (the SDK floor).",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
};

/** With `--payload`: a second tool shaped like svc's Get-FixtureLargeResult, for P5's floor rows. */
const LARGE: Tool = {
  name: "get_fixture_large_result",
  title: "Get-FixtureLargeResult",
  description: "Returns one string of Kilobytes × 1024 'x' (the SDK floor for payload sizes).",
  inputSchema: {
    type: "object",
    properties: { Kilobytes: { type: "integer" } },
    required: ["Kilobytes"],
  },
  annotations: { readOnlyHint: true },
};

function buildServer(): Server {
  const server = new Server(
    { name: "svc-bench-floor", version: "1.0.0" },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.setRequestHandler(
    "tools/list",
    () => ({ tools: values.payload ? [TOOL, LARGE] : [TOOL] }),
  );
  server.setRequestHandler("tools/call", (request): CallToolResult => {
    if (values.payload && request.params.name === LARGE.name) {
      const kb = Number(request.params.arguments?.Kilobytes ?? 0);
      const text = "x".repeat(Math.max(0, Math.min(kb, 64 * 1024)) * 1024);
      return {
        content: [{ type: "text", text: JSON.stringify([text]) }],
        structuredContent: { output: [text] },
      };
    }
    if (request.params.name !== TOOL.name) {
      return {
        content: [{ type: "text", text: `Unknown tool: ${request.params.name}` }],
        isError: true,
      };
    }
    return {
      content: [{ type: "text", text: JSON.stringify([DATE]) }],
      structuredContent: { output: [DATE] },
    };
  });
  return server;
}

function log(text: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(`${text}\n`));
}

const { values } = parseArgs({
  args: Deno.args,
  options: {
    transport: { type: "string", default: "http" },
    port: { type: "string", default: "0" },
    host: { type: "string", default: "127.0.0.1" },
    payload: { type: "boolean", default: false },
  },
  strict: true,
});

const stop = new Promise<void>((resolve) => {
  for (const sig of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(sig, () => resolve());
});

/** A stdio transport that says when the connection ends (stdin closed), so the process can exit. */
class EndingStdioTransport extends StdioServerTransport {
  readonly ended: Promise<void>;
  #end!: () => void;
  constructor() {
    super();
    this.ended = new Promise((resolve) => (this.#end = resolve));
  }
  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      this.#end();
    }
  }
}

if (values.transport === "stdio") {
  const transport = new EndingStdioTransport();
  const handle = serveStdio(() => buildServer(), { transport, onerror: () => {} });
  await Promise.race([stop, transport.ended]);
  await handle.close().catch(() => {});
  Deno.exit(0);
} else {
  const handler = createMcpHandler(() => buildServer(), {
    legacy: "stateless",
    responseMode: "auto",
    onerror: () => {},
  });
  const server = Deno.serve({
    hostname: values.host,
    port: Number(values.port),
    onListen: (addr) => log(`floor listening on http://${addr.hostname}:${addr.port}`),
  }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/raw") return new Response("ok");
    if (path === "/health") {
      return Response.json({ status: "Healthy" }, { headers: { "cache-control": "no-store" } });
    }
    return handler.fetch(req);
  });
  await stop;
  await handler.close().catch(() => {});
  await server.shutdown();
  Deno.exit(0);
}
