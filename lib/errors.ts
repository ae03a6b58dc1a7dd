/**
 * The error classes of svc, one per layer, and the exit code each maps to in `main.ts`:
 * configuration errors exit 2, startup errors 3, runtime errors 4.
 *
 * @module
 */
/** Codes of {@linkcode ConfigError}. */
export type ConfigErrorCode =
  | "INVALID_VALUE"
  | "UNREADABLE_FILE"
  | "INVALID_FILE"
  | "BAD_FLAG"
  | "ANONYMOUS_EXPOSED";

/** A configuration file, variable or flag is wrong; the message names the key. Exit code 2. */
export class ConfigError extends Error {
  override name = "ConfigError";
  /** What kind of configuration problem this is (the first one's, for several). */
  readonly code: ConfigErrorCode;
  /** Each problem in one sentence; the message lists them when there are several. @default [message] */
  readonly problems: string[];
  /** Builds the error; `options.cause` carries the underlying failure. */
  constructor(
    code: ConfigErrorCode,
    message: string,
    options?: ErrorOptions & { problems?: string[] },
  ) {
    super(message, options);
    this.code = code;
    this.problems = options?.problems ?? [message];
  }
}

/**
 * One error for all the problems a configuration has, so that a user fixes them in one pass: the
 * error itself when there is one, else a list of their sentences.
 */
export function allProblems(errors: ConfigError[]): ConfigError {
  if (errors.length === 1) return errors[0]!;
  const problems = errors.flatMap((error) => error.problems);
  return new ConfigError(
    errors[0]!.code,
    `${problems.length} configuration problems:\n${problems.map((p) => `  - ${p}`).join("\n")}`,
    { problems },
  );
}

/** Codes of {@linkcode StartupError}. */
export type StartupErrorCode =
  | "PWSH_NOT_FOUND"
  | "PWSH_TOO_OLD"
  | "NOT_POWERSHELL"
  | "WORKER_START"
  | "STARTUP_SCRIPT"
  | "CANNOT_LISTEN"
  | "TLS_PAIR";

/** svc cannot start serving: PowerShell missing or too old, or the startup script failed. Exit 3. */
export class StartupError extends Error {
  override name = "StartupError";
  /** What prevented startup. */
  readonly code: StartupErrorCode;
  /** Builds the error; `options.cause` carries the underlying failure. */
  constructor(code: StartupErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** Codes of {@linkcode WorkerError}. */
export type WorkerErrorCode =
  | "SPAWN_FAILED"
  | "HELLO_TIMEOUT"
  | "BAD_HELLO"
  | "EXITED"
  | "PROTOCOL"
  | "REMOTE"
  | "TIMEOUT"
  | "CANCELLED"
  | "CLOSED"
  | "RETIRED";

/** A PowerShell worker failed: it could not start, died, broke the protocol or was stopped. */
export class WorkerError extends Error {
  override name = "WorkerError";
  /** What went wrong with the worker. */
  readonly code: WorkerErrorCode;
  /** The worker's exit code when `code` is `EXITED`. */
  readonly exitCode: number | null;
  /** Builds the error. */
  constructor(
    code: WorkerErrorCode,
    message: string,
    options?: ErrorOptions & { exitCode?: number | null },
  ) {
    super(message, options);
    this.code = code;
    this.exitCode = options?.exitCode ?? null;
  }
}

/**
 * No worker could be lent for a call in time. A transport's `ToolRunner` (`lib/mcp.ts`) rejects with
 * it, and the call is answered as unavailable (HTTP 503 with `Retry-After`). It lives here, not with
 * the HTTP pool's `PoolError` that extends it, so that the transport-independent call path does not
 * depend on the pool.
 */
export class WorkerUnavailableError extends Error {
  override name = "WorkerUnavailableError";
  /** Seconds a client should wait before retrying (for `Retry-After`). */
  readonly retryAfterSeconds: number;
  /** Builds the error. @default retryAfterSeconds 1 */
  constructor(message: string, retryAfterSeconds = 1) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Maps an error to the process exit code of `main.ts`: 2 config, 3 startup, 4 anything else. */
export function exitCodeOf(error: unknown): 2 | 3 | 4 {
  if (error instanceof ConfigError) return 2;
  if (error instanceof StartupError) return 3;
  return 4;
}

/**
 * A PowerShell error record, flattened, as a worker reports it (docs/worker-protocol.md §4.4) and a
 * {@linkcode RemoteError} carries it.
 */
export interface ErrorInfo {
  message: string;
  fullyQualifiedErrorId: string | null;
  category: string | null;
  targetName: string | null;
  targetType: string | null;
  exceptionType: string | null;
  scriptStackTrace: string | null;
  terminating: boolean;
  position: { scriptName: string | null; line: number; column: number; text: string | null } | null;
}

/** An error the worker itself reported (protocol error frame). */
export class RemoteError extends WorkerError {
  override name = "RemoteError";
  /** The protocol error kind (`startup`, `reset`, `busy`, ...). */
  readonly kind: string;
  /** The PowerShell error record, when there is one. */
  readonly record: ErrorInfo | null;
  /** Builds the error from an error frame. */
  constructor(kind: string, message: string, record: ErrorInfo | null) {
    super("REMOTE", message);
    this.kind = kind;
    this.record = record;
  }
}
