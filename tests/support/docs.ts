/**
 * The docs' blocks as a reader copies them, for tests that run them as written: a fenced block is
 * found by the comment before it (`<!-- recipe: name -->` for what a reader runs or pastes,
 * `<!-- output: name -->` for what svc prints), and a doc's `svc serve …` line is started as the
 * reader starts it, from the repository's `bin/svc`.
 *
 * @module
 */
import { defaultCacheDirectory } from "../../lib/cache_directory.ts";
import { outputWithin } from "./deadline.ts";
import { followHttpSvc, type ServingProcess, SHARED_CATALOG_CACHE, TEST_PWSH } from "./harness.ts";

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
export interface LineServer extends ServingProcess, AsyncDisposable {}

/** The program a doc's line names: `bin/svc` in the clone, or `svc`, on PATH by README step 1. */
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

/** The program and options that run `svc <args>` (a doc's line, in words) from the repository. */
function lineCommand(
  words: string[],
  env: Record<string, string>,
): [string, Omit<Deno.CommandOptions, "signal">] {
  const [name = "", ...args] = words;
  return [program(name), {
    args,
    cwd: root,
    env: lineEnvironment(env),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }];
}

/**
 * Starts a doc's `svc serve --transport http …` line (in words) from the repository's root, as a
 * reader in the clone types it, and resolves once svc listens.
 */
export async function startLine(
  words: string[],
  options: { env?: Record<string, string> } = {},
): Promise<LineServer> {
  const [command, commandOptions] = lineCommand(words, options.env ?? {});
  const child = new Deno.Command(command, commandOptions).spawn();
  const serving = await followHttpSvc(child, { warm: false });
  return { ...serving, [Symbol.asyncDispose]: async () => void await serving.stop() };
}

/** Runs `svc <args>` (a doc's line split into words) from the repository's root to its end. */
export async function runLine(
  words: string[],
  options: { env?: Record<string, string> } = {},
): Promise<{ code: number; stderr: string }> {
  const [command, commandOptions] = lineCommand(words, options.env ?? {});
  const output = await outputWithin(command, commandOptions, `'${words.join(" ")}'`);
  return { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
}
