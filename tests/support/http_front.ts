/**
 * Test support for the HTTP front's unit tests, which call its parts with a `new Request(...)`:
 * settings read the ordinary way from a configuration file, tool runners over hand-built
 * descriptors (no worker: the parts under test map a call's outcome, they do not run it), and
 * requests addressed to svc's default Host.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import type { Principal } from "../../lib/auth.ts";
import type { ToolDescriptor } from "../../lib/tool_descriptor.ts";
import { loadSettings, type Settings } from "../../lib/config.ts";
import type { McpServerOptions } from "../../lib/mcp.ts";
import type { ToolRunner } from "../../lib/call.ts";
import { HttpError } from "../../lib/http_errors.ts";

/** Settings from `config` as an `appsettings.json`, with an empty environment. */
export async function settingsOf(config: Record<string, unknown> = {}): Promise<Settings> {
  const dir = await Deno.makeTempDir({ prefix: "svc-http-unit-" });
  try {
    const path = `${dir}/appsettings.json`;
    await Deno.writeTextFile(path, JSON.stringify(config));
    return await loadSettings({ config: path }, { env: {}, cwd: dir });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * A runner offering `tools`; `withWorker` is what lending a worker does, by default a refusal (the
 * tests reach it only when the pool is what they are about).
 */
export function runnerOf(
  tools: ToolDescriptor[],
  withWorker: ToolRunner["withWorker"] = () => Promise.reject(new Error("no worker in unit tests")),
): ToolRunner {
  return { tools: () => Promise.resolve(tools), withWorker };
}

/** MCP options of `settings` over `runner`; `authorize` as given, else every tool to everyone. */
export function mcpOptionsOf(
  settings: Settings,
  runner: ToolRunner = runnerOf([]),
  authorize?: McpServerOptions["authorize"],
): McpServerOptions {
  return {
    runner,
    shell: settings.shell,
    version: "0.0.0-test",
    ...(authorize ? { authorize } : {}),
  };
}

/** A caller authenticated by an API key with id `id` (owner of its own sessions). */
export function keyCaller(id: string, roles: string[] = []): Principal {
  return { name: id, scheme: "keys", scopes: [], roles, issuer: null, subject: id };
}

/** The anonymous caller. */
export const ANONYMOUS_CALLER: Principal = {
  name: "anonymous",
  scheme: null,
  scopes: [],
  roles: [],
};

/** The base URL of requests in unit tests: svc's default address, a Host it answers to. */
export const BASE = "http://127.0.0.1:8080";

/** A request to `path` on {@linkcode BASE}; a `body` that is not a string is sent as JSON. */
export function requestTo(
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Request {
  const { method = init.body === undefined ? "GET" : "POST", headers = {}, body } = init;
  return new Request(`${BASE}${path}`, {
    method,
    headers: {
      host: new URL(BASE).host,
      ...(body !== undefined && typeof body !== "string"
        ? { "content-type": "application/json" }
        : {}),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

/** The `error` of an answer in svc's one error shape; throws when `body` has any other shape. */
export function errorOf(body: unknown): { code: number; message: string; data?: unknown } {
  const envelope = body as { jsonrpc?: unknown; id?: unknown; error?: Record<string, unknown> };
  const error = envelope?.error;
  if (
    envelope?.jsonrpc !== "2.0" || envelope.id !== null || typeof error?.code !== "number" ||
    typeof error.message !== "string"
  ) {
    throw new Error(`Not svc's error shape: ${JSON.stringify(body)}`);
  }
  return error as { code: number; message: string; data?: unknown };
}

/** The `error` of svc's one error shape in `response`'s body, after checking the shape. */
export async function errorIn(
  response: Response,
): Promise<{ code: number; message: string; data?: unknown }> {
  return errorOf(await response.json());
}

/**
 * Runs `fn` with svc's log lines (category `svc`, every level) and their context properties
 * collected, and returns them: the message text with its properties filled in, and the properties.
 */
export async function logsOf(
  fn: () => Promise<unknown>,
): Promise<{ text: string; level: string; properties: Record<string, unknown> }[]> {
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    contextLocalStorage: new AsyncLocalStorage(),
    sinks: { memory: (record) => void records.push(record) },
    loggers: [
      { category: ["svc"], lowestLevel: "trace", sinks: ["memory"] },
      { category: ["logtape", "meta"], lowestLevel: "fatal", sinks: [] },
    ],
  });
  try {
    await fn();
  } finally {
    await reset();
  }
  return records.map((record) => ({
    text: record.message.map((part) => typeof part === "string" ? part : String(part)).join(""),
    level: record.level,
    properties: record.properties,
  }));
}

/**
 * The `HttpError` that `work` (a promise, or a function, which may also throw at once) ends with;
 * fails the test when it succeeds or fails otherwise.
 */
export async function refusal(work: Promise<unknown> | (() => unknown)): Promise<HttpError> {
  try {
    await (typeof work === "function" ? work() : work);
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  throw new Error("nothing was refused");
}
