/**
 * The HTTP transport: MCP Streamable HTTP for many users, backed by the worker pool. It listens
 * first (`http_listen.ts` serves HTTP/1.1; `http_admission.ts` caps the requests in flight), then
 * starts the pool, then loads the front (`http_front.ts`, which brings the MCP SDK) while the
 * first worker process starts. On shutdown, sessions and streams are closed and in-flight calls
 * drain. With `ReloadOnChange` a change to a file the tools' code comes from is tried on a worker
 * of its own first; when its tools are discovered, the pool is renewed (new calls on new workers,
 * calls in flight end on the old) and clients are told the tool list changed.
 *
 * @module
 */
import { Authenticator } from "./auth.ts";
import type { Settings } from "./config.ts";
import { CatalogStore } from "./discovery.ts";
import { logger } from "./log.ts";
import type { HttpFront } from "./http_front.ts";
import { checkAnonymousExposure } from "./http_guard.ts";
import { RequestLimiter } from "./http_admission.ts";
import { listen as listenHttp } from "./http_listen.ts";
import type { McpServerOptions } from "./mcp.ts";
import type { ToolRunner } from "./call.ts";
import { WorkerPool } from "./pool.ts";
import { tenantOf } from "./pool_tenancy.ts";
import { SourceWatch } from "./catalog_watch.ts";
import { watchConfigFile } from "./config_watch.ts";
import { startWorker } from "./worker_start.ts";

const log = logger("http");

/** Options of {@linkcode serveHttp}. */
export interface HttpOptions {
  /** Resolved settings. */
  settings: Settings;
  /** Absolute path of pwsh. */
  pwsh: string;
  /** svc's version for serverInfo. */
  version: string;
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM). */
  shutdown: Promise<void>;
  /** Aborted when asked again (a second SIGINT/SIGTERM): calls in flight are cut off at once. */
  force?: AbortSignal;
  /**
   * The HTTP server the front is served by. A seam for `bench/serve_front.ts`, which measures the
   * front on `Deno.serve` against svc's own server. @default svc's HTTP/1.1 server (`http_listen.ts`)
   */
  listen?: typeof listenHttp;
}

/** Serves MCP over HTTP until shutdown, then drains in-flight calls and closes every worker. */
export async function serveHttp(options: HttpOptions): Promise<void> {
  const { settings, pwsh, version, shutdown, force, listen = listenHttp } = options;
  checkAnonymousExposure(settings.http, settings.auth);
  const auth = new Authenticator({ auth: settings.auth, shell: settings.shell });
  const http = settings.http;
  let front: HttpFront | null = null;
  let loaded!: (front: HttpFront) => void;
  const frontLoaded = new Promise<HttpFront>((resolve) => (loaded = resolve));
  const limiter = new RequestLimiter(http.limits.maxConcurrentRequests);
  // Listening comes first, so a taken port fails before any worker starts. A request that comes
  // before the front has loaded (a few tens of ms) waits for it.
  const server = listen(
    http,
    (req) => limiter.handle(req, async (admitted) => (front ?? await frontLoaded).handle(admitted)),
  );
  // The pool warms while svc listens: a client's handshake and `tools/list` (from the catalog cache)
  // overlap the process start, and `/health/ready` answers 503 until `MinPoolSize` workers are warm.
  const pool = new WorkerPool({ pwsh, pool: settings.pool, shell: settings.shell });
  // The front brings the MCP SDK (about 50 ms of CPU): loaded once the first pwsh is spawned, it no
  // longer delays that spawn.
  await pool.spawned;
  const [{ HttpFront }, { HeldCalls }, { toolsListCacheHint }, { ResultPages }] = await Promise.all(
    [
      import("./http_front.ts"),
      import("./input_required.ts"),
      import("./mcp.ts"),
      import("./result_pages.ts"),
    ],
  );
  const catalog = new CatalogStore({
    shell: settings.shell,
    pwsh,
    source: async () => {
      const lease = await pool.lease();
      return {
        worker: lease.worker,
        modules: lease.startup.modules,
        release: lease.release,
      };
    },
    onChange: () => front?.toolsChanged(),
    auth: settings.auth,
  });
  using _config = settings.shell.reloadOnChange && settings.configPath !== null
    ? watchConfigFile(settings.configPath)
    : null;
  using watch = settings.shell.reloadOnChange
    ? new SourceWatch({
      onChange: async (changed) => {
        log.info("{Changed} changed; trying the new code on a worker of its own.", {
          Changed: changed,
        });
        const trial = await startWorker({
          pwsh,
          shell: settings.shell,
          stopTimeoutMs: settings.pool.stopTimeoutMs,
          label: "reload worker",
        }).catch((error) => {
          log.warning(
            "{Changed} changed, and a worker with the new code cannot start: {Error}; svc keeps the tools and workers it had.",
            { Changed: changed, Error: error instanceof Error ? error.message : String(error) },
          );
          return null;
        });
        const reloaded = trial !== null && await catalog.reload(
          { worker: trial.worker, modules: trial.startup.modules },
          changed,
          () => pool.renew(),
        );
        await trial?.worker.close().catch(() => {});
        if (reloaded) watch?.watch((await catalog.catalog()).sources);
      },
    })
    : null;
  catalog.catalog().then((known) => watch?.watch(known.sources), () => {});
  const runner: ToolRunner = {
    tools: () => catalog.tools(),
    prompts: () => catalog.prompts(),
    withWorker: async ({ signal, principal }, use) => {
      // Callers told apart by authentication never share a process (lib/pool_tenancy.ts).
      const lease = await pool.lease({ signal, tenant: tenantOf(principal) });
      const { worker } = lease;
      try {
        // A call's lease runs that one call: the worker starts the lease's reset once it has answered.
        return await use({
          invoke: (run, options) => worker.invoke(run, { ...options, thenReset: true }),
        });
      } finally {
        // The reset runs in the background: the response does not wait for it.
        lease.release();
      }
    },
  };
  // A held call is, like an event stream, something one caller keeps open on this replica.
  const heldCalls = new HeldCalls({
    timeoutMs: settings.shell.userInputTimeoutMs,
    maxPerCaller: http.limits.maxStreamsPerCaller,
    // Each held call keeps a worker: half of the pool always serves calls that are running.
    maxHeld: Math.max(1, Math.floor(settings.pool.maxPoolSize / 2)),
  });
  const mcp: McpServerOptions = {
    runner,
    shell: settings.shell,
    version,
    authorize: (principal, tool) => auth.mayCall(principal, tool),
    logArguments: settings.auth.logArguments,
    heldCalls,
    toolsListCache: toolsListCacheHint({
      authenticated: settings.auth.enabled,
      reloadOnChange: settings.shell.reloadOnChange,
    }),
    resultPages: new ResultPages({
      ...settings.shell.resultResources,
      pageBytes: settings.shell.maxResultBytes,
    }),
  };
  front = new HttpFront({ http, pool, mcp, auth });
  loaded(front);
  // Only a defect rejects `started` (a worker that fails to start is logged and evicted); it ends
  // svc as a failed start would.
  const failed = pool.started.then(() => new Promise<never>(() => {}));
  try {
    await Promise.race([shutdown, failed]);
  } catch (error) {
    await server.shutdown();
    await pool.drain();
    throw error;
  }
  // One budget for the whole drain: the server and the pool wait for the same calls, so each
  // waiting ShutdownDrainTimeout in turn took twice that.
  const drainMs = settings.pool.shutdownDrainTimeoutMs;
  const deadline = Date.now() + drainMs;
  log.info(
    "Shutting down: no new requests; calls in flight have {Seconds} s (ShutdownDrainTimeout) to end, or until a second Ctrl+C or SIGTERM.",
    { Seconds: drainMs / 1000 },
  );
  // A held call would hold the drain up for as long as UserInputTimeout.
  heldCalls.close();
  mcp.resultPages?.close();
  await front.closeStreams();
  const drained = server.shutdown();
  // Connections still open once the pool has cut their calls off answer them with the failure
  // and close; one that does not is left to the process's exit.
  await Promise.all([
    pool.drain({ deadline, ...(force ? { force } : {}) }),
    Promise.race([drained, until(deadline, force)]),
  ]);
}

/** Resolves at `deadline` (ms since the epoch), or at once when `force` is aborted. */
function until(deadline: number, force: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      force?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
    if (force?.aborted) done();
    else force?.addEventListener("abort", done, { once: true });
  });
}
