/**
 * The environment a worker process starts with: svc's own, minus every variable svc reads as a
 * setting (they may hold API keys and exporter credentials, and any exposed command that reads the
 * environment would hand them to a caller), plus the few variables that shape pwsh's own start.
 *
 * Removed by default (names matched case-insensitively):
 * - `<Section>__…`: the environment form of every configuration section (`ShellConfiguration__…`,
 *   `PowerShellConfiguration__…`, `McpServer__…`, `Logging__…`, `Authentication__…`), and its
 *   .NET form with `:` (`Authentication:Schemes:…`, which PoshMcp reads and svc does not, so it
 *   holds keys meant for a server, never for a command);
 * - `SVC_*`: svc's own variables (`SVC_CONFIG`, `SVC_PWSH`, `SVC_HOST`, …);
 * - `OTEL_EXPORTER_OTLP_*`: the exporter's settings, whose headers and endpoint may carry
 *   credentials, and `DENO_AUTH_TOKENS` (Deno's registry credentials).
 *
 * `ShellConfiguration:Environment:PassVariables` lets named ones through anyway, and
 * `ShellConfiguration:Environment:RemoveVariables` removes more; both take names or wildcards
 * (`*`, `?`), and removal wins.
 *
 * @module
 */
import type { WorkerEnvironmentRules } from "./config.ts";
import { SETTING_SECTIONS } from "./config_source.ts";

/** The rules when nothing is configured: the default removals only. */
export const DEFAULT_WORKER_ENVIRONMENT: WorkerEnvironmentRules = { pass: [], remove: [] };

/** The variables svc itself reads as settings or credentials; none reaches a worker by default. */
const SVC_OWN: readonly RegExp[] = [
  new RegExp(`^(${SETTING_SECTIONS.join("|")})(__|:)`, "i"),
  /^SVC_/i,
  /^OTEL_EXPORTER_OTLP_/i,
  /^DENO_AUTH_TOKENS$/i,
];

/** A case-insensitive matcher of one name or wildcard (`*` any run, `?` one character). */
function wildcard(pattern: string): RegExp {
  const body = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replaceAll("*", ".*")
    .replaceAll("?", ".");
  return new RegExp(`^${body}$`, "i");
}

/** True when svc keeps `name` from its workers under `rules`. */
function isWithheld(name: string, rules: WorkerEnvironmentRules): boolean {
  if (rules.remove.some((p) => wildcard(p).test(name))) return true;
  if (!SVC_OWN.some((re) => re.test(name))) return false;
  return !rules.pass.some((p) => wildcard(p).test(name));
}

/** `env` without the variables {@linkcode isWithheld} keeps from workers. */
export function workerInheritedEnvironment(
  env: Record<string, string>,
  rules: WorkerEnvironmentRules = DEFAULT_WORKER_ENVIRONMENT,
): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !isWithheld(name, rules)));
}
