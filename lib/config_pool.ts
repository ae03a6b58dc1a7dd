/**
 * The HTTP worker pool's settings (`McpServer:RunspacePool:*`, the deprecated version 1 keys, and
 * `SubprocessHostMode`): their defaults, how they are read, and how the host mode and
 * `RunspacesPerProcess` agree.
 *
 * @module
 */
import type { Reader } from "./config_reader.ts";
import { HOST_MODES, settingOf } from "./config_schema.ts";

/**
 * How workers map onto pwsh processes (`McpServer:SubprocessHostMode`, PoshMcp's
 * `PowerShellConfiguration:SubprocessHostMode`): `Pool` shares processes of `RunspacesPerProcess`
 * workers, `ProcessPool` gives every worker a process of its own, `Single` runs every worker in one
 * process. With authentication a process serves one principal at a time in every mode.
 */
export type HostMode = (typeof HOST_MODES)[number];

/** Settings of the HTTP worker pool, `McpServer:RunspacePool:*` (durations in ms). */
export interface PoolSettings {
  /** Most workers at once. @default 16 (`MaxPoolSize`) */
  maxPoolSize: number;
  /** Replenishment floor and readiness minimum. @default 2 (`MinPoolSize`) */
  minPoolSize: number;
  /** Workers warmed at startup. @default 2 (`EagerWarmCount`) */
  eagerWarmCount: number;
  /** Idle time after which a worker above the minimum is reclaimed. @default 300000 (`IdleTtl`, "00:05:00") */
  idleTtlMs: number;
  /** Interval of the idle sweep. @default 30000 (`SweepInterval`, "00:00:30") */
  sweepIntervalMs: number;
  /** Longest wait for a worker before a call is refused. @default 15000 (`AcquisitionTimeout`, "00:00:15") */
  acquisitionTimeoutMs: number;
  /** Grace period of a stopped pipeline or closing worker. @default 5000 (`StopTimeout`, "00:00:05") */
  stopTimeoutMs: number;
  /** Time in-flight calls get on shutdown. @default 30000 (`ShutdownDrainTimeout`, "00:00:30") */
  shutdownDrainTimeoutMs: number;
  /** Interval of the replenishment check. @default 5000 (`ReplenishCheckInterval`, "00:00:05") */
  replenishCheckIntervalMs: number;
  /**
   * Workers (runspaces) one pwsh process serves. 1 gives every worker a process of its own: the
   * strongest isolation, at a process's memory and start time per worker. @default 16 (`RunspacesPerProcess`)
   */
  runspacesPerProcess: number;
  /**
   * A worker process whose working set exceeds this many MB after a call is retired and replaced
   * (the log says why); 0 for no ceiling. @default 1024 (`MaxWorkerMemoryMB`)
   */
  maxWorkerMemoryMB: number;
  /**
   * The process model, from `SubprocessHostMode`, or from `RunspacesPerProcess` when that is unset
   * (1 is `ProcessPool`). @default "Pool" (`McpServer:SubprocessHostMode`)
   */
  hostMode: HostMode;
}

/**
 * Version 1 keys (SPEC §9.4; their replacements are in lib/config_schema.ts): each present one
 * warns once, and applies only when its v2 keys are absent.
 */
const V1_KEYS = [
  "SessionRunspaceCapacity",
  "SessionRunspaceWarmStandbyCount",
  "SessionRunspaceIdleTtlSeconds",
  "SessionRunspaceSweepIntervalSeconds",
  "SessionRunspaceAcquisitionTimeoutSeconds",
] as const;

/** The keys that replace a deprecated key path, joined by "and", or null when it is not one. */
export function replacementOf(key: string): string | null {
  return settingOf(key)?.replacedBy?.join(" and ") ?? null;
}

function readV1(read: Reader): Partial<Record<(typeof V1_KEYS)[number], number>> {
  const out: Partial<Record<(typeof V1_KEYS)[number], number>> = {};
  for (const name of V1_KEYS) {
    const key = `McpServer:${name}`;
    if (read.raw(key)[1] === undefined) continue;
    read.warnings.push(
      `Configuration key '${key}' is deprecated and will be removed in the next major version; use '${
        settingOf(key)!.replacedBy!.join("' and '")
      }' instead${name.endsWith("Seconds") ? " (as a time span, hh:mm:ss)" : ""}`,
    );
    // Read only when given (the schema refuses an empty one): it has no default of its own.
    out[name] = read.integer(key);
  }
  return out;
}

/** Reads `McpServer:RunspacePool:*` (and the deprecated version 1 keys) and the host mode. */
export function readPool(read: Reader): PoolSettings {
  const key = (name: string) => `McpServer:RunspacePool:${name}`;
  const v1 = readV1(read);
  // A version 1 key present is the default of its replacement; else the replacement's own.
  const seconds = (value: number | undefined) => value === undefined ? undefined : value * 1000;
  const pool: PoolSettings = {
    maxPoolSize: read.integer(key("MaxPoolSize"), v1.SessionRunspaceCapacity),
    minPoolSize: read.integer(key("MinPoolSize"), v1.SessionRunspaceWarmStandbyCount),
    eagerWarmCount: read.integer(key("EagerWarmCount"), v1.SessionRunspaceWarmStandbyCount),
    idleTtlMs: read.timeSpan(key("IdleTtl"), seconds(v1.SessionRunspaceIdleTtlSeconds)),
    sweepIntervalMs: read.timeSpan(
      key("SweepInterval"),
      seconds(v1.SessionRunspaceSweepIntervalSeconds),
    ),
    acquisitionTimeoutMs: read.timeSpan(
      key("AcquisitionTimeout"),
      seconds(v1.SessionRunspaceAcquisitionTimeoutSeconds),
    ),
    stopTimeoutMs: read.timeSpan(key("StopTimeout")),
    shutdownDrainTimeoutMs: read.timeSpan(key("ShutdownDrainTimeout")),
    replenishCheckIntervalMs: read.timeSpan(key("ReplenishCheckInterval")),
    runspacesPerProcess: read.integer(key("RunspacesPerProcess")),
    maxWorkerMemoryMB: read.integer(key("MaxWorkerMemoryMB")),
    hostMode: "Pool",
  };
  if (pool.minPoolSize > pool.maxPoolSize) {
    throw read.invalid(
      key("MinPoolSize"),
      `${pool.minPoolSize} is larger than '${key("MaxPoolSize")}' (${pool.maxPoolSize})`,
    );
  }
  if (pool.eagerWarmCount > pool.maxPoolSize) {
    throw read.invalid(
      key("EagerWarmCount"),
      `${pool.eagerWarmCount} is larger than '${key("MaxPoolSize")}' (${pool.maxPoolSize})`,
    );
  }
  return withHostMode(read, pool);
}

const HOST_MODE_KEYS = [
  "McpServer:SubprocessHostMode",
  "PowerShellConfiguration:SubprocessHostMode",
];

/**
 * Maps the SPEC's `SubprocessHostMode` onto the pool: `ProcessPool` is `RunspacesPerProcess` 1,
 * `Single` is one process of `MaxPoolSize` runspaces, `Pool` keeps `RunspacesPerProcess` (16). A
 * `RunspacesPerProcess` saying otherwise is an error rather than a silent choice of one of them.
 */
function withHostMode(read: Reader, pool: PoolSettings): PoolSettings {
  const isSet = (key: string) => !["", null, undefined].includes(read.raw(key)[1] as string);
  // Read only when set: unset, the mode follows RunspacesPerProcess (below).
  const given = HOST_MODE_KEYS.filter(isSet).map((key) => ({
    key,
    mode: read.choice(key, HOST_MODES),
  }));
  if (given.length === 2 && given[0]!.mode !== given[1]!.mode) {
    throw read.invalid(
      given[0]!.key,
      `'${given[0]!.mode}' contradicts '${given[1]!.key}' ('${given[1]!.mode}'); set one of them`,
    );
  }
  const perProcess = "McpServer:RunspacePool:RunspacesPerProcess";
  const rpp = pool.runspacesPerProcess;
  if (given.length === 0) return { ...pool, hostMode: rpp === 1 ? "ProcessPool" : "Pool" };
  const { key, mode } = given[0]!;
  const wanted = mode === "ProcessPool" ? 1 : mode === "Single" ? pool.maxPoolSize : null;
  const contradicts = isSet(perProcess) &&
    (wanted === null ? rpp === 1 : rpp !== wanted);
  if (contradicts) {
    const why = mode === "ProcessPool"
      ? "ProcessPool gives every worker a process of its own (1)"
      : mode === "Single"
      ? `Single runs every worker in one process (MaxPoolSize, ${pool.maxPoolSize})`
      : "Pool shares processes (more than 1; ProcessPool is 1)";
    throw read.invalid(
      perProcess,
      `${rpp} contradicts '${key}' (${mode}): ${why}; remove one of the two keys`,
    );
  }
  return { ...pool, hostMode: mode, runspacesPerProcess: wanted ?? rpp };
}
