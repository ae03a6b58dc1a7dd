/**
 * The docs' blocks as a reader copies them, for tests that run them as written: a fenced block is
 * found by the comment before it (`<!-- recipe: name -->` for what a reader runs or pastes,
 * `<!-- output: name -->` for what svc prints), and a `svc serve …` line of a doc is started as the
 * reader starts it, from the repository's `bin/svc`.
 *
 * @module
 */
import { defaultCacheDirectory } from "../../lib/cache_directory.ts";
import { outputWithin, unlessExited } from "./deadline.ts";
import { SHARED_CATALOG_CACHE, TEST_PWSH } from "./harness.ts";

const root = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");

/**
 * The text of the fenced `language` block that follows `<!-- marker -->` in `doc` (a path from the
 * repository's root, `docs/http.md`); throws naming both when there is none.
 */
export function docBlock(doc: string, marker: string, language: string): string {
  const text = Deno.readTextFileSync(`${root}/${doc}`);
  const match = new RegExp(`<!-- ${marker} -->\\s*\`\`\`${language}\\n([\\s\\S]*?)\`\`\``)
    .exec(text);
  if (!match) throw new Error(`${doc} has no ${language} block after '<!-- ${marker} -->'`);
  return match[1]!;
}

/** A shell block's commands: comments dropped, backslash-continued lines joined. */
export function commandLines(block: string): string[] {
  return block.replace(/\\\n\s*/g, "").split("\n").map((line) => line.replace(/\s+#.*$/, ""))
    .filter((line) => line.trim() && !line.startsWith("#"));
}

/** A svc started from a doc's line. */
export interface LineServer extends AsyncDisposable {
  /** Where it listens, as its log says: `http://127.0.0.1:41234`. */
  url: string;
  /** Its stderr so far. */
  stderr(): string;
  /** Sends SIGTERM and waits for the exit code. */
  stop(): Promise<number>;
}

/** The program a doc's line names: `bin/svc` in the clone, or `svc`, which README step 1 puts on PATH. */
function program(name: string): string {
  if (name === "bin/svc" || name === "svc") return `${root}/bin/svc`;
  throw new Error(`'${name}' is not svc`);
}

/**
 * The environment a doc's line runs with: this process's, the test run's shared caches, and the
 * PowerShell every test runs on (which is the one svc finds by itself unless `SVC_TEST_PWSH` says
 * otherwise), plus `env`.
 */
function lineEnvironment(env: Record<string, string>): Record<string, string> {
  const hostCache = defaultCacheDirectory();
  return {
    ...Deno.env.toObject(),
    SVC_CACHE_DIR: SHARED_CATALOG_CACHE,
    ...(hostCache ? { SVC_HOST_CACHE_DIR: hostCache } : {}),
    SVC_PWSH: TEST_PWSH,
    ...env,
  };
}

/**
 * Starts `svc <args>` (a doc's `svc serve --transport http …` split into words) from the repository's
 * root, as a reader in the clone types it, and resolves once svc listens.
 */
export async function startLine(
  words: string[],
  options: { env?: Record<string, string> } = {},
): Promise<LineServer> {
  const [name = "", ...args] = words;
  const child = new Deno.Command(program(name), {
    args,
    cwd: root,
    env: lineEnvironment(options.env ?? {}),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let log = "";
  let resolveUrl!: (url: string) => void;
  const listening = new Promise<string>((resolve) => (resolveUrl = resolve));
  (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) {
      log += decoder.decode(chunk, { stream: true });
      const match = /listening on (https?:\/\/\S+):(\d+)/.exec(log);
      if (match) resolveUrl(`${match[1]}:${match[2]}`);
    }
  })().catch(() => {});
  const exited = child.status;
  let url: string;
  try {
    url = await unlessExited(listening, `'${words.join(" ")}' to listen`, child, () => log);
  } catch (error) {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await exited;
    throw error;
  }
  let stopped: Promise<number> | null = null;
  const stop = () => {
    if (!stopped) {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      stopped = exited.then((status) => status.code);
    }
    return stopped;
  };
  return { url, stderr: () => log, stop, [Symbol.asyncDispose]: async () => void await stop() };
}

/** Runs `svc <args>` (a doc's line split into words) from the repository's root to its end. */
export async function runLine(
  words: string[],
  options: { env?: Record<string, string> } = {},
): Promise<{ code: number; stderr: string }> {
  const [name = "", ...args] = words;
  const output = await outputWithin(program(name), {
    args,
    cwd: root,
    env: lineEnvironment(options.env ?? {}),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }, `'${words.join(" ")}'`);
  return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
}
