/**
 * A filter in front of the SDK's stdio transport. The SDK skips a line that is not JSON without a
 * word, and reports a JSON line that is not JSON-RPC only to its error callback, so a client that
 * sends either waits forever. Here each such line gets its JSON-RPC error reply (-32700 Parse error,
 * -32600 Invalid Request) at once, and everything else passes through unchanged.
 *
 * @module
 */
import { Transform, type TransformCallback } from "node:stream";

/** Why a line was refused. */
export type RefusedLine = "not JSON" | "not JSON-RPC";

/** Options of {@linkcode jsonRpcLineFilter}. */
export interface LineFilterOptions {
  /** Writes one reply message (already a complete JSON-RPC error response). */
  reply: (message: Record<string, unknown>) => void;
  /** Told about each refused line (its size, never its content, which may hold a secret). */
  onRefused?: (reason: RefusedLine, bytes: number) => void;
  /**
   * Sees each message passed on, and may change it in place: it then returns true, and the message
   * is passed on as it is now. @default none: every line passes as it came
   */
  onMessage?: (message: Record<string, unknown>) => boolean;
}

/** True for something the SDK's JSON-RPC message schema can accept: a request, notification or response. */
function looksLikeJsonRpc(value: unknown): boolean {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== "2.0") return false;
  return typeof message.method === "string" || "result" in message || "error" in message;
}

function idOf(value: unknown): string | number | null {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/**
 * Returns a stream that passes on the JSON-RPC lines written to it and answers the rest through
 * `options.reply`. Empty lines are dropped silently.
 */
export function jsonRpcLineFilter(options: LineFilterOptions): Transform {
  const { reply, onRefused, onMessage } = options;
  let pending = "";
  const decoder = new TextDecoder();
  const check = (line: string, push: (text: string) => void) => {
    const text = line.replace(/\r$/, "");
    if (text.trim() === "") return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      onRefused?.("not JSON", new TextEncoder().encode(text).byteLength);
      reply({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32700, message: "Parse error: the line is not JSON" },
      });
      return;
    }
    if (!looksLikeJsonRpc(parsed)) {
      onRefused?.("not JSON-RPC", new TextEncoder().encode(text).byteLength);
      reply({
        jsonrpc: "2.0",
        id: idOf(parsed),
        error: {
          code: -32600,
          message:
            'Invalid Request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0" and a "method"',
        },
      });
      return;
    }
    const changed = onMessage?.(parsed as Record<string, unknown>) ?? false;
    push(`${changed ? JSON.stringify(parsed) : text}\n`);
  };
  return new Transform({
    transform(chunk: Uint8Array | string, _encoding: string, done: TransformCallback) {
      pending += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) check(line, (text) => this.push(text));
      done();
    },
    flush(done: TransformCallback) {
      if (pending !== "") check(pending, (text) => this.push(text));
      done();
    },
  });
}
