/**
 * The README walk's configuration, made the way the walk makes it: the module of its step 2 saved
 * in a directory of its own, then `svc create-config` and `svc update-config --add-module` there.
 * For tests and benchmarks that need what a user of the walk serves without running the walk.
 *
 * @module
 */
import { runSvc } from "./harness.ts";

const root = new URL("../../", import.meta.url).pathname;

/** The text of the README's fenced `language` block that follows `<!-- marker -->`. */
export async function readmeBlock(marker: string, language: string): Promise<string> {
  const readme = await Deno.readTextFile(`${root}README.md`);
  const match = new RegExp(`<!-- ${marker} -->\\s*\`\`\`${language}\\n([\\s\\S]*?)\`\`\``)
    .exec(readme);
  if (!match) throw new Error(`README has no ${language} block after '<!-- ${marker} -->'`);
  return match[1]!;
}

/** The walk's files in a temp directory, removed when disposed. */
export interface WalkFiles extends AsyncDisposable {
  /** The directory: `MyTools.psm1` and `appsettings.json`. */
  dir: string;
  /** Path of the configuration file. */
  config: string;
  /** Path of the module. */
  module: string;
}

/** Writes the walk's module and configuration into a new temp directory. */
export async function walkConfiguration(): Promise<WalkFiles> {
  const dir = await Deno.makeTempDir({ prefix: "svc-walk-" });
  const module = `${dir}/MyTools.psm1`;
  await Deno.writeTextFile(module, await readmeBlock("guide: MyTools.psm1", "powershell"));
  for (const args of [["create-config"], ["update-config", "--add-module", module]]) {
    const run = await runSvc(args, { cwd: dir });
    if (run.code !== 0) throw new Error(`svc ${args.join(" ")} failed: ${run.stderr}`);
  }
  return {
    dir,
    config: `${dir}/appsettings.json`,
    module,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}
