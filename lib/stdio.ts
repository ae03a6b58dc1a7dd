/**
 * The stdio transport: one MCP connection over stdin/stdout, served by one persistent worker whose
 * state (variables, functions, location) lasts for the connection. The startup script runs once when
 * the worker starts; if the worker dies, the next call starts a fresh one (state lost, logged).
 * Logging never touches stdout.
 *
 * With `ReloadOnChange` (on by default here) a change to a file the tools' code comes from starts a
 * fresh worker with the new code: once it has loaded and the tools are discovered again, new calls
 * run on it and the client is sent `notifications/tools/list_changed`; a call already running ends
 * on the old worker, which is closed then. The session state of the old worker (variables,
 * functions, location) does not carry over, as when a worker dies: a reload is a new session for
 * the module's code, which is the point of it. A module that no longer loads keeps the old worker
 * and the tools as they were, and the log says why.
 *
 * @module
 */
import type { Server } from "@modelcontextprotocol/server";
import process from "node:process";
import { CatalogStore } from "./discovery.ts";
import { SourceWatch } from "./catalog_watch.ts";
import { watchConfigFile } from "./config_watch.ts";
import type { Settings } from "./config.ts";
import { StartupError } from "./errors.ts";
import { logger } from "./log.ts";
import type { ToolRunner } from "./call.ts";
import { type ReadyWorker, startWorker } from "./worker_start.ts";
import { jsonRpcLineFilter } from "./stdio_lines.ts";

const log = logger("stdio");

/** Options of {@linkcode serveStdio}. */
export interface StdioOptions {
  /** Resolved settings. */
  settings: Settings;
  /** Absolute path of pwsh (see `resolvePwsh`). */
  pwsh: string;
  /** svc's version for serverInfo. */
  version: string;
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM); the connection is then closed. */
  shutdown?: Promise<void>;
}

/** The stdio session: owns the connection's worker and catalog. */
class StdioSession implements AsyncDisposable {
  readonly #settings: Settings;
  readonly #pwsh: string;
  #current: Promise<ReadyWorker>;
  readonly #catalog: CatalogStore;
  #closed = false;
  /** Each server instance, with what tells its client of a reload (`sendListsChanged`). */
  #servers = new Map<Server, () => void>();
  /** Calls running on each worker, so that one replaced by a reload is closed once it is idle. */
  readonly #running = new Map<ReadyWorker["worker"], number>();
  /** Workers a reload replaced, closed when their last call ends. */
  readonly #replaced = new Set<ReadyWorker["worker"]>();
  readonly #watch: SourceWatch | null;
  readonly #configWatch: Disposable | null;

  /** Starts the worker at once and the catalog from cache or discovery. */
  constructor(settings: Settings, pwsh: string) {
    this.#settings = settings;
    this.#pwsh = pwsh;
    this.#current = this.#startWorker();
    // Failures surface through ready(); this keeps an unobserved rejection from crashing the process.
    this.#current.catch(() => {});
    this.#catalog = new CatalogStore({
      shell: settings.shell,
      pwsh,
      source: async () => {
        const { worker, startup } = await this.#current;
        return { worker, modules: startup.modules };
      },
      onChange: () => {
        for (const tell of this.#servers.values()) tell();
      },
    });
    this.#watch = settings.shell.reloadOnChange
      ? new SourceWatch({ onChange: (path) => this.#reload(path) })
      : null;
    this.#catalog.catalog().then((catalog) => this.#watch?.watch(catalog.sources), () => {});
    this.#configWatch = settings.shell.reloadOnChange && settings.configPath !== null
      ? watchConfigFile(settings.configPath)
      : null;
  }

  /** Resolves when the first worker has started and the catalog is known; rejects on startup errors. */
  async ready(): Promise<void> {
    await this.#current;
    await this.#catalog.catalog();
  }

  /**
   * Registers a server instance to be told when the tools change: `tell` sends it what a reload
   * changes (`sendListsChanged` of `lib/mcp.ts`, which this module loads once a worker starts).
   */
  attach(server: Server, tell: () => void): void {
    this.#servers.set(server, tell);
  }

  /** The runner that the MCP server uses for this session. */
  runner(): ToolRunner {
    return {
      tools: () => this.#catalog.tools(),
      prompts: () => this.#catalog.prompts(),
      withWorker: async (_call, use) => {
        const { worker } = await this.#liveWorker();
        this.#running.set(worker, (this.#running.get(worker) ?? 0) + 1);
        try {
          return await use(worker);
        } finally {
          const left = this.#running.get(worker)! - 1;
          if (left > 0) this.#running.set(worker, left);
          else {
            this.#running.delete(worker);
            if (this.#replaced.delete(worker)) void worker.close().catch(() => {});
          }
        }
      },
    };
  }

  /**
   * After `changed` changed: a worker with the new code, the tools discovered on it, and new calls
   * on it; the old worker closes once its call ends. Kept as it was when the new one cannot start
   * or a module no longer loads (said in the log).
   */
  async #reload(changed: string): Promise<void> {
    log.info("{Changed} changed; starting a worker with the new code.", { Changed: changed });
    let fresh: ReadyWorker | null = null;
    try {
      fresh = await this.#startWorker();
    } catch (error) {
      log.warning(
        "{Changed} changed, and a worker with the new code cannot start: {Error}; svc keeps the tools and the worker it had.",
        { Changed: changed, Error: error instanceof Error ? error.message : String(error) },
      );
    }
    const previous = await this.#current.catch(() => null);
    const reloaded = fresh !== null && !this.#closed &&
      await this.#catalog.reload(
        { worker: fresh.worker, modules: fresh.startup.modules },
        changed,
        () => (this.#current = Promise.resolve(fresh)),
      );
    if (!reloaded || fresh === null) {
      await fresh?.worker.close().catch(() => {});
      return;
    }
    if (previous) {
      if (this.#running.has(previous.worker)) this.#replaced.add(previous.worker);
      else void previous.worker.close().catch(() => {});
    }
    log.info(
      "New calls run on worker {Pid}, started with the new code; the previous worker's session state (variables, functions, location) is gone.",
      { Pid: fresh.worker.pid },
    );
    this.#watch?.watch((await this.#catalog.catalog()).sources);
  }

  /** Closes the worker; a call still running fails saying svc is shutting down. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#watch?.[Symbol.dispose]();
    this.#configWatch?.[Symbol.dispose]();
    const ready = await this.#current.catch(() => null);
    const reason = "svc is shutting down: the call was stopped";
    await Promise.all([
      ready?.worker.close(reason),
      ...[...this.#replaced].map((worker) => worker.close(reason)),
    ]);
  }

  /** Closes the session (see {@linkcode StdioSession.close}). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #liveWorker(): Promise<ReadyWorker> {
    const ready = await this.#current.catch(() => null);
    if (ready && ready.worker.alive) return ready;
    if (this.#closed) throw new StartupError("WORKER_START", "The stdio session is closing");
    // One retired while still running (a runspace left busy) is closed, not left behind.
    if (ready) void ready.worker.close().catch(() => {});
    log.warning(
      "Starting a new PowerShell worker; the previous one is gone and its session state is lost.",
    );
    this.#current = this.#startWorker();
    return await this.#current;
  }

  async #startWorker(): Promise<ReadyWorker> {
    const ready = await startWorker({
      pwsh: this.#pwsh,
      shell: this.#settings.shell,
      stopTimeoutMs: this.#settings.pool.stopTimeoutMs,
      label: "stdio worker",
    });
    log.debug("Worker {Pid} started (PowerShell {Version}) in {ElapsedMs} ms.", {
      Pid: ready.worker.pid,
      Version: ready.worker.info.psVersion,
      ElapsedMs: ready.startup.durationMs,
    });
    return ready;
  }
}

/**
 * Serves MCP over stdio until stdin closes or shutdown is requested. Rejects with a StartupError
 * (exit 3) when the first worker cannot start or its startup script fails.
 */
export async function serveStdio(options: StdioOptions): Promise<void> {
  const { settings, pwsh, version, shutdown } = options;
  await using session = new StdioSession(settings, pwsh);
  // The MCP SDK (about 40 ms of CPU) loads once the worker's start is under way. Waiting for the
  // spawn itself made the first call 13 ms sooner and tools/list 25 ms later (bench P1, N = 10).
  const [
    { serveStdio: sdkServeStdio, StdioServerTransport },
    { createMcpServer, sendListsChanged },
    { HeldCalls },
    { ResultPages },
    { ListenedUris },
  ] = await Promise.all([
    import("@modelcontextprotocol/server/stdio"),
    import("./mcp.ts"),
    import("./input_required.ts"),
    import("./result_pages.ts"),
    import("./resource_subscriptions.ts"),
  ]);
  // One worker runs one call at a time, so a second held call can only follow the first.
  const heldCalls = new HeldCalls({
    timeoutMs: settings.shell.userInputTimeoutMs,
    maxPerCaller: settings.http.limits.maxStreamsPerCaller,
  });
  const resultPages = new ResultPages({
    ...settings.shell.resultResources,
    pageBytes: settings.shell.maxResultBytes,
  });
  // The resource URIs this connection's 2026-07-28 listens name, by listen request id.
  const listened = new ListenedUris(settings.shell.resources ?? []);
  const listens = new Map<unknown, () => void>();
  const stdin = process.stdin.pipe(jsonRpcLineFilter({
    onMessage: (message) => {
      if (message.method === "notifications/cancelled") {
        const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
        listens.get(id)?.();
        listens.delete(id);
        return false;
      }
      // As many listens as the SDK keeps open on one connection (its default, 1024).
      if (listens.size >= 1024 && !listens.has(message.id)) return false;
      const endListen = listened.admit(message);
      if (endListen === null) return false;
      listens.get(message.id)?.();
      listens.set(message.id, endListen);
      return true;
    },
    reply: (message) => process.stdout.write(`${JSON.stringify(message)}\n`),
    onRefused: (reason, bytes) =>
      log.warning(
        "Refused a {Bytes}-byte line on stdin: {Reason}; answered with a JSON-RPC error.",
        { Bytes: bytes, Reason: reason },
      ),
  }));
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  /** Tells `ended` when the connection ends (stdin closed or close() called). */
  class ClosingStdioTransport extends StdioServerTransport {
    override async close(): Promise<void> {
      try {
        await super.close();
      } finally {
        end();
      }
    }
  }
  const transport = new ClosingStdioTransport(stdin, process.stdout);
  const handle = sdkServeStdio(({ era }) => {
    const server = createMcpServer({
      runner: session.runner(),
      shell: settings.shell,
      version,
      heldCalls,
      resultPages,
    });
    session.attach(server, () => {
      sendListsChanged(server);
      // A 2026-07-28 instance's updates go, through the SDK, to the listens that name their URI.
      if (era !== "modern") return;
      for (const uri of listened.updatable()) server.sendResourceUpdated({ uri }).catch(() => {});
    });
    return server;
  }, {
    transport,
    onerror: (error) => log.debug("stdio transport: {Error}", { Error: String(error) }),
  });
  try {
    // Startup must be settled before exiting, so a failing startup script exits 3 even when the
    // client has already gone away.
    const served = Promise.all([session.ready(), ended]);
    await (shutdown ? Promise.race([served, shutdown]) : served);
  } finally {
    // A held call ends with the connection, and its timer with it.
    heldCalls.close();
    resultPages.close();
    await handle.close().catch(() => {});
  }
}
