/**
 * MCP resources: every tool's help (`svc://help/<tool>`, `lib/resource_help.ts`), the resources and
 * templates the configuration backs with commands (`ShellConfiguration:Resources`), and output a
 * result could not hold (`svc://results/…`, `lib/result_pages.ts`). A caller lists and reads only
 * what belongs to the tools it may call: a command-backed read is a call of the command's tool
 * (`lib/call.ts`), so it runs on a pooled worker reset after it, with the tool's roles, time limit,
 * output bound and audit line, and the values a URI gives its variables are bound as parameter
 * values, never run.
 *
 * @module
 */
import {
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
} from "@modelcontextprotocol/server";
import type {
  CallToolResult,
  ReadResourceResult,
  Resource,
  ResourceTemplateType,
  Server,
  ServerContext,
} from "@modelcontextprotocol/server";
import { ownerOf, type Principal } from "./auth.ts";
import { type CallOptions, callTool, toolsFor } from "./call.ts";
import type { ResourceSetting } from "./config_resources.ts";
import { HELP_TEMPLATE, helpDocument, helpToolOf, helpUri } from "./resource_help.ts";
import { registerSubscriptions } from "./resource_subscriptions.ts";
import { isResultUri, type ResultPages } from "./result_pages.ts";
import type { JsonSchema, ToolDescriptor } from "./tool_descriptor.ts";

/** What {@linkcode registerResources} serves from. */
export interface ResourceOptions extends CallOptions {
  /** Where output cut at `MaxResultBytes` is kept. @default none: no result resources */
  resultPages?: ResultPages;
}

/** How long a client may keep a help document (2026-07-28 `ttlMs`): a reload says it changed. */
const HELP_TTL_MS = 60_000;

/**
 * Serves `resources/list`, `resources/templates/list`, `resources/read`, and the subscriptions of
 * `lib/resource_subscriptions.ts` on `server` (whose capabilities must include `resources` with
 * `subscribe`); `principalOf` names the caller of a request.
 */
export function registerResources(
  server: Server,
  options: ResourceOptions,
  principalOf: (ctx: ServerContext) => Principal,
): void {
  const configured = options.shell.resources ?? [];
  registerSubscriptions(server, configured);
  server.setRequestHandler("resources/list", async (_request, ctx) => {
    const tools = await toolsFor(options, principalOf(ctx));
    const resources: Resource[] = tools.map((tool) => ({
      uri: helpUri(tool.name),
      name: `${tool.name} help`,
      title: `Help of ${tool.name} (${tool.command})`,
      description: tool.description,
      mimeType: "text/markdown",
    }));
    for (const setting of configured) {
      if (setting.uri.variables.length > 0 || toolFor(tools, setting, {}) === null) continue;
      resources.push({ uri: setting.uri.text, ...described(setting) });
    }
    return { resources };
  });

  server.setRequestHandler("resources/templates/list", async (_request, ctx) => {
    const tools = await toolsFor(options, principalOf(ctx));
    const resourceTemplates: ResourceTemplateType[] = [{
      uriTemplate: HELP_TEMPLATE,
      name: "tool help",
      title: "Help of a tool",
      description:
        "A tool's help: synopsis, description, parameters with types and defaults, examples.",
      mimeType: "text/markdown",
    }];
    for (const setting of configured) {
      if (setting.uri.variables.length === 0) continue;
      const values = Object.fromEntries(setting.uri.variables.map((v) => [v, ""]));
      if (toolFor(tools, setting, values) === null) continue;
      resourceTemplates.push({ uriTemplate: setting.uri.text, ...described(setting) });
    }
    return { resourceTemplates };
  });

  server.setRequestHandler("resources/read", async (request, ctx) => {
    const { uri } = request.params;
    const principal = principalOf(ctx);
    const help = helpToolOf(uri);
    if (help !== null) {
      const tool = (await toolsFor(options, principal)).find((t) => t.name === help);
      if (tool === undefined) throw notFound(uri);
      return withCacheHint(ctx, { ttlMs: HELP_TTL_MS }, {
        contents: [{ uri, mimeType: "text/markdown", text: helpDocument(tool) }],
      });
    }
    if (isResultUri(uri)) {
      const owner = ownerOf(principal);
      const page = owner === null ? null : options.resultPages?.read(owner, uri) ?? null;
      if (page === null) throw notFound(uri);
      return withCacheHint(ctx, { ttlMs: page.ttlMs }, {
        contents: [{ uri, mimeType: "application/json", text: page.text }],
        _meta: { "svc/page": page.page, "svc/pages": page.pages },
      });
    }
    for (const setting of configured) {
      const values = setting.uri.match(uri);
      if (values === null) continue;
      return await readConfigured(options, setting, uri, values, principal, ctx);
    }
    throw notFound(uri);
  });
}

function described(setting: ResourceSetting): Omit<Resource, "uri"> {
  return {
    name: setting.name,
    ...(setting.title ? { title: setting.title } : {}),
    ...(setting.description ? { description: setting.description } : {}),
    ...(setting.mimeType ? { mimeType: setting.mimeType } : {}),
  };
}

/** The error of a URI that names nothing the caller may read, whatever the reason. */
function notFound(uri: string): ProtocolError {
  return new ResourceNotFoundError(uri, `Resource '${cut(uri)}' was not found`);
}

/** Runs a configured resource's command with the URI's values and turns its output into contents. */
async function readConfigured(
  options: ResourceOptions,
  setting: ResourceSetting,
  uri: string,
  values: Record<string, string>,
  principal: Principal,
  ctx: ServerContext,
): Promise<ReadResourceResult> {
  const tool = toolFor(await toolsFor(options, principal), setting, values);
  if (tool === null) throw notFound(uri);
  const outcome = await callTool(options, tool.name, argumentsOf(tool, values), {
    signal: ctx.mcpReq.signal,
    principal,
  });
  if (outcome.kind === "unknown-tool") throw notFound(uri);
  const failed = outcome.kind !== "result" || outcome.result.isError;
  const structured = outcome.result.structuredContent as Record<string, unknown> | undefined;
  const text = outcome.result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
  if (failed || structured === undefined) {
    throw new ProtocolError(
      outcome.kind === "invalid-arguments"
        ? ProtocolErrorCode.InvalidParams
        : ProtocolErrorCode.InternalError,
      `Reading resource '${cut(uri)}' failed: ${cut(text, 1024)}`,
    );
  }
  const truncated = structured.truncated as { bytes: number; limit: number } | undefined;
  if (truncated) {
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      `Reading resource '${
        cut(uri)
      }' failed: its output of ${truncated.bytes} bytes exceeds ShellConfiguration:MaxResultBytes (${truncated.limit})`,
    );
  }
  return withCacheHint(ctx, { ttlMs: 0 }, {
    contents: [
      contentsOf(uri, structured.output as unknown[], outcome.result.content, setting.mimeType),
    ],
  });
}

/**
 * The tool of the configured command that a read with these variables runs, as the caller may
 * call it: the first of its tools taking every variable and needing nothing else; else the first
 * taking every variable (its binding says what is missing); null when the caller may call none.
 */
function toolFor(
  tools: ToolDescriptor[],
  setting: ResourceSetting,
  values: Record<string, string>,
): ToolDescriptor | null {
  const command = setting.command.toLowerCase();
  const candidates = tools.filter((t) =>
    t.command.toLowerCase() === command ||
    (t.module !== null && `${t.module}\\${t.command}`.toLowerCase() === command)
  );
  const names = Object.keys(values).map((n) => n.toLowerCase());
  const takes = (tool: ToolDescriptor) =>
    names.every((n) => tool.parameters.some((p) => p.name.toLowerCase() === n));
  const needs = (tool: ToolDescriptor) =>
    tool.parameters.filter((p) => p.required).every((p) => names.includes(p.name.toLowerCase()));
  return candidates.find((t) => takes(t) && needs(t)) ?? candidates.find(takes) ??
    candidates[0] ?? null;
}

/**
 * Arguments from a URI's values, by the parameter each variable names: text where the parameter
 * takes a number, a boolean or a list becomes one when it reads as one; otherwise the text is
 * passed as it is and binding refuses what does not fit.
 */
function argumentsOf(
  tool: ToolDescriptor,
  values: Record<string, string>,
): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(values)) {
    const parameter = tool.parameters.find((p) => p.name.toLowerCase() === name.toLowerCase());
    args[parameter?.name ?? name] = parameter ? typed(value, parameter.schema) : value;
  }
  return args;
}

function typed(value: string, schema: JsonSchema): unknown {
  switch (schema.type) {
    case "integer":
      return /^-?\d{1,15}$/.test(value) ? Number(value) : value;
    case "number":
      return value.trim() !== "" && Number.isFinite(Number(value)) ? Number(value) : value;
    case "boolean":
      return value === "true" ? true : value === "false" ? false : value;
    case "array":
      return [typed(value, (schema.items ?? {}) as JsonSchema)];
    default:
      return value;
  }
}

/**
 * The contents of a read: output of strings as their text (lines joined); a byte array written
 * whole (a media item, `lib/result_media.ts`: an image or audio block of the result, or bytes of no
 * media type svc knows) as a base64 blob; anything else as JSON (one item, or the array).
 */
function contentsOf(
  uri: string,
  output: unknown[],
  blocks: CallToolResult["content"],
  mimeType: string | undefined,
): ReadResourceResult["contents"][number] {
  const blob = output.length === 1 ? blobOf(output[0], blocks) : null;
  if (blob !== null) {
    return { uri, mimeType: mimeType ?? blob.mimeType, blob: blob.base64 };
  }
  if (output.length > 0 && output.every((item) => typeof item === "string")) {
    return { uri, mimeType: mimeType ?? "text/plain", text: output.join("\n") };
  }
  const json = JSON.stringify(output.length === 1 ? output[0] : output);
  return { uri, mimeType: mimeType ?? "application/json", text: json };
}

/**
 * The bytes an output item stands for, as base64 with their media type: a reference to an image
 * or audio block of the result (`{content}`), or a byte array of no media type svc knows
 * (`{base64, bytes}`, `application/octet-stream`); else null.
 */
function blobOf(
  item: unknown,
  blocks: CallToolResult["content"],
): { base64: string; mimeType: string } | null {
  if (item === null || typeof item !== "object" || Array.isArray(item)) return null;
  const { content, base64 } = item as { content?: unknown; base64?: unknown };
  if (typeof base64 === "string" && Object.keys(item).length === 2 && "bytes" in item) {
    return { base64, mimeType: "application/octet-stream" };
  }
  const block = typeof content === "number" ? blocks[content] : undefined;
  if (block?.type === "image" || block?.type === "audio") {
    return { base64: block.data, mimeType: block.mimeType };
  }
  return null;
}

/**
 * A result with the 2026-07-28 cache fields (`ttlMs`, private to the caller) when the request is
 * of that era; a 2025-era result carries none, as its schema has no such fields.
 */
function withCacheHint<T extends ReadResourceResult>(
  ctx: ServerContext,
  hint: { ttlMs: number },
  result: T,
): T {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  if (typeof envelope?.[PROTOCOL_VERSION_META_KEY] !== "string") return result;
  return { ...result, ttlMs: Math.max(0, Math.floor(hint.ttlMs)), cacheScope: "private" };
}

/** Text quoted in an error, cut to `max` characters. */
function cut(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** What completing a variable of a resource template completes (`lib/mcp_completion.ts`). */
export type TemplateVariable =
  /** The help template's `{tool}`: the names of the tools the caller may call. */
  | { kind: "tool"; tools: string[] }
  /** A configured template's variable: the parameter of its command's tool it binds. */
  | { kind: "parameter"; command: string; parameter: string; variables: string[] };

/**
 * What completing `variable` of the template `uriTemplate` completes for `principal`; null when
 * the caller may read no such template (it does not exist, its command offers the caller no tool,
 * or it has no such variable), which `completion/complete` tells as an unknown template.
 */
export async function templateVariable(
  options: CallOptions,
  uriTemplate: string,
  variable: string,
  principal: Principal,
): Promise<TemplateVariable | null> {
  const tools = await toolsFor(options, principal);
  if (uriTemplate === HELP_TEMPLATE) {
    return variable === "tool" ? { kind: "tool", tools: tools.map((t) => t.name) } : null;
  }
  const setting = (options.shell.resources ?? []).find((r) => r.uri.text === uriTemplate);
  if (setting === undefined || !setting.uri.variables.includes(variable)) return null;
  const values = Object.fromEntries(setting.uri.variables.map((v) => [v, ""]));
  const tool = toolFor(tools, setting, values);
  const parameter = tool?.parameters.find((p) => p.name.toLowerCase() === variable.toLowerCase());
  if (!tool || !parameter) return null;
  return {
    kind: "parameter",
    command: tool.command,
    parameter: parameter.name,
    variables: setting.uri.variables,
  };
}

/** A resource or template as `svc doctor` lists it. */
export interface ResourceRow {
  /** Its URI or URI template. */
  uri: string;
  /** Its name: the configuration's key, or `tool help`. */
  name: string;
  /** What a read serves: the tool it calls, or svc's own. */
  servedBy: string;
}

/**
 * The resources and templates the configuration offers over `tools` (the help template first),
 * and a warning for each configured one that reads nothing: its command offers no tool, or a
 * variable is no parameter of it.
 */
export function resourceRows(
  resources: ResourceSetting[],
  tools: ToolDescriptor[],
): { rows: ResourceRow[]; warnings: string[] } {
  const rows: ResourceRow[] = [{
    uri: HELP_TEMPLATE,
    name: "tool help",
    servedBy: `svc: the help of each of ${tools.length} tool(s)`,
  }];
  const warnings: string[] = [];
  for (const setting of resources) {
    const values = Object.fromEntries(setting.uri.variables.map((v) => [v, ""]));
    const tool = toolFor(tools, setting, values);
    const where = `Resource '${setting.name}' (ShellConfiguration:Resources:${setting.name})`;
    if (tool === null) {
      warnings.push(`${where} reads nothing: command '${setting.command}' is offered as no tool`);
      continue;
    }
    const unknown = setting.uri.variables.filter((v) =>
      !tool.parameters.some((p) => p.name.toLowerCase() === v.toLowerCase())
    );
    if (unknown.length > 0) {
      warnings.push(
        `${where} reads nothing: ${
          unknown.map((v) => `{${v}}`).join(", ")
        } of '${setting.uri.text}' is no parameter of tool '${tool.name}'`,
      );
      continue;
    }
    rows.push({ uri: setting.uri.text, name: setting.name, servedBy: `tool ${tool.name}` });
  }
  return { rows, warnings };
}
