/**
 * What `svc update-config` was asked to put in the file that svc will not do, one sentence each: a
 * command (or include pattern) that an exclude pattern hides, naming the pattern and the command
 * that would un-hide it; a module path where there is nothing. The file is written all the same:
 * the user may be about to fix the other half.
 *
 * @module
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { wildcard } from "./wildcard.ts";

/** The lists as the edited file has them, and what was asked to be in them. */
export interface RequestedLists {
  /** The configuration file, as given: relative module paths are its folder's. */
  path: string;
  /** Commands asked for (added now or already there). */
  commands: string[];
  /** Modules asked for. */
  modules: string[];
  /** Include patterns asked for. */
  includes: string[];
  /** Every exclude pattern the file has after the edit. */
  excludes: string[];
  /** The key the exclude patterns are under, e.g. `ShellConfiguration:ExcludePatterns`. */
  excludeKey: string;
}

/**
 * Warnings for what was asked to be there that svc will not offer: a command an exclude pattern
 * hides (exclusion always wins), an include pattern whose matches one hides, a module path where
 * there is nothing.
 */
export function requestWarnings(lists: RequestedLists): string[] {
  const { excludes, excludeKey } = lists;
  const hiding = (name: string) => excludes.find((pattern) => wildcard(pattern).test(name));
  const unhide = (pattern: string, them: "it" | "them") =>
    `'svc update-config --remove-exclude-pattern ${
      JSON.stringify(pattern)
    }' would offer ${them}, with every other command that pattern hides`;
  const warnings: string[] = [];
  for (const command of lists.commands) {
    // A module-qualified name is tested by its command's name too, as discovery tests it.
    const pattern = hiding(command) ?? hiding(command.split("\\").at(-1)!);
    if (pattern === undefined) continue;
    warnings.push(
      `Command '${command}' is hidden by the exclude pattern '${pattern}' (${excludeKey}) and will not be offered: ${
        unhide(pattern, "it")
      }`,
    );
  }
  for (const include of lists.includes) {
    const pattern = hiding(include);
    if (pattern === undefined) continue;
    warnings.push(
      `Include pattern '${include}' selects commands that the exclude pattern '${pattern}' (${excludeKey}) hides, so they will not be offered: ${
        unhide(pattern, "them")
      }`,
    );
  }
  for (const module of lists.modules) {
    // A bare name is looked up on PSModulePath by the worker; only a path can be checked here.
    if (!/[\\/]/.test(module)) continue;
    const where = isAbsolute(module) ? module : resolve(dirname(resolve(lists.path)), module);
    try {
      Deno.statSync(where);
    } catch {
      warnings.push(
        `Module '${module}' is not there: no file or folder at '${where}'${
          isAbsolute(module)
            ? ""
            : " (a relative path is resolved against the configuration file's folder)"
        }; svc will warn at every start and offer none of its commands`,
      );
    }
  }
  return warnings;
}
