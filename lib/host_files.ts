/**
 * The worker's PowerShell side (`lib/host.ps1` and the parts it dot-sources), embedded as text so a
 * bundle or a compiled binary carries it (docs/architecture.md, decision 7).
 *
 * @module
 */
import HOST_SCRIPT from "./host.ps1" with { type: "text" };
import HOST_ASSEMBLY from "./host/assembly.ps1" with { type: "text" };
import HOST_CS_CALL_LIMITS from "./host/cs/CallLimits.cs" with { type: "text" };
import HOST_CS_CHANGE_COUNTERS from "./host/cs/ChangeCounters.cs" with { type: "text" };
import HOST_CS_CLASS_STATICS from "./host/cs/ClassStatics.cs" with { type: "text" };
import HOST_CS_COMPUTED_COLUMNS from "./host/cs/ComputedColumns.cs" with { type: "text" };
import HOST_CS_ENVIRONMENT from "./host/cs/EnvironmentSnapshot.cs" with { type: "text" };
import HOST_CS_ENGINE_HANDLERS from "./host/cs/EngineHandlers.cs" with { type: "text" };
import HOST_CS_ENGINE_MEMBERS from "./host/cs/EngineMembers.cs" with { type: "text" };
import HOST_CS_ENGINE_STATE from "./host/cs/EngineState.cs" with { type: "text" };
import HOST_CS_ERROR_INFO from "./host/cs/ErrorInfo.cs" with { type: "text" };
import HOST_CS_FAST_RESET from "./host/cs/FastReset.cs" with { type: "text" };
import HOST_CS_FRAME_JSON from "./host/cs/FrameJson.cs" with { type: "text" };
import HOST_CS_IDLE_TRIM from "./host/cs/IdleTrim.cs" with { type: "text" };
import HOST_CS_INVOCATION from "./host/cs/Invocation.cs" with { type: "text" };
import HOST_CS_JSON_VALUE from "./host/cs/JsonValue.cs" with { type: "text" };
import HOST_CS_LIVE_LOG from "./host/cs/LiveLog.cs" with { type: "text" };
import HOST_CS_MEDIA_ITEM from "./host/cs/MediaItem.cs" with { type: "text" };
import HOST_CS_MODULE_SCOPES from "./host/cs/ModuleScopes.cs" with { type: "text" };
import HOST_CS_OUTPUT_BUDGET from "./host/cs/OutputBudget.cs" with { type: "text" };
import HOST_CS_OUTPUT_PROJECTION from "./host/cs/OutputProjection.cs" with { type: "text" };
import HOST_CS_PROCESS_STATE from "./host/cs/ProcessState.cs" with { type: "text" };
import HOST_CS_PROMPTER from "./host/cs/Prompter.cs" with { type: "text" };
import HOST_CS_SLOT_LOOP from "./host/cs/SlotLoop.cs" with { type: "text" };
import HOST_CS_STARTUP_OBJECTS from "./host/cs/StartupObjects.cs" with { type: "text" };
import HOST_CS_STATE_FINGERPRINT from "./host/cs/StateFingerprint.cs" with { type: "text" };
import HOST_CS_STATIC_KNOBS from "./host/cs/StaticKnobs.cs" with { type: "text" };
import HOST_CS_STYLE_STATE from "./host/cs/StyleState.cs" with { type: "text" };
import HOST_CS_TEXT_CUT from "./host/cs/TextCut.cs" with { type: "text" };
import HOST_CS_WORKER_HOST from "./host/cs/WorkerHost.cs" with { type: "text" };
import HOST_COMPLETION from "./host/completion.ps1" with { type: "text" };
import HOST_DISCOVERY from "./host/discovery.ps1" with { type: "text" };
import HOST_OPERATIONS from "./host/operations.ps1" with { type: "text" };
import HOST_PROJECTION from "./host/projection.ps1" with { type: "text" };
import HOST_PROTOCOL from "./host/protocol.ps1" with { type: "text" };
import HOST_RESET from "./host/reset.ps1" with { type: "text" };
import HOST_RUNSPACE_STATE from "./host/runspace_state.ps1" with { type: "text" };
import HOST_SLOT from "./host/slot.ps1" with { type: "text" };
import HOST_SLOT_RUNS from "./host/slot_runs.ps1" with { type: "text" };

/**
 * The PowerShell side of the protocol, embedded so a bundle carries it (docs/architecture.md, decision 7):
 * `host.ps1`, the parts it dot-sources from `host/` and the C# it compiles from `host/cs/`, by path relative to the worker's directory.
 */
const HOST_FILES: Record<string, string> = {
  "host.ps1": HOST_SCRIPT,
  "host/assembly.ps1": HOST_ASSEMBLY,
  "host/cs/CallLimits.cs": HOST_CS_CALL_LIMITS,
  "host/cs/ChangeCounters.cs": HOST_CS_CHANGE_COUNTERS,
  "host/cs/ClassStatics.cs": HOST_CS_CLASS_STATICS,
  "host/cs/ComputedColumns.cs": HOST_CS_COMPUTED_COLUMNS,
  "host/cs/EnvironmentSnapshot.cs": HOST_CS_ENVIRONMENT,
  "host/cs/EngineHandlers.cs": HOST_CS_ENGINE_HANDLERS,
  "host/cs/EngineMembers.cs": HOST_CS_ENGINE_MEMBERS,
  "host/cs/EngineState.cs": HOST_CS_ENGINE_STATE,
  "host/cs/ErrorInfo.cs": HOST_CS_ERROR_INFO,
  "host/cs/FastReset.cs": HOST_CS_FAST_RESET,
  "host/cs/FrameJson.cs": HOST_CS_FRAME_JSON,
  "host/cs/IdleTrim.cs": HOST_CS_IDLE_TRIM,
  "host/cs/Invocation.cs": HOST_CS_INVOCATION,
  "host/cs/JsonValue.cs": HOST_CS_JSON_VALUE,
  "host/cs/LiveLog.cs": HOST_CS_LIVE_LOG,
  "host/cs/MediaItem.cs": HOST_CS_MEDIA_ITEM,
  "host/cs/ModuleScopes.cs": HOST_CS_MODULE_SCOPES,
  "host/cs/OutputBudget.cs": HOST_CS_OUTPUT_BUDGET,
  "host/cs/OutputProjection.cs": HOST_CS_OUTPUT_PROJECTION,
  "host/cs/ProcessState.cs": HOST_CS_PROCESS_STATE,
  "host/cs/Prompter.cs": HOST_CS_PROMPTER,
  "host/cs/SlotLoop.cs": HOST_CS_SLOT_LOOP,
  "host/cs/StartupObjects.cs": HOST_CS_STARTUP_OBJECTS,
  "host/cs/StateFingerprint.cs": HOST_CS_STATE_FINGERPRINT,
  "host/cs/StaticKnobs.cs": HOST_CS_STATIC_KNOBS,
  "host/cs/StyleState.cs": HOST_CS_STYLE_STATE,
  "host/cs/TextCut.cs": HOST_CS_TEXT_CUT,
  "host/cs/WorkerHost.cs": HOST_CS_WORKER_HOST,
  "host/completion.ps1": HOST_COMPLETION,
  "host/discovery.ps1": HOST_DISCOVERY,
  "host/operations.ps1": HOST_OPERATIONS,
  "host/projection.ps1": HOST_PROJECTION,
  "host/protocol.ps1": HOST_PROTOCOL,
  "host/reset.ps1": HOST_RESET,
  "host/runspace_state.ps1": HOST_RUNSPACE_STATE,
  "host/slot.ps1": HOST_SLOT,
  "host/slot_runs.ps1": HOST_SLOT_RUNS,
};

let sourceDigest: Promise<string> | undefined;

/**
 * The digest of the compiled half's sources (`host/cs/*.cs`), as `lib/host/assembly.ps1` computes it
 * when it is not given one: SHA-256 over each file's name, a newline, its text and a newline, in
 * ordinal order of name, as 32 lowercase hex digits (the first 16 bytes). Computed once per svc
 * process and passed to every worker (`-SourceDigest`), which then need not read and hash the
 * sources at each start (about 40 ms of a start's CPU).
 */
export function hostSourceDigest(): Promise<string> {
  sourceDigest ??= (async () => {
    const sources = Object.keys(HOST_FILES)
      .filter((path) => path.startsWith("host/cs/") && path.endsWith(".cs"))
      .map((path) => path.slice("host/cs/".length))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const text = sources.map((name) => `${name}\n${HOST_FILES[`host/cs/${name}`]}\n`).join("");
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
    return [...new Uint8Array(digest).subarray(0, 16)]
      .map((byte) => byte.toString(16).padStart(2, "0"))
      .join("");
  })();
  return sourceDigest;
}

/** Writes `host.ps1` and its parts into `dir` (a worker's private directory). */
export async function writeHostFiles(dir: string): Promise<void> {
  await Deno.mkdir(`${dir}/host/cs`, { recursive: true });
  for (const [path, text] of Object.entries(HOST_FILES)) {
    await Deno.writeTextFile(`${dir}/${path}`, text);
  }
}
