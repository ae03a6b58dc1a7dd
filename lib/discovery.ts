/**
 * Discovery: asks a started worker for the configured commands, builds the catalog with the policy of
 * `catalog.ts`, and caches it on disk so a warm start can answer `tools/list` before any worker is up.
 * {@linkcode CatalogStore} is what the transports use: cache first, discovery otherwise, and a
 * revalidation against the live worker's PowerShell and module versions.
 *
 * @module
 */
import { replaceFile } from "./atomic_write.ts";
import { createHash } from "node:crypto";
import DISCOVERY_SCRIPT from "./host/discovery.ps1" with { type: "text" };
import { catalogCacheDirectory } from "./cache_directory.ts";
import { buildTools, candidateQuery, type Catalog, selectCommands } from "./catalog.ts";
import { buildPrompts, selectPromptCommands } from "./catalog_prompts.ts";
import type { McpPromptDescriptor, ToolDescriptor } from "./tool_descriptor.ts";
import { resolveOverrideKeys } from "./catalog_overrides.ts";
import type { ShellSettings } from "./config.ts";
import { dangerousCommandWarnings, type DangerSettings } from "./dangerous.ts";
import { logger } from "./log.ts";
import type {
  CommandMeta,
  CommandsResult,
  ModuleStatus,
  SourcesResult,
} from "./worker_protocol.ts";
import { changedSource, stampSources } from "./catalog_sources.ts";

const log = logger("catalog");

// Raised whenever the catalog's policy changes what it builds from the same metadata (8: tools
// sorted by name, portable schemas, provider parameters; 9: the source files it was built from;
// 10: shorter generated descriptions; 11: the media type a command declares with [OutputType];
// 12: each tool's help for its help resource).
const CACHE_FORMAT = 12;

/**
 * The discovery scripts the worker runs: what they report decides the catalog, so a catalog cached
 * by another version of them is never served.
 */
const DISCOVERY_DIGEST = createHash("sha256").update(DISCOVERY_SCRIPT).digest("hex").slice(0, 16);

/** What a cached catalog is keyed on: the configuration and the pwsh binary. */
interface CatalogKeyInput {
  shell: ShellSettings;
  pwshPath: string;
}

/** Options of the catalog cache functions. */
export interface CatalogCacheOptions {
  /** Directory of cache files. @default `ShellConfiguration:CacheDirectory`, else the user cache dir + "/svc" */
  directory: string;
}

/**
 * The cache key: a digest of everything that decides the catalog before a worker runs (the cache
 * format, the discovery scripts, selection settings, startup script text and path, pwsh path and
 * file stamp). The files the code came from (modules, dot-sourced scripts, the startup script) are
 * recorded in the entry by content and checked before it is served (`lib/catalog_sources.ts`), so
 * an edit finds the same entry and replaces it. pwsh is stamped by size and time rather than
 * content: it is an executable of tens of MB read at every start, and the worker's PowerShell
 * version is checked after startup with {@linkcode catalogStillValid} anyway.
 */
async function catalogKey(input: CatalogKeyInput): Promise<string> {
  const { shell, pwshPath } = input;
  const stamp = async (path: string | null) => {
    if (!path) return null;
    try {
      const stat = await Deno.stat(path);
      return `${stat.size}:${stat.mtime?.getTime() ?? 0}`;
    } catch {
      return "missing";
    }
  };
  const material = JSON.stringify({
    format: CACHE_FORMAT,
    discovery: DISCOVERY_DIGEST,
    commands: shell.commands,
    include: shell.includePatterns,
    exclude: shell.excludePatterns,
    prompts: shell.promptCommands,
    granularity: shell.toolGranularity,
    modules: shell.modules,
    // Override keys are resolved at discovery (aliases): a new key needs a new discovery.
    overrideKeys: Object.keys(shell.commandOverrides).map((k) => k.toLowerCase()).sort(),
    script: shell.startupScript,
    scriptPath: shell.startupScriptPath,
    pwshPath,
    pwshStamp: await stamp(pwshPath),
  });
  return createHash("sha256").update(material).digest("hex").slice(0, 32);
}

/**
 * Whether another user could have written `path` (Unix: a group or other write bit, or another
 * owner). A cached catalog decides which command each tool runs, so one from such a place is not
 * trusted, as the compiled host is not loaded from one (`lib/host/assembly.ps1`).
 */
async function writableByOthers(path: string): Promise<boolean> {
  if (Deno.build.os === "windows") return false;
  const { mode, uid } = await Deno.stat(path);
  return mode === null || (mode & 0o022) !== 0 || (uid !== null && uid !== Deno.uid());
}

/** Where the catalog of a key is kept. */
function cachePath(slot: { key: string; directory: string }): string {
  return `${slot.directory}/catalog-${slot.key}.json`;
}

/**
 * Reads a cached catalog; null when absent, unreadable, or in a directory or file that other users
 * can write (said once per read).
 */
export async function readCachedCatalog(
  key: string,
  options: CatalogCacheOptions,
): Promise<Catalog | null> {
  const path = cachePath({ key, directory: options.directory });
  try {
    if (await writableByOthers(options.directory) || await writableByOthers(path)) {
      log.warning(
        "The catalog cache {Path} is not used: other users can write there, and a catalog decides which commands run. Discovering instead.",
        { Path: path },
      );
      return null;
    }
    const stored = JSON.parse(await Deno.readTextFile(path));
    if (stored?.format !== CACHE_FORMAT || !Array.isArray(stored.catalog?.tools)) return null;
    return stored.catalog as Catalog;
  } catch {
    return null;
  }
}

/** Writes a catalog to the cache atomically (`replaceFile`: temp file, then rename). */
export async function writeCachedCatalog(
  key: string,
  catalog: Catalog,
  options: CatalogCacheOptions,
): Promise<void> {
  // Private whatever the umask: a catalog from a place other users can write is not read.
  await Deno.mkdir(options.directory, { recursive: true, mode: 0o700 });
  const path = cachePath({ key, directory: options.directory });
  await replaceFile(path, JSON.stringify({ format: CACHE_FORMAT, catalog }), { mode: 0o600 });
}

/** True when a cached catalog was built by the same PowerShell and module versions as a live worker. */
export function catalogStillValid(
  cached: Catalog,
  psVersion: string,
  modules: ModuleStatus[],
): boolean {
  if (cached.psVersion !== psVersion) return false;
  const live = new Map(modules.map((m) => [m.name.toLowerCase(), m.version]));
  if (live.size !== cached.modules.length) return false;
  return cached.modules.every((m) => live.get(m.name.toLowerCase()) === m.version);
}

/** Where the catalog of one configuration is cached: its key and the directory. */
interface CatalogSlot extends CatalogCacheOptions {
  key: string;
}

/** The cache slot of these settings and pwsh, or null when there is no cache directory. */
async function catalogSlot(
  input: { shell: ShellSettings; pwsh: string },
): Promise<CatalogSlot | null> {
  const directory = catalogCacheDirectory(input.shell);
  if (!directory) return null;
  return { directory, key: await catalogKey({ shell: input.shell, pwshPath: input.pwsh }) };
}

/** Writes a catalog to its slot; a cache that cannot be written is said and otherwise ignored. */
async function keepCatalog(catalog: Catalog, slot: CatalogSlot): Promise<void> {
  await writeCachedCatalog(slot.key, catalog, slot).catch((error) =>
    log.warning("Cannot write the catalog cache in {Directory}: {Error}", {
      Directory: slot.directory,
      Error: String(error),
    })
  );
}

/**
 * Keeps a catalog discovered outside a server (by `svc doctor`) where a server started with the same
 * settings and pwsh looks first, so that its first `tools/list` and call need no discovery. Nothing
 * is written when there is no cache directory.
 */
export async function storeCatalog(
  catalog: Catalog,
  options: { shell: ShellSettings; pwsh: string },
): Promise<void> {
  const slot = await catalogSlot(options);
  if (slot) await keepCatalog(catalog, slot);
}

/** The part of a worker that discovery uses. */
export interface DiscoveryWorker {
  /** Facts from the worker's hello; the catalog records the PowerShell version. */
  readonly info: { psVersion: string };
  /** Candidate commands by name, module and pattern. */
  commands(
    query: { names: string[]; modules: string[]; patterns: string[] },
  ): Promise<CommandsResult>;
  /** Metadata and help of named commands. */
  describe(
    names: string[],
    help?: boolean,
  ): Promise<{ commands: CommandMeta[]; missing: string[] }>;
  /** The files the session's code comes from. @default none known: a cached catalog is never served */
  sources?(): Promise<SourcesResult>;
}

/** Options of {@linkcode discoverCatalog}. */
export interface DiscoverOptions {
  /** Module import outcomes from the worker's startup. */
  modules: ModuleStatus[];
}

/** Asks a started worker for the configured commands and builds the catalog from their metadata. */
export async function discoverCatalog(
  worker: DiscoveryWorker,
  shell: ShellSettings,
  options: DiscoverOptions,
): Promise<Catalog> {
  const found = await worker.commands(candidateQuery(shell));
  const { names, warnings } = selectCommands(shell, found);
  const described = names.length > 0
    ? await worker.describe(names, true)
    : { commands: [], missing: [] };
  for (const name of described.missing) warnings.push(`Command '${name}' could not be described`);

  const catalog = buildTools(described.commands, {
    psVersion: worker.info.psVersion,
    granularity: shell.toolGranularity,
    modules: options.modules,
    warnings,
  });
  const prompts = await discoverPrompts(worker, shell);
  const overrides = await resolveOverrideKeys(worker, shell, catalog.tools);
  // After describe, which may have loaded the modules of the commands it was asked about.
  const files = worker.sources ? (await worker.sources()).files : [];
  if (shell.startupScriptPath) files.push(shell.startupScriptPath);
  return {
    ...catalog,
    tools: overrides.tools,
    ...(prompts ? { prompts: prompts.prompts } : {}),
    warnings: [...catalog.warnings, ...(prompts?.warnings ?? []), ...overrides.warnings],
    ...(prompts && prompts.warnings.length > 0
      ? { unresolved: [...(catalog.unresolved ?? []), ...prompts.warnings] }
      : {}),
    sources: await stampSources(files),
  };
}

/** The MCP prompts of `PromptCommands`, described by the worker; null when none is configured. */
async function discoverPrompts(
  worker: DiscoveryWorker,
  shell: ShellSettings,
): Promise<ReturnType<typeof buildPrompts> | null> {
  if (shell.promptCommands.length === 0) return null;
  const found = await worker.commands({ names: shell.promptCommands, modules: [], patterns: [] });
  const { names, warnings } = selectPromptCommands(shell, found);
  const described = names.length > 0
    ? await worker.describe(names, true)
    : { commands: [], missing: [] };
  for (const name of described.missing) {
    warnings.push(`Command '${name}' (ShellConfiguration:PromptCommands) could not be described`);
  }
  const built = buildPrompts(described.commands, worker.info.psVersion);
  return { prompts: built.prompts, warnings: [...warnings, ...built.warnings] };
}

/** A started worker that discovery may use, and how to give it back. */
export interface DiscoverySource {
  /** The worker. */
  worker: DiscoveryWorker;
  /** Module import outcomes of its startup. */
  modules: ModuleStatus[];
  /** Called when discovery is done with the worker. */
  release?: () => void;
}

/** Options of {@linkcode CatalogStore}. */
export interface CatalogStoreOptions {
  /** Selection settings. */
  shell: ShellSettings;
  /** Absolute path of pwsh (part of the cache key). */
  pwsh: string;
  /** Provides a started worker for discovery (waits for one when needed). */
  source: () => Promise<DiscoverySource>;
  /** Called when a stale cached catalog was replaced by a fresh one. */
  onChange?: () => void;
  /**
   * Who may call what, to name at each load the offered commands that run code or write files
   * (`lib/dangerous.ts`). @default authentication off
   */
  auth?: DangerSettings["auth"];
}

/** The catalog of a running server: from the cache when possible, else from discovery. */
export class CatalogStore {
  readonly #options: CatalogStoreOptions;
  #catalog: Promise<Catalog>;

  /** Starts loading at once. */
  constructor(options: CatalogStoreOptions) {
    this.#options = options;
    this.#catalog = this.#load();
    this.#catalog.catch(() => {});
  }

  /** The catalog, once known. */
  catalog(): Promise<Catalog> {
    return this.#catalog;
  }

  /** The MCP prompts on offer; fails, and is retried, as {@linkcode CatalogStore.tools} does. */
  async prompts(): Promise<McpPromptDescriptor[]> {
    await this.tools();
    return (await this.#catalog).prompts ?? [];
  }

  /** The tools on offer. A failed discovery is retried by the next caller. */
  async tools(): Promise<ToolDescriptor[]> {
    try {
      return (await this.#catalog).tools;
    } catch (error) {
      const retry = this.#load();
      retry.catch(() => {});
      this.#catalog = retry;
      throw error;
    }
  }

  async #load(): Promise<Catalog> {
    const slot = await catalogSlot(this.#options);
    const cached = slot ? await readCachedCatalog(slot.key, slot) : null;
    if (cached) {
      const changed = await changedSource(cached.sources);
      if (changed === null) {
        log.info(
          "Serving {Count} tools from the catalog cache ({Path}); none of the {Files} files it was built from changed.",
          {
            Count: cached.tools.length,
            Path: cachePath(slot!),
            Files: cached.sources?.files.length ?? 0,
          },
        );
        logWarnings(cached, this.#options);
        this.#revalidate(cached, slot!);
        return cached;
      }
      log.info(
        "Not serving the cached catalog: {Changed} changed since it was built; discovering.",
        {
          Changed: changed,
        },
      );
    }
    return await this.#discover(slot);
  }

  /**
   * Discovers the tools again with `source`, a worker started after `changed` changed, and serves
   * them from now on (writing the cache, then calling `onChange`). A module that loaded before and
   * fails now, or a discovery that fails, keeps the tools as they were: the reason is logged and
   * false returned. `adopt`, when given, runs before clients are told: the transport's switch to
   * workers with the new code, so that no call the notification prompts reaches an old one.
   */
  async reload(
    source: DiscoverySource,
    changed: string,
    adopt?: () => void,
  ): Promise<boolean> {
    const before = await this.#catalog.catch(() => null);
    const failing = source.modules.filter((m) =>
      m.error !== null && !(before?.unresolved ?? []).some((u) => u.includes(`'${m.name}'`))
    );
    if (failing.length > 0) {
      source.release?.();
      for (const module of failing) {
        log.warning(
          "{Changed} changed, and module '{Module}' no longer loads: {Error}; svc keeps serving the {Count} tools it had until the module loads again.",
          {
            Changed: changed,
            Module: module.name,
            Error: module.error,
            Count: before?.tools.length ?? 0,
          },
        );
      }
      return false;
    }
    const slot = await catalogSlot(this.#options);
    const fresh = this.#discover(slot, source);
    try {
      const catalog = await fresh;
      this.#catalog = fresh;
      log.info("{Changed} changed: {Count} tools now (were {Before}).", {
        Changed: changed,
        Count: catalog.tools.length,
        Before: before?.tools.length ?? 0,
      });
      adopt?.();
      this.#options.onChange?.();
      return true;
    } catch (error) {
      log.warning(
        "{Changed} changed, and discovering the tools again failed: {Error}; svc keeps serving the tools it had.",
        { Changed: changed, Error: String(error) },
      );
      return false;
    }
  }

  async #discover(slot: CatalogSlot | null, given?: DiscoverySource): Promise<Catalog> {
    const source = given ?? await this.#options.source();
    let catalog: Catalog;
    try {
      catalog = await discoverCatalog(source.worker, this.#options.shell, {
        modules: source.modules,
      });
    } finally {
      source.release?.();
    }
    logWarnings(catalog, this.#options);
    log.info("Catalog ready: {Count} tools.", { Count: catalog.tools.length });
    if (slot) await keepCatalog(catalog, slot);
    return catalog;
  }

  /** Checks a cached catalog against a live worker; rediscovers and notifies when it is stale. */
  #revalidate(cached: Catalog, slot: CatalogSlot): void {
    this.#options.source().then(async (source) => {
      const valid = catalogStillValid(cached, source.worker.info.psVersion, source.modules);
      source.release?.();
      if (valid) return;
      log.info(
        "The catalog cache is stale (PowerShell or module versions changed); rediscovering.",
      );
      const fresh = this.#discover(slot);
      fresh.catch(() => {});
      await fresh;
      this.#catalog = fresh;
      this.#options.onChange?.();
    }).catch((error) =>
      log.warning("Catalog revalidation failed: {Error}", { Error: String(error) })
    );
  }
}

/** What svc says when a configuration offers nothing (serve's log, doctor's errors). */
export const NO_TOOLS =
  "svc offers no tools: no configured command or module resolved to one; check ShellConfiguration's Commands, Modules and patterns ('svc doctor' lists what each found)";

/** Logs what building a catalog noticed (missing commands or modules, collisions), once per load. */
function logWarnings(catalog: Catalog, options: CatalogStoreOptions): void {
  for (const warning of catalog.warnings) log.warning("{Warning}", { Warning: warning });
  if (catalog.tools.length === 0) log.warning("{Warning}", { Warning: NO_TOOLS });
  const auth = options.auth ?? { enabled: false, requiredRoles: [] };
  for (const warning of dangerousCommandWarnings(catalog.tools, { shell: options.shell, auth })) {
    log.warning("{Warning}", { Warning: warning });
  }
}
