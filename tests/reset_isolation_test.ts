/**
 * Nothing a call leaves behind reaches the next call (issue 28, findings 0, 3 and 7), on real pwsh:
 * each test plants state in call 1 through `Invoke-Expression`, resets the worker as the pool does,
 * and looks for it in call 2. What the reset restores must be gone; what it cannot restore must
 * retire the worker's process (a `RETIRED` error from `reset`, so the pool starts a fresh one).
 */
import assert from "node:assert/strict";
import { WorkerError } from "../lib/errors.ts";
import { RunspaceWorker, type WorkerOptions } from "../lib/worker.ts";
import type { ResetResult } from "../lib/worker_protocol.ts";
import {
  eventually,
  FIXTURE_MODULE,
  fixtureConfig,
  isAlive,
  post,
  processesMatching,
  startHttpSvc,
  TEST_PWSH as pwsh,
} from "./support/harness.ts";

/** What a worker's startup runs: its modules, or modules and a startup script. */
type Startup = string[] | { modules?: string[]; script?: string };

async function startWorker(
  options: Partial<WorkerOptions> = {},
  startup: Startup = [],
): Promise<RunspaceWorker> {
  const { modules = [], script = null } = Array.isArray(startup) ? { modules: startup } : startup;
  const worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000, ...options });
  await worker.startup({ modules, scriptPath: null, script }, 60_000);
  return worker;
}

async function run(worker: RunspaceWorker, script: string): Promise<unknown[]> {
  const { result } = await worker.invoke(
    { command: "Invoke-Expression", parameters: { Command: script }, credentials: [], depth: 2 },
    { timeoutMs: 30_000 },
  );
  assert.deepEqual(result.errors, [], `'${script}' failed`);
  return result.output;
}

/** The reset's outcome: its result, or the reason the process was retired. */
async function reset(worker: RunspaceWorker): Promise<ResetResult | { retired: string }> {
  try {
    return await worker.reset();
  } catch (error) {
    if (error instanceof WorkerError && error.code === "RETIRED") return { retired: error.message };
    throw error;
  }
}

/** Plants with `plant`, resets, and returns what `read` sees then (the reset must not retire). */
async function restored(
  plant: string,
  read: string,
  startup: Startup = [],
): Promise<{ before: unknown[]; after: unknown[] }> {
  await using worker = await startWorker({}, startup);
  const before = await run(worker, read);
  await run(worker, plant);
  const outcome = await reset(worker);
  assert.ok(!("retired" in outcome), `the reset retired the worker: ${JSON.stringify(outcome)}`);
  return { before, after: await run(worker, read) };
}

/** Plants with `plant` and expects the reset to retire the process, saying `why`. */
async function retires(plant: string, why: RegExp, startup: Startup = []): Promise<void> {
  await using worker = await startWorker({}, startup);
  await run(worker, plant);
  const outcome = await reset(worker);
  assert.ok("retired" in outcome, `the reset kept the worker: ${JSON.stringify(outcome)}`);
  assert.match(outcome.retired, why);
  assert.equal(worker.alive, false);
}

Deno.test("reset: command-lookup actions planted by a call are removed", async () => {
  const read = "Get-Date -Date 2026-11-26 -Format yyyy; " +
    "@($ExecutionContext.InvokeCommand.PreCommandLookupAction, $ExecutionContext.InvokeCommand.PostCommandLookupAction, $ExecutionContext.InvokeCommand.CommandNotFoundAction).Where({ $null -ne $_ }).Count";
  const plant =
    "$ExecutionContext.InvokeCommand.PreCommandLookupAction = { param($n, $e) if ($n -eq 'Get-Date') { $e.CommandScriptBlock = { 'planted' }; $e.StopSearch = $true } }; " +
    "$ExecutionContext.InvokeCommand.PostCommandLookupAction = { }; $ExecutionContext.InvokeCommand.CommandNotFoundAction = { }";
  const { before, after } = await restored(plant, read);
  assert.deepEqual(before, ["2026", 0]);
  assert.deepEqual(after, ["2026", 0]);
});

// A script block attached to the runspace's own .NET events and actions (not a PowerShell event
// subscription) ran inside every later call of the worker, whoever made it, and inside the reset.
Deno.test("reset: a location action and .NET handlers a call attached to the runspace are removed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-handlers-" });
  const marks = `${dir}/marks.txt`;
  try {
    await using worker = await startWorker();
    const mark = (what: string) => `{ Add-Content -LiteralPath '${marks}' -Value '${what}' }`;
    await run(
      worker,
      `$ExecutionContext.InvokeCommand.LocationChangedAction = ${mark("location")}; ` +
        `[runspace]::DefaultRunspace.add_AvailabilityChanged(${mark("availability")}); ` +
        `[runspace]::DefaultRunspace.Debugger.add_BreakpointUpdated(${mark("breakpoint")})`,
    );
    assert.ok(!("retired" in await reset(worker)));
    // The planting call's own end may have run them; what counts is every later call.
    await Deno.remove(marks).catch(() => {});
    assert.deepEqual(
      await run(
        worker,
        "Set-Location -LiteralPath ([IO.Path]::GetTempPath()); " +
          "$null = Set-PSBreakpoint -Variable svcProbe -Mode Read; Get-PSBreakpoint | Remove-PSBreakpoint; " +
          "$null -eq $ExecutionContext.InvokeCommand.LocationChangedAction",
      ),
      [true],
    );
    assert.ok(!("retired" in await reset(worker)));
    const seen = await Deno.readTextFile(marks).catch(() => "");
    assert.equal(seen, "", `planted handlers ran in a later call: ${seen}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// A transcript belongs to the runspace: left running, it wrote the next call's command, arguments and
// output (another caller's, once the process serves one) to the file the planting call chose.
Deno.test("reset: a transcript a call started is stopped", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-transcript-" });
  const file = `${dir}/transcript.txt`;
  try {
    await using worker = await startWorker();
    await run(worker, `$null = Start-Transcript -LiteralPath '${file}'`);
    assert.ok(!("retired" in await reset(worker)));
    assert.deepEqual(await run(worker, "'victim-output-5e1'"), ["victim-output-5e1"]);
    assert.ok(!("retired" in await reset(worker)));
    assert.doesNotMatch(await Deno.readTextFile(file).catch(() => ""), /victim-output-5e1/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("reset: the pipeline thread's culture and the default cultures go back", async () => {
  const read = "Get-Date -Date 2026-11-26 -Format dddd; [cultureinfo]::CurrentUICulture.Name; " +
    "$null -eq [cultureinfo]::DefaultThreadCurrentCulture";
  const plant =
    "[cultureinfo]::CurrentCulture = 'de-DE'; [cultureinfo]::CurrentUICulture = 'de-DE'; " +
    "[cultureinfo]::DefaultThreadCurrentCulture = 'de-DE'; [cultureinfo]::DefaultThreadCurrentUICulture = 'de-DE'";
  const { before, after } = await restored(plant, read);
  assert.notEqual(before[0], "Donnerstag");
  assert.deepEqual(after, before);
});

// The engine keeps the language mode in more than SessionState (setting it back there, the next
// call's Invoke-Expression still ran constrained on 7.6.9), so a change to it retires the process,
// on the fast path (nothing else changed) and on the full one.
Deno.test("reset: a language mode changed by a call retires the process", async () => {
  await retires(
    "$ExecutionContext.SessionState.LanguageMode = 'ConstrainedLanguage'",
    /language mode/,
  );
  await retires(
    "$global:planted = 1; $ExecutionContext.SessionState.LanguageMode = 'ConstrainedLanguage'",
    /language mode/,
  );
});

Deno.test("reset: argument completers registered by a call are removed", async () => {
  const read =
    "(TabExpansion2 -inputScript 'Get-Date -Format ' -cursorColumn 17).CompletionMatches.Where({ $_.CompletionText -eq 'planted' }).Count";
  const plant =
    "Register-ArgumentCompleter -CommandName Get-Date -ParameterName Format -ScriptBlock { 'planted' }; " +
    "Register-ArgumentCompleter -Native -CommandName sleep -ScriptBlock { 'planted' }";
  const { before, after } = await restored(plant, read);
  assert.deepEqual(before, [0]);
  assert.deepEqual(after, [0]);
});

Deno.test("reset: a ReadOnly variable changed with -Force ($HOME) is put back", async () => {
  const { before, after } = await restored(
    "Set-Variable -Name HOME -Value /planted -Scope Global -Force",
    "$HOME; (Get-Variable -Name HOME).Options.ToString()",
  );
  assert.notEqual(before[0], "/planted");
  assert.deepEqual(after, before);
});

Deno.test("reset: the process's current directory goes back", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "svc-cwd-" }));
  try {
    const { before, after } = await restored(
      `[Environment]::CurrentDirectory = '${dir}'`,
      "[Environment]::CurrentDirectory",
    );
    assert.notEqual(before[0], dir);
    assert.deepEqual(after, before);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("reset: AppDomain data set by a call is removed", async () => {
  const { after } = await restored(
    "[AppDomain]::CurrentDomain.SetData('svc.planted', 'x')",
    "$null -eq [AppDomain]::CurrentDomain.GetData('svc.planted')",
  );
  assert.deepEqual(after, [true]);
});

Deno.test("reset: type data changed by a call retires the process", async () => {
  await retires(
    "Update-TypeData -TypeName System.String -MemberType ScriptProperty -MemberName Planted -Value { 'planted' } -Force",
    /type data/,
  );
});

Deno.test("reset: format data changed by a call retires the process", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-format-" });
  const file = `${dir}/planted.format.ps1xml`;
  await Deno.writeTextFile(
    file,
    `<Configuration><ViewDefinitions><View><Name>planted</Name><ViewSelectedBy><TypeName>Svc.Planted</TypeName></ViewSelectedBy>
<TableControl><TableHeaders><TableColumnHeader/></TableHeaders><TableRowEntries><TableRowEntry><TableColumnItems>
<TableColumnItem><PropertyName>X</PropertyName></TableColumnItem></TableColumnItems></TableRowEntry></TableRowEntries></TableControl>
</View></ViewDefinitions></Configuration>`,
  );
  try {
    await retires(`Update-FormatData -PrependPath '${file}'`, /format data/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("reset: script-block columns computed for a call's output leave nothing for the reset, or retire a column that ignored the stop", async () => {
  await using worker = await startWorker({}, [FIXTURE_MODULE]);
  const { result } = await worker.invoke(
    {
      command: "Get-FixtureSample",
      parameters: { Count: 2 },
      credentials: [],
      depth: 2,
      properties: "display",
    },
    { timeoutMs: 30_000 },
  );
  const items = result.output as Record<string, unknown>[];
  assert.deepEqual(items.map((item) => [item.Greeting, item.Broken]), [
    ["Hello, sample1!", null],
    ["Hello, sample2!", null],
  ]);
  // The columns ran in the worker runspace, one of them failing: the reset finds nothing changed.
  const outcome = await reset(worker);
  assert.ok(!("retired" in outcome), `the reset retired the worker: ${JSON.stringify(outcome)}`);
  assert.equal(outcome.path, "fast");

  // A column blocked in .NET ignores the stop at the 1 s bound: the call is answered a second later
  // all the same, and the reset retires the process that column still occupies.
  const started = performance.now();
  const blocked = await worker.invoke(
    {
      command: "Get-FixtureSample",
      parameters: { Count: 1, BlockMilliseconds: 8_000 },
      credentials: [],
      depth: 2,
      properties: "display",
    },
    { timeoutMs: 30_000 },
  );
  const elapsed = performance.now() - started;
  assert.ok(elapsed < 5_000, `answered after ${Math.round(elapsed)} ms`);
  assert.equal((blocked.result.output as { Late: unknown }[])[0]!.Late, null);
  assert.equal(blocked.result.shape?.uncomputed, 1);
  const retired = await reset(worker);
  assert.ok("retired" in retired, `the reset kept the worker: ${JSON.stringify(retired)}`);
  assert.match(retired.retired, /still running a format view's script-block column/);
});

Deno.test("reset: an Add-Type class (static fields) retires the process", async () => {
  await retires(
    "Add-Type -TypeDefinition 'public static class SvcPlanted { public static string Value = \"planted\"; }'",
    /assembly/,
  );
});

Deno.test("reset: a runspace a call opened and left open retires the process", async () => {
  await retires(
    "$global:planted = [runspacefactory]::CreateRunspace(); $global:planted.Open()",
    /runspace/,
  );
});

// A sibling slot opens its worker runspace in the background; the reset of a slot that runs at the
// same time must count it as the host's, not as a call's leftover (this retired a process whenever the
// pool grew inside it while a call ended: issue 28's tenant benchmark saw one process start per growth).
Deno.test("reset: a sibling worker opening meanwhile does not retire the process", async () => {
  await using worker = await startWorker({ runspacesPerProcess: 8 });
  const siblings: RunspaceWorker[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      await run(worker, "$null = 1");
      const opening = worker.openSibling(`sibling ${i}`);
      const outcome = await reset(worker);
      siblings.push(await opening);
      assert.ok(
        !("retired" in outcome),
        `the reset retired the worker: ${JSON.stringify(outcome)}`,
      );
    }
  } finally {
    for (const sibling of siblings) await sibling.close();
  }
});

/** A startup module whose exported function reports its script scope's state, in a temp directory. */
async function withScopeModule(body: (module: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-scope-" });
  const module = `${dir}/SvcScope.psm1`;
  await Deno.writeTextFile(
    module,
    "$script:Secret = 'clean'\nfunction Get-ScopeHelper { 'helper' }\n" +
      'function Get-ScopeState { "$script:Secret/$(Get-ScopeHelper)/$($null -eq $script:Added)" }\n' +
      "Export-ModuleMember -Function Get-ScopeState\n",
  );
  try {
    await body(module);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("reset: variables a call sets inside a startup module's scope are put back", async () => {
  await withScopeModule(async (module) => {
    const { before, after } = await restored(
      "& (Get-Module SvcScope) { $script:Secret = 'planted'; $script:Added = 1 }",
      "Get-ScopeState",
      [module],
    );
    assert.deepEqual(before, ["clean/helper/True"]);
    assert.deepEqual(after, before);
  });
});

Deno.test("reset: a function a call defines inside a startup module's scope retires the process", async () => {
  await withScopeModule(async (module) => {
    await retires(
      "& (Get-Module SvcScope) { function script:Get-ScopeHelper { 'planted' } }",
      /functions of module 'SvcScope'/,
      [module],
    );
  });
});

// Issue 28, finding 3: a call that changes a startup collection in place, at any depth, leaves every
// variable pointing at the same object; the reset puts the items back.
Deno.test("reset: nested items of startup collections and custom objects are put back", async () => {
  const script =
    "$global:Cfg = @{ Db = @{ Name = 'clean' }; List = [System.Collections.Generic.List[object]]::new(); " +
    "Rows = [System.Collections.ArrayList]@(@{ K = 'clean' }); Obj = [pscustomobject]@{ Inner = [pscustomobject]@{ V = 1 } }; " +
    "Arr = @([ordered]@{ X = 1 }); Deep = @{ A = @{ B = @{ C = @{ D = @(@{ E = 'clean' }) } } } } }";
  const plant =
    "$Cfg.Db.Name = 'planted'; $Cfg.Db.Added = 1; $Cfg.List.Add(1); $Cfg.Rows[0].K = 'planted'; " +
    "$Cfg.Obj.Inner.V = 2; $Cfg.Obj.Inner | Add-Member -NotePropertyName Added -NotePropertyValue 1; " +
    "$Cfg.Arr[0].X = 2; $Cfg.Arr[0].Y = 3; $Cfg.Deep.A.B.C.D[0].E = 'planted'";
  const read = "$Cfg.Db.Name; $Cfg.Db.Count; $Cfg.List.Count; $Cfg.Rows[0].K; $Cfg.Obj.Inner.V; " +
    "@($Cfg.Obj.Inner.PSObject.Properties).Count; $Cfg.Arr[0].X; $Cfg.Arr[0].Count; $Cfg.Deep.A.B.C.D[0].E";
  const { before, after } = await restored(plant, read, { script });
  assert.deepEqual(before, ["clean", 1, 0, "clean", 1, 1, 1, 1, "clean"]);
  assert.deepEqual(after, before);
});

Deno.test("reset: nested items of a startup module's script-scope collections are put back", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-nested-" });
  const module = `${dir}/SvcNested.psm1`;
  await Deno.writeTextFile(
    module,
    "$script:Cache = @{ Inner = @{ Hits = 0 }; Seen = [System.Collections.Generic.List[string]]::new() }\n" +
      "function Add-SvcHit { $script:Cache.Inner.Hits++; $script:Cache.Seen.Add('planted') }\n" +
      'function Get-SvcHit { "$($script:Cache.Inner.Hits)/$($script:Cache.Seen.Count)" }\n',
  );
  try {
    const { before, after } = await restored("Add-SvcHit", "Get-SvcHit", [module]);
    assert.deepEqual(before, ["0/0"]);
    assert.deepEqual(after, before);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// Past its limit the reset cannot compare the startup state at a bounded cost, so it retires the
// process rather than let a change through.
Deno.test("reset: startup collections too large to compare retire the process after a call", async () => {
  await retires("$null = 1", /more than 100000 items/, {
    script: "$global:Rows = [object[]]::new(150000)",
  });
});

// The check is bounded by the number of items, never the size of a value: a 10 MB buffer nested in
// a startup hashtable costs the reset what a small one does.
Deno.test("reset: a 10 MB buffer nested in a startup collection keeps the reset cheap", async () => {
  await using worker = await startWorker({}, {
    script:
      "$global:Cfg = @{ Buffer = [byte[]]::new(10MB); Rows = [System.Collections.Generic.List[byte]]::new([byte[]]::new(10MB)) }",
  });
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    await run(worker, "$Cfg.Buffer.Length");
    const result = await worker.reset();
    assert.equal(result.path, "fast");
    times.push(result.durationMs);
  }
  // About 0-1 ms on a quiet machine; boxing 20 M bytes took seconds.
  assert.ok(Math.min(...times) < 50, `resets took ${times.join(", ")} ms`);
});

/** A startup module with a PowerShell class whose static fields its functions change and report. */
async function withClassModule(body: (module: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-class-" });
  const module = `${dir}/SvcClass.psm1`;
  await Deno.writeTextFile(
    module,
    "class SvcCounter {\n  static [int]$Count = 3\n  static [hashtable]$Cache = @{ a = @{ n = 1 } }\n  hidden static [string]$Name = 'clean'\n}\n" +
      "function Set-SvcCounter { [SvcCounter]::Count = 99; [SvcCounter]::Cache['b'] = 2; [SvcCounter]::Cache.a.n = 5; [SvcCounter]::Name = 'planted' }\n" +
      'function Get-SvcCounter { "$([SvcCounter]::Count)/$([SvcCounter]::Cache.Count)/$([SvcCounter]::Cache.a.n)/$([SvcCounter]::Name)" }\n',
  );
  try {
    await body(module);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("reset: static fields of a startup module's PowerShell class are put back", async () => {
  await withClassModule(async (module) => {
    const { before, after } = await restored("Set-SvcCounter", "Get-SvcCounter", [module]);
    assert.deepEqual(before, ["3/1/1/clean"]);
    assert.deepEqual(after, before);
  });
});

Deno.test("reset: static fields of a startup script's PowerShell class are put back", async () => {
  const { before, after } = await restored(
    "[SvcScriptClass]::Count = 99; [SvcScriptClass]::Items.Add('planted')",
    "[SvcScriptClass]::Count; [SvcScriptClass]::Items.Count",
    {
      script:
        "class SvcScriptClass { static [int]$Count = 3; static [System.Collections.Generic.List[string]]$Items = [System.Collections.Generic.List[string]]::new() }",
    },
  );
  assert.deepEqual(before, [3, 0]);
  assert.deepEqual(after, before);
});

// A startup module's class is one type for the whole process: its sibling runspace's next call must
// not see the change either, and that sibling's own startup must not wait on the class's initializer.
Deno.test("process-wide: class statics and $PSStyle a call changes are back before its response", async () => {
  await withClassModule(async (module) => {
    await using first = await startWorker({ runspacesPerProcess: 2 }, [module]);
    await using sibling = await first.openSibling();
    await sibling.startup({ modules: [module], scriptPath: null, script: null }, 60_000);
    const read = "Get-SvcCounter; $PSStyle.Formatting.Error";
    const before = await run(sibling, read);
    await run(first, "Set-SvcCounter; $PSStyle.Formatting.Error = $PSStyle.Foreground.Magenta");
    assert.deepEqual(await run(sibling, read), before);
    assert.equal(before[0], "3/1/1/clean");
    assert.ok(!("retired" in await reset(first)));
  });
});

// A slot that starts while a sibling's call has changed the environment or the default culture must
// not take that for its clean state: it would put the change back after each of its calls, for every
// later caller of the process (18 of 30 later calls saw such a variable over HTTP before).
Deno.test("process-wide: a slot started during a sibling's call does not keep that call's changes", async () => {
  await using first = await startWorker({ runspacesPerProcess: 2 });
  const read = "[string]$env:SVC_SLOT_PROBE; [cultureinfo]::CurrentCulture.Name; " +
    "[string][cultureinfo]::DefaultThreadCurrentCulture";
  const clean = await run(first, read);
  // The call makes its changes, says so, and holds them until the sibling has started.
  const scratch = await Deno.makeTempDir({ prefix: "svc-slot-" });
  const [planted, started] = [`${scratch}/planted`, `${scratch}/started`];
  const call = run(
    first,
    "$env:SVC_SLOT_PROBE = 'planted'; [cultureinfo]::DefaultThreadCurrentCulture = 'de-DE'; " +
      `[IO.File]::WriteAllText('${planted}', ''); ` +
      `while (-not [IO.File]::Exists('${started}')) { Start-Sleep -Milliseconds 20 }`,
  );
  const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
  assert.ok(await eventually(() => exists(planted), 30_000), "the call never made its changes");
  await using sibling = await first.openSibling();
  await sibling.startup({ modules: [], scriptPath: null, script: null }, 60_000);
  await Deno.writeTextFile(started, "");
  await call;
  await Deno.remove(scratch, { recursive: true });
  assert.ok(!("retired" in await reset(first)));
  // Each call of the sibling puts the process-wide state back as it ends, and resets it after.
  await run(sibling, "1");
  assert.ok(!("retired" in await reset(sibling)));
  assert.deepEqual(await run(first, read), clean);
  assert.deepEqual(await run(sibling, read), clean);
});

// Each runspace compiles a startup script's classes into an assembly of its own: a sibling's startup
// is not a call's doing (it retired the process on main), while a class a call defines still is.
Deno.test("reset: a sibling's startup-script classes keep the process; a class a call defines retires it", async () => {
  const script = "class SvcSibling { static [int]$Count = 3 }";
  await using first = await startWorker({ runspacesPerProcess: 2 }, { script });
  await using sibling = await first.openSibling();
  await sibling.startup({ modules: [], scriptPath: null, script }, 60_000);
  await run(first, "[SvcSibling]::Count = 99");
  const outcome = await reset(first);
  assert.ok(!("retired" in outcome), JSON.stringify(outcome));
  assert.deepEqual(await run(first, "[SvcSibling]::Count"), [3]);
  await run(sibling, "class SvcPlanted { static [int]$Count = 1 }");
  const planted = await reset(sibling);
  assert.ok("retired" in planted, JSON.stringify(planted));
  assert.match(planted.retired, /PowerShell Class Assembly/);
});

// $PSStyle is one object for the whole process: a change would reach every later call in it.
Deno.test("reset: $PSStyle and its sub-properties go back", async () => {
  const read =
    "$PSStyle.OutputRendering.ToString(); $PSStyle.Formatting.Error; $PSStyle.FileInfo.Directory; " +
    "$PSStyle.Progress.View.ToString(); $PSStyle.Progress.MaxWidth; $PSStyle.FileInfo.Extension.ContainsKey('.svc'); " +
    "$PSStyle.FileInfo.Extension['.zip']; $PSStyle.AutoSizeDefaultFormatting";
  const plant =
    "$PSStyle.OutputRendering = 'Host'; $m = $PSStyle.Foreground.Magenta; $PSStyle.Formatting.Error = $m; $PSStyle.FileInfo.Directory = $m; " +
    "$PSStyle.Progress.View = 'Classic'; $PSStyle.Progress.MaxWidth = 77; $PSStyle.FileInfo.Extension.Add('.svc', $m); " +
    "$PSStyle.FileInfo.Extension['.zip'] = $m; $PSStyle.AutoSizeDefaultFormatting = -not $PSStyle.AutoSizeDefaultFormatting";
  const { before, after } = await restored(plant, read);
  assert.equal(before[5], false);
  assert.deepEqual(after, before);
});

Deno.test("reset: process-wide .NET settings a call changes go back (web proxy, TLS, handlers, encodings, GC, threads)", async () => {
  const read = "[System.Net.Http.HttpClient]::DefaultProxy.GetType().Name; " +
    "[System.Net.ServicePointManager]::SecurityProtocol.ToString(); " +
    "$null -eq [System.Net.ServicePointManager]::ServerCertificateValidationCallback; " +
    "$null -eq [AppContext].GetField('FirstChanceException', [Reflection.BindingFlags]'NonPublic, Static').GetValue($null); " +
    "[Console]::OutputEncoding.WebName; [System.Runtime.GCSettings]::LatencyMode.ToString(); [regex]::CacheSize; " +
    "[System.Diagnostics.Trace]::Listeners.Count; [Environment]::ExitCode; " +
    "$w = 0; $p = 0; [Threading.ThreadPool]::GetMinThreads([ref]$w, [ref]$p); $w";
  const plant =
    "[System.Net.Http.HttpClient]::DefaultProxy = [System.Net.WebProxy]::new('http://127.0.0.1:9'); " +
    "[System.Net.ServicePointManager]::SecurityProtocol = 'Tls'; " +
    "[System.Net.ServicePointManager]::ServerCertificateValidationCallback = { $true }; " +
    "[AppDomain]::CurrentDomain.add_FirstChanceException({ param($s, $e) }); " +
    "[Console]::OutputEncoding = [Text.Encoding]::Unicode; [System.Runtime.GCSettings]::LatencyMode = 'Batch'; " +
    "[regex]::CacheSize = 1; $null = [System.Diagnostics.Trace]::Listeners.Add([System.Diagnostics.ConsoleTraceListener]::new()); " +
    "[Environment]::ExitCode = 42; $null = [Threading.ThreadPool]::SetMinThreads(57, 57)";
  const { before, after } = await restored(plant, read);
  assert.equal(before[0], "HttpNoProxy");
  assert.equal(before[3], true);
  assert.deepEqual(after, before);
});

Deno.test("reset: a thread job a call started retires the process", async () => {
  await retires("$null = Start-ThreadJob { Start-Sleep 60 }", /runspace|assembly/);
});

Deno.test("a call's native processes end when the call ends, unless kept", async () => {
  const start = "(Start-Process -FilePath sleep -ArgumentList 120 -PassThru).Id; " +
    "[Diagnostics.Process]::Start('sleep', '121').Id";
  {
    await using worker = await startWorker();
    const pids = await run(worker, start) as number[];
    assert.equal(pids.length, 2);
    // Ended before the response was sent: no waiting here.
    assert.deepEqual(pids.filter(isAlive), []);
  }
  await using keeper = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000 });
  await keeper.startup(
    { modules: [], scriptPath: null, script: null, keepNativeProcesses: true },
    60_000,
  );
  const kept = await run(keeper, start) as number[];
  try {
    assert.deepEqual(kept.filter(isAlive), kept);
  } finally {
    for (const pid of kept) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
  }
});

Deno.test("a call's native processes end with the call even when they left their parent (double fork, setsid)", async () => {
  await using worker = await startWorker();
  // Each shell forks a sleep and exits at once, so the sleep is no child of the worker any more.
  // A fraction of a second no other process here will have on its command line.
  const marker = `${Math.floor(Math.random() * 1e8)}`.padStart(8, "1");
  await run(
    worker,
    `sh -c 'setsid sleep 301.${marker} >/dev/null 2>&1 &'; sh -c '(sleep 302.${marker} >/dev/null 2>&1 &)'; Start-Sleep -Milliseconds 300`,
  );
  const left = processesMatching(`.${marker}`);
  try {
    assert.deepEqual(left, [], "a native process the call left behind is still running");
  } finally {
    for (const pid of left) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
  }
});

Deno.test("reset: a 20 MB array global costs what a small value does (no boxing of elements)", async () => {
  await using worker = await startWorker();
  const small = await worker.reset();
  await run(worker, "$global:planted = [byte[]]::new(20MB)");
  const started = performance.now();
  const big = await worker.reset();
  const took = performance.now() - started;
  assert.equal(big.path, "full");
  // It took 2.7-4 s and ~900 MB before; 1 s leaves room for two busy cores.
  assert.ok(took < 1_000, `the reset took ${took.toFixed(0)} ms`);
  const growth = (big.workingSetBytes! - small.workingSetBytes!) / 1024 / 1024;
  assert.ok(growth < 150, `the worker grew ${growth.toFixed(0)} MB`);
  assert.deepEqual(await run(worker, "$null -eq $global:planted"), [true]);
});

Deno.test("a worker over MaxWorkerMemoryMB after a call is retired, saying why", async () => {
  const probe = await startWorker();
  const baseline = (await probe.reset()).workingSetBytes!;
  await probe.close();
  const ceiling = Math.round(baseline / 1024 / 1024) + 150;
  await using worker = await startWorker({ maxWorkerMemoryMB: ceiling });
  assert.ok(!("retired" in await reset(worker)));
  // Kept in a startup-style place the reset does not clear: a module-scoped buffer of 300 MB.
  await run(
    worker,
    "$null = New-Module -Name SvcBig { $script:big = [byte[]]::new(300MB); [Array]::Fill($script:big, [byte]1) } | Import-Module -Global",
  );
  const outcome = await reset(worker);
  assert.ok("retired" in outcome, JSON.stringify(outcome));
  assert.match(outcome.retired, new RegExp(`over MaxWorkerMemoryMB ${ceiling}`));
});

Deno.test("http: 100 sequential set-then-read rounds see no earlier call's environment", async () => {
  const config = fixtureConfig({
    Commands: ["Set-SvcLeak", "Get-SvcLeak"],
    Environment: {
      StartupScript:
        "function global:Set-SvcLeak { param([string]$Value) $env:SVC_LEAK_PROBE = $Value }\n" +
        "function global:Get-SvcLeak { [string]$env:SVC_LEAK_PROBE }",
    },
  });
  await using svc = await startHttpSvc({ config });
  let leaks = 0;
  for (let round = 0; round < 100; round++) {
    const set = await post(`${svc.url}/call`, {
      tool: "set_svc_leak",
      arguments: { Value: `r${round}` },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const read = await post(`${svc.url}/call`, { tool: "get_svc_leak", arguments: {} });
    assert.equal(read.status, 200, JSON.stringify(read.body));
    if (JSON.stringify(read.body).includes(`r${round}`)) leaks++;
  }
  assert.equal(leaks, 0, `${leaks} of 100 reads saw the value set by the call before`);
});
