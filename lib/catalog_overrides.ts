/**
 * Which offered command each `ShellConfiguration:CommandOverrides` key names. A key may name a tool
 * (`get_process_id`), a command (`Get-Process`), a module-qualified command
 * (`Microsoft.PowerShell.Management\Get-Process`) or an alias (`gps`, or one the startup script
 * set): discovery resolves the keys that are none of the first three in the worker, as it resolves
 * `Commands`, so a key's `RequiredRoles` applies to the command that will run whatever name it uses.
 * A key that names nothing offered is said in a warning, never silently ignored.
 *
 * @module
 */
import type { ToolDescriptor } from "./tool_descriptor.ts";
import type { ShellSettings } from "./config.ts";
import type { CommandsResult } from "./worker_protocol.ts";

/** What resolving the override keys needs of a worker (see `DiscoveryWorker` in `discovery.ts`). */
export interface OverrideResolver {
  /** Candidate commands by name (aliases resolved), as for `Commands`. */
  commands(
    query: { names: string[]; modules: string[]; patterns: string[] },
  ): Promise<CommandsResult>;
}

/** Every name a tool answers to in `CommandOverrides` without asking the worker, lowercased. */
function directNames(tool: ToolDescriptor): string[] {
  const names = [tool.name, tool.command, tool.setToolName];
  if (tool.module) names.push(`${tool.module}\\${tool.command}`);
  for (const set of tool.parameterSetTools ?? []) names.push(...directNames(set));
  return names.filter((n): n is string => !!n).map((n) => n.toLowerCase());
}

/**
 * Resolves the `CommandOverrides` keys that name no tool, command or module-qualified command
 * directly, and records each on the tools of the command it resolves to (`overrideAliases`).
 * Returns the tools and a warning per key that names nothing offered.
 */
export async function resolveOverrideKeys(
  worker: OverrideResolver,
  shell: ShellSettings,
  tools: ToolDescriptor[],
): Promise<{ tools: ToolDescriptor[]; warnings: string[] }> {
  const direct = new Set(tools.flatMap(directNames));
  const pending = Object.keys(shell.commandOverrides).filter((k) => !direct.has(k.toLowerCase()));
  if (pending.length === 0) return { tools, warnings: [] };
  const found = await worker.commands({ names: pending, modules: [], patterns: [] });
  const aliases = new Map<string, string[]>();
  const resolved = new Set<string>();
  for (const candidate of found.commands) {
    const command = candidate.name.toLowerCase();
    if (!tools.some((t) => t.command.toLowerCase() === command)) continue;
    const list = aliases.get(command) ?? [];
    if (!list.includes(candidate.via)) list.push(candidate.via);
    aliases.set(command, list);
    resolved.add(candidate.via.toLowerCase());
  }
  const withAliases = (tool: ToolDescriptor): ToolDescriptor => {
    const names = aliases.get(tool.command.toLowerCase());
    if (!names) return tool;
    return {
      ...tool,
      overrideAliases: names,
      ...(tool.parameterSetTools
        ? { parameterSetTools: tool.parameterSetTools.map(withAliases) }
        : {}),
    };
  };
  const warnings = pending.filter((k) => !resolved.has(k.toLowerCase())).map((k) =>
    `CommandOverrides key '${k}' names no offered tool or command (nor an alias or module-qualified name of one): its settings apply to nothing`
  );
  return { tools: tools.map(withAliases), warnings };
}
