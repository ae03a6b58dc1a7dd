/**
 * The HTTP front's one error type and the one place errors become responses. Every refusal is
 * thrown as an {@linkcode HttpError} and answered by {@linkcode errorResponse} in one JSON shape,
 * the JSON-RPC error envelope `{"jsonrpc": "2.0", "id": null, "error": {"code", "message"}}`: MCP
 * clients need it on the MCP endpoints (`id: null`, as for a request that could not be read), and
 * REST clients read `error.message` the same way everywhere. {@linkcode answerErrors} is the funnel:
 * an `HttpError` is answered as it says, anything else is logged and answered 500 naming the
 * request's correlation id, so no stack or internal message reaches a caller.
 *
 * @module
 */
import { jsonResponse } from "./http_responses.ts";
import { logger } from "./log.ts";

const log = logger("http");

/**
 * JSON-RPC error codes of svc's own HTTP answers. `serverError` (-32000, the start of the range
 * JSON-RPC leaves to servers) is the default for refusals that have no JSON-RPC meaning of their own.
 */
export const RpcCode = {
  /** A refusal with no more specific code: Host, Origin, authentication, limits, methods. */
  serverError: -32000,
  /** The `Mcp-Session-Id` names no session (the MCP transport's own code). */
  sessionNotFound: -32001,
  /** The body was refused before it was read in full (too large, too slow, over the budget). */
  invalidRequest: -32600,
  /** The tool is unknown, or the arguments do not fit it (as `tools/call` answers). */
  invalidParams: -32602,
  /** svc failed; the message names the correlation id. */
  internalError: -32603,
  /** The body is not JSON. */
  parseError: -32700,
} as const;

/** Options of {@linkcode HttpError}. */
export interface HttpErrorOptions {
  /** JSON-RPC code of the answer. @default RpcCode.serverError (-32000) */
  code?: number;
  /** Headers of the answer (`WWW-Authenticate`, `Retry-After`, `Allow`). @default none */
  headers?: Record<string, string>;
  /** Sent as `error.data` when given (POST /call's `CallToolResult`). @default none */
  data?: unknown;
}

/** A request svc refuses: the HTTP status, one sentence saying why, and how to answer it. */
export class HttpError extends Error {
  override name = "HttpError";
  /** HTTP status of the answer. */
  readonly status: number;
  /** JSON-RPC code of the answer. */
  readonly code: number;
  /** Headers of the answer. */
  readonly headers: Record<string, string>;
  /** `error.data` of the answer, when defined. */
  readonly data: unknown;

  /** `message` is the sentence the caller reads as `error.message`. */
  constructor(status: number, message: string, options: HttpErrorOptions = {}) {
    super(message);
    this.status = status;
    this.code = options.code ?? RpcCode.serverError;
    this.headers = options.headers ?? {};
    this.data = options.data;
  }
}

/** The answer to `error`: its status and headers, and the JSON-RPC error envelope as the body. */
export function errorResponse(error: HttpError): Response {
  const body = {
    jsonrpc: "2.0",
    id: null,
    error: {
      code: error.code,
      message: error.message,
      ...(error.data === undefined ? {} : { data: error.data }),
    },
  };
  return jsonResponse(error.status, body, error.headers);
}

/**
 * The funnel: what `handler` answers, or, when it throws, the answer to what it threw. An
 * `HttpError` is answered as it says; anything else is logged with the request's method and path
 * and answered 500 `Internal error; correlation id <id>`.
 */
export async function answerErrors(
  req: Request,
  correlationId: string,
  handler: () => Promise<Response>,
): Promise<Response> {
  try {
    return await handler();
  } catch (error) {
    if (error instanceof HttpError) return errorResponse(error);
    log.error("Unhandled error for {Method} {Path}: {Error}", {
      Method: req.method,
      Path: URL.parse(req.url)?.pathname ?? req.url,
      Error: error instanceof Error ? error.message : String(error),
    });
    return errorResponse(
      new HttpError(500, `Internal error; correlation id ${correlationId}`, {
        code: RpcCode.internalError,
      }),
    );
  }
}
