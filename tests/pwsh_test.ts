/**
 * The PowerShell suite: tests whose meaning is PowerShell behaviour (binding, serialization, error
 * records, Stop, prompts, startup scripts, reset), run through lib/worker.ts against real pwsh.
 * `tests/pwsh_tools_test.ts` asks the same of real commands through an MCP client.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { RemoteError } from "../lib/errors.ts";
import { RunspaceWorker } from "../lib/worker.ts";
import type {
  CommandMeta,
  PromptAnswer,
  WorkerLog,
  WorkerLogLevel,
  WorkerPrompt,
} from "../lib/worker_protocol.ts";
import { FIXTURE_MODULE, isAlive, TEST_PWSH as pwsh, withEnv } from "./support/harness.ts";
import { cmdletMeta, DESCRIBE_FIXTURE, RECORDED_CMDLETS } from "./support/cmdlet_data.ts";

function pwshTest(name: string, fn: (worker: RunspaceWorker) => Promise<void> | void): void {
  Deno.test({
    name,
    async fn() {
      await using worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000 });
      await worker.startup({ modules: [FIXTURE_MODULE], scriptPath: null, script: null }, 60_000);
      await fn(worker);
    },
  });
}

function invoke(
  worker: RunspaceWorker,
  command: string,
  parameters: Record<string, unknown> = {},
  credentials: string[] = [],
) {
  return worker.invoke({ command, parameters, credentials, depth: 4 }, { timeoutMs: 30_000 });
}

pwshTest("hello reports PowerShell 7.4 or later", (worker) => {
  assert.match(worker.info.psVersion, /^7\.([4-9]|\d\d)|^([89]|\d\d)\./);
});

pwshTest(
  "the recorded cmdlet metadata the catalog tests use is what describe reports",
  async (worker) => {
    const { commands, missing } = await worker.describe([...RECORDED_CMDLETS], false);
    assert.deepEqual(missing, []);
    if (Deno.env.get("SVC_RECORD_DESCRIBE") === "1") {
      await Deno.writeTextFile(DESCRIBE_FIXTURE, JSON.stringify(commands, null, 2) + "\n");
    }
    // Parameter sets and their parameters, which the catalog tests are about; other versions of
    // PowerShell differ in details such as enum values.
    const shape = (meta: CommandMeta) =>
      meta.parameterSets.map((
        set,
      ) => [set.name, set.parameters.map((p) => [p.name, p.isMandatory])]);
    for (const live of commands) {
      assert.deepEqual(
        shape(live),
        shape(cmdletMeta(live.name as (typeof RECORDED_CMDLETS)[number])),
        `${live.name} changed: record it again with SVC_RECORD_DESCRIBE=1`,
      );
    }
  },
);

/**
 * Entries .NET and PowerShell made in the temp directory for the diagnostics of process `pid` since
 * `since` (ms since the epoch): older ones are of an earlier process with the same pid.
 */
function diagnosticEndpoints(pid: number, since: number): string[] {
  const dir = Deno.env.get("TMPDIR") || "/tmp";
  return [...Deno.readDirSync(dir)].map((entry) => entry.name).filter((name) =>
    (name.startsWith(`dotnet-diagnostic-${pid}-`) || name.startsWith(`clr-debug-pipe-${pid}-`) ||
      (name.startsWith("CoreFxPipe_PSHost.") && name.includes(`.${pid}.`))) &&
    (Deno.lstatSync(`${dir}/${name}`).mtime?.getTime() ?? 0) >= since - 1_000
  );
}

const ENDPOINTS_TEST =
  "a worker opens no diagnostic endpoints, and its commands see svc's environment";
Deno.test({
  ...(Deno.build.os === "windows"
    ? {
      name: `pwsh: ${ENDPOINTS_TEST} [skipped: the endpoints are files only on Unix]`,
      ignore: true,
    }
    : { name: ENDPOINTS_TEST }),
  async fn() {
    const visible = async (worker: RunspaceWorker, name: string) =>
      (await invoke(worker, "Test-Path", { Path: `env:${name}` })).result.output;
    const unset = {
      "DOTNET_EnableDiagnostics": undefined,
      "POWERSHELL_DIAGNOSTICS_OPTOUT": undefined,
    };
    await withEnv(unset, async () => {
      const started = Date.now();
      await using worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000 });
      // Killed workers left these behind in the temp directory, four per process.
      const open = diagnosticEndpoints(worker.pid, started);
      // PowerShell 7.6 added the opt-out of its Enter-PSHostProcess listener; 7.4 and 7.5 keep it.
      const [major, minor] = worker.info.psVersion.split(".").map(Number) as [number, number];
      const listenerOptOut = major > 7 || minor >= 6;
      assert.deepEqual(
        listenerOptOut ? open : open.filter((name) => !name.startsWith("CoreFxPipe_PSHost.")),
        [],
      );
      for (const name of ["DOTNET_EnableDiagnostics", "POWERSHELL_DIAGNOSTICS_OPTOUT"]) {
        assert.deepEqual(await visible(worker, name), [false], name);
      }
      assert.deepEqual(await visible(worker, "SVC_WORKER_STARTUP_ENV"), [false]);
    });
    // Where svc's own environment decides, also through a finer setting of the runtime's, the
    // worker keeps that choice, svc adds nothing over it, and the runtime's endpoint is open.
    for (const own of ["DOTNET_EnableDiagnostics", "DOTNET_EnableDiagnostics_Debugger"]) {
      await withEnv({ ...unset, [own]: "1" }, async () => {
        const started = Date.now();
        await using worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000 });
        assert.deepEqual(await visible(worker, own), [true], own);
        assert.deepEqual(
          await visible(worker, "DOTNET_EnableDiagnostics"),
          [own === "DOTNET_EnableDiagnostics"],
          `svc adds DOTNET_EnableDiagnostics over ${own}`,
        );
        const open = diagnosticEndpoints(worker.pid, started);
        assert.ok(open.some((name) => name.startsWith("dotnet-diagnostic-")), own);
      });
    }
  },
});

pwshTest(
  "describe reports parameter sets, validation attributes and help of the fixture module",
  async (worker) => {
    const { commands } = await worker.describe([
      "Get-FixtureItem",
      "Test-FixtureBinding",
      "Get-FixtureGreeting",
    ]);
    const item = commands.find((c) => c.name === "Get-FixtureItem")!;
    assert.deepEqual(item.parameterSets.map((s) => s.name).sort(), ["ById", "ByName"]);
    assert.equal(item.defaultParameterSet, "ByName");
    const byName = item.parameterSets.find((s) => s.name === "ByName")!;
    const name = byName.parameters.find((p) => p.name === "Name")!;
    assert.equal(name.type, "System.String[]");
    assert.equal(name.isMandatory, true);
    assert.equal(name.position, 0);
    assert.deepEqual(byName.parameters.find((p) => p.name === "Kind")!.validateSet, [
      "File",
      "Folder",
      "Link",
    ]);
    const binding = commands.find((c) => c.name === "Test-FixtureBinding")!;
    assert.equal(binding.supportsShouldProcess, true);
    const params = binding.parameterSets[0]!.parameters;
    assert.deepEqual(params.find((p) => p.name === "Count")!.validateRange, { min: 1, max: 10 });
    assert.deepEqual(params.find((p) => p.name === "Code")!.validateLength, { min: 2, max: 5 });
    assert.equal(params.find((p) => p.name === "Code")!.validatePattern, "^[A-Z]+$");
    assert.deepEqual(params.find((p) => p.name === "Names")!.validateCount, { min: 1, max: 3 });
    assert.ok(params.find((p) => p.name === "Color")!.enumValues!.includes("Red"));
    assert.equal(params.find((p) => p.name === "Force")!.isSwitch, true);
    const greeting = commands.find((c) => c.name === "Get-FixtureGreeting")!;
    assert.equal(greeting.help?.synopsis, "Returns a greeting for a name.");
    assert.equal(greeting.help?.parameters.Name, "The name to greet.");
  },
);

Deno.test("describe asks Get-Help about a cmdlet only when it has a help file, such as one in the user's help folder", async () => {
  const home = await Deno.makeTempDir({ prefix: "svc-help-home-" });
  try {
    // Get-Date's help file where Update-Help -Scope CurrentUser puts it; Get-Uptime's is nowhere.
    const folder = `${home}/.local/share/powershell/Help/en-US`;
    await Deno.mkdir(folder, { recursive: true });
    await Deno.writeTextFile(
      `${folder}/Microsoft.PowerShell.Commands.Utility.dll-Help.xml`,
      `<?xml version="1.0" encoding="utf-8"?>
<helpItems schema="maml" xmlns="http://msh">
<command:command xmlns:maml="http://schemas.microsoft.com/maml/2004/10" xmlns:command="http://schemas.microsoft.com/maml/dev/command/2004/10">
<command:details><command:name>Get-Date</command:name><maml:description><maml:para>Gets the date, from a help file.</maml:para></maml:description><command:verb>Get</command:verb><command:noun>Date</command:noun></command:details>
</command:command>
</helpItems>
`,
    );
    await withEnv({ HOME: home }, async () => {
      await using worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000 });
      const { commands } = await worker.describe(["Get-Date", "Get-Uptime"], true);
      const help = (name: string) => commands.find((c) => c.name === name)?.help;
      assert.equal(help("Get-Date")?.synopsis, "Gets the date, from a help file.");
      assert.deepEqual(help("Get-Uptime"), {
        synopsis: null,
        description: null,
        parameters: {},
        defaults: {},
        examples: [],
      });
    });
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

pwshTest("invoke binds every JSON kind to the declared .NET type", async (worker) => {
  const { result } = await invoke(worker, "Test-FixtureBinding", {
    Text: "t",
    Count: 2,
    Big: 5000000000,
    Ratio: 1.5,
    Flag: false,
    Force: true,
    Color: "Red",
    Names: ["a"],
    Numbers: [1, 2],
    Options: { k: "v" },
    Code: "AB",
    Mode: "Fast",
  });
  assert.deepEqual(result.errors, []);
  const types = Object.fromEntries(
    (result.output as { Parameter: string; Type: string }[]).map((r) => [r.Parameter, r.Type]),
  );
  assert.equal(types.Big, "System.Int64");
  assert.equal(types.Options, "System.Collections.Hashtable");
  assert.equal(types.Numbers, "System.Int32[]");
  assert.equal(types.Color, "System.ConsoleColor");
});

pwshTest("invoke turns {UserName, Password} into a PSCredential", async (worker) => {
  const { result } = await invoke(worker, "Test-FixtureCredential", {
    Credential: { UserName: "bob", Password: "abc" },
  }, ["Credential"]);
  assert.deepEqual(result.output, [{ UserName: "bob", PasswordLength: 3 }]);
});

pwshTest("output is serialized per object and UTF-8 round-trips", async (worker) => {
  const text = "Grüße 日本語 🚀";
  const { result } = await invoke(worker, "Write-Output", { InputObject: [text, 1, true, null] });
  assert.deepEqual(result.output, [text, 1, true, null]);
  const items = await invoke(worker, "Get-FixtureItem", { Id: [7] });
  assert.deepEqual(items.result.output, [{ Name: "item7", Id: 7, Kind: "File" }]);
});

pwshTest(
  "error records carry message, category, target and position; throw is terminating",
  async (worker) => {
    const soft = await invoke(worker, "Invoke-FixtureError", { Message: "boom" });
    assert.deepEqual(soft.result.output, ["after-error"]);
    assert.equal(soft.result.errors[0]?.message, "boom");
    assert.equal(soft.result.errors[0]?.category, "InvalidArgument");
    assert.equal(soft.result.errors[0]?.targetName, "fixture-target");
    assert.equal(soft.result.errors[0]?.terminating, false);
    const hard = await invoke(worker, "Invoke-FixtureError", {
      Message: "bang",
      Terminating: true,
    });
    assert.equal(hard.result.errors.at(-1)?.terminating, true);
    assert.equal(hard.result.errors.at(-1)?.message, "bang");
    assert.ok((hard.result.errors.at(-1)?.position?.line ?? 0) > 0);
    const missing = await invoke(worker, "Get-NoSuchCommand");
    assert.match(missing.result.errors.at(-1)?.message ?? "", /not recognized/);
  },
);

pwshTest(
  "binding and validation failures are terminating errors naming the parameter",
  async (worker) => {
    const { result } = await invoke(worker, "Test-FixtureBinding", { Count: 11 });
    assert.match(result.errors.at(-1)?.message ?? "", /Count/);
    assert.equal(result.errors.at(-1)?.terminating, true);
  },
);

pwshTest(
  "prompts fail at once outside an interactive call; in one svc is asked, and any answer but an accepted one stops the command",
  async (worker) => {
    const started = Date.now();
    const prompt = await invoke(worker, "Read-FixturePrompt");
    assert.match(prompt.result.errors.at(-1)?.message ?? "", /Favourite colour|user interaction/);
    const credential = await invoke(worker, "Get-Credential");
    assert.ok(credential.result.errors.length > 0);
    const confirm = await invoke(worker, "Test-FixtureBinding", { Text: "x", Confirm: true });
    assert.ok(confirm.result.errors.length > 0);
    assert.ok(Date.now() - started < 10_000);
    await interactiveConfirmations(worker);
    await interactivePrompts(worker);
    await plantedPrompter(worker);
  },
);

pwshTest(
  "a prompt in a runspace of the command's own fails as an error quoting its statement, not claiming no prompt was given",
  async (worker) => {
    // ForEach-Object -Parallel's runspaces have no host to ask through, and the error record they
    // hand back has lost Read-Host's bound -Prompt.
    const { result } = await invoke(worker, "Invoke-Expression", {
      Command: "1 | ForEach-Object -Parallel { Read-Host -Prompt 'Colour' }",
    });
    const message = result.errors.at(-1)?.message ?? "";
    assert.match(message, /^Read-Host asked for user input at: Read-Host -Prompt 'Colour', /);
    assert.doesNotMatch(message, /no prompt given/);
  },
);

/**
 * A call cannot leave its own prompter in the worker's host for the next caller's prompts: the
 * prompter and the host's slot for it are not public, and a call that plants one by reflection
 * anyway is ignored by the next call, whose prompt fails at once as a non-interactive one does
 * (before, the next caller's question reached the planted code and the call hung until its time
 * limit).
 */
async function plantedPrompter(worker: RunspaceWorker) {
  const dir = await Deno.makeTempDir({ prefix: "svc-plant-" });
  const leak = `${dir}/asked.json`;
  try {
    const publicApi = await invoke(worker, "Invoke-Expression", {
      Command:
        "[Svc.Host.Prompter].GetConstructors().Count; [bool][Svc.Host.WorkerHost].GetProperty('Prompter')",
    });
    assert.deepEqual(publicApi.result.output, [0, false], JSON.stringify(publicApi.result));
    const plant = await invoke(worker, "Invoke-Expression", {
      Command: [
        `$send = [Action[string]]{ param($frame) [IO.File]::WriteAllText('${leak}', $frame) }`,
        "$new = [Svc.Host.Prompter].GetConstructors('NonPublic, Instance')[0]",
        "$planted = $new.Invoke(@([long]1, 'planted', $send, [long]0, [long]0, [Action]{}, [Func[bool]]{ $true }))",
        "$slot = [Svc.Host.WorkerHost].GetProperty('Prompter', [Reflection.BindingFlags]'NonPublic, Instance')",
        "$host_ = [Svc.Host.WorkerHost]::Of([runspace]::DefaultRunspace)",
        "$slot.SetValue($host_, $planted)",
        "[bool]$slot.GetValue($host_)",
      ].join("\n"),
    });
    assert.deepEqual(plant.result.output, [true], JSON.stringify(plant.result));
    await worker.reset();
    const started = Date.now();
    const victim = await invoke(worker, "Read-FixturePrompt");
    assert.match(victim.result.errors.at(-1)?.message ?? "", /nobody can answer a prompt there/);
    assert.ok(Date.now() - started < 10_000, `${Date.now() - started} ms`);
    assert.ok(!existsSync(leak), "the next call's prompt reached the planted prompter");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Each prompt an interactive call made, and the answers given in turn (then `decline`). */
function answering(...answers: PromptAnswer[]) {
  const asked: WorkerPrompt[] = [];
  const onPrompt = (prompt: WorkerPrompt) => {
    asked.push(prompt);
    return Promise.resolve(answers.shift() ?? { action: "decline" as const });
  };
  return { asked, onPrompt };
}

const pick = (choice: number): PromptAnswer => ({ action: "accept", choices: [choice] });

/** Runs a script interactively (Invoke-Expression), its prompts answered by `onPrompt`. */
function interactively(
  worker: RunspaceWorker,
  script: string,
  onPrompt: (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>,
  options: { timeoutMs?: number; userInputTimeoutMs?: number; signal?: AbortSignal } = {},
) {
  return worker.invoke(
    { command: "Invoke-Expression", parameters: { Command: script }, credentials: [], depth: 4 },
    { timeoutMs: 30_000, ...options, onPrompt },
  );
}

/** An answer that comes only once the prompt's signal aborts (the time ran out, or the call ended). */
const never = (_prompt: WorkerPrompt, signal: AbortSignal) =>
  new Promise<PromptAnswer>((resolve) =>
    signal.addEventListener("abort", () => resolve({ action: "accept", values: { late: "late" } }))
  );

// Read-Host, PromptForChoice and $Host.UI.Prompt asked and answered; secrets refused at once even
// when interactive; decline, cancel, the time limit and a stop while a prompt waits; after each the
// worker resets clean and serves the next call.
async function interactivePrompts(worker: RunspaceWorker): Promise<void> {
  const text = answering({ action: "accept", values: { answer: "plain" } }, {
    action: "accept",
    values: { "What is your name?": "Ada" },
  });
  const read = await interactively(
    worker,
    "Read-Host; Read-Host -Prompt 'What is your name?'",
    text.onPrompt,
  );
  assert.deepEqual(read.result.output, ["plain", "Ada"]);
  assert.deepEqual(text.asked.map((p) => [p.kind, p.fields?.map((f) => [f.name, f.type])]), [
    ["text", [["answer", "string"]]],
    ["text", [["What is your name?", "string"]]],
  ]);

  const choices = answering(pick(1), { action: "accept", choices: [0, 2] });
  const chosen = await interactively(
    worker,
    "$c = [System.Management.Automation.Host.ChoiceDescription[]]@('&Red', '&Green', '&Blue'); " +
      "$Host.UI.PromptForChoice('Colour', 'Which colour?', $c, 0); " +
      "$Host.UI.PromptForChoice('Colours', 'Which colours?', $c, [int[]]@(0, 2))",
    choices.onPrompt,
  );
  assert.deepEqual(chosen.result.output, [1, 0, 2]);
  const [single, multiple] = choices.asked;
  assert.equal(single?.kind, "choice");
  assert.equal(single?.caption, "Colour");
  assert.equal(single?.message, "Which colour?");
  assert.deepEqual(single?.choices?.map((c) => c.label), ["Red", "Green", "Blue"]);
  assert.deepEqual([single?.defaults, single?.multiple], [[0], false]);
  assert.deepEqual([multiple?.defaults, multiple?.multiple], [[0, 2], true]);

  const typed = answering({ action: "accept", values: { Age: 42, Ok: true } });
  const fields = await interactively(
    worker,
    "$f = [System.Collections.ObjectModel.Collection[System.Management.Automation.Host.FieldDescription]]::new(); " +
      "$a = [System.Management.Automation.Host.FieldDescription]::new('Age'); $a.SetParameterType([int]); $a.HelpMessage = 'In years'; $f.Add($a); " +
      "$b = [System.Management.Automation.Host.FieldDescription]::new('Ok'); $b.SetParameterType([bool]); $f.Add($b); " +
      "$n = [System.Management.Automation.Host.FieldDescription]::new('Name'); $n.DefaultValue = 'Bob'; $f.Add($n); " +
      "$r = $Host.UI.Prompt('Person', 'Tell me', $f); $r.Age.GetType().Name; $r.Age; $r.Ok; $r.Name",
    typed.onPrompt,
  );
  assert.deepEqual(fields.result.output, ["Int32", 42, true, "Bob"]);
  assert.equal(typed.asked[0]?.kind, "fields");
  assert.deepEqual(typed.asked[0]?.fields, [
    { name: "Age", label: "Age", help: "In years", type: "integer" },
    { name: "Ok", label: "Ok", help: "", type: "boolean" },
    { name: "Name", label: "Name", help: "", type: "string", default: "Bob" },
  ]);

  // A ConfirmImpact High command reaches $ConfirmPreference (High) without -Confirm: asked; the
  // second call's confirmation answered No is skipped.
  const high = answering(pick(0), pick(2));
  const impact = await interactively(
    worker,
    "function Remove-Thing { [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'High')] param() " +
      "if ($PSCmdlet.ShouldProcess('thing', 'Destroy')) { 'destroyed' } else { 'kept' } }; Remove-Thing; Remove-Thing",
    high.onPrompt,
  );
  assert.deepEqual(impact.result.output, ["destroyed", "kept"]);
  assert.deepEqual(high.asked.map((p) => p.kind), ["confirm", "confirm"]);
  assert.match(
    high.asked[0]?.message ?? "",
    /Performing the operation "Destroy" on target "thing"/,
  );

  // Secrets are never asked for: the command stops there, and svc hears what was asked for.
  const secrets = answering();
  const unasked =
    ", which svc never asks a user for (MCP forbids asking for a secret through a form)";
  for (
    const [script, what] of [
      ["Read-Host -AsSecureString", "a secure string"],
      ["Read-Host -Prompt Pin -MaskInput", "a secret ('Pin')"],
      ["Get-Credential", "a credential"],
      // A field whose type only holds a secret was asked as a plain string field before.
      [
        "$f = [System.Management.Automation.Host.FieldDescription]::new('Keys'); " +
        "$f.SetParameterType([System.Collections.Generic.List[securestring]]); " +
        "$Host.UI.Prompt('Keys', 'Your keys', [System.Management.Automation.Host.FieldDescription[]]@($f))",
        "a secret ('Keys')",
      ],
    ]
  ) {
    const secret = await interactively(worker, `${script}; 'after'`, secrets.onPrompt);
    assert.deepEqual([secret.interrupted, secret.result.output], ["prompt", []], script);
    assert.deepEqual(secret.prompts?.map((r) => [r.action, r.prompt.kind, r.prompt.message]), [
      ["refused", "refused", `asked for ${what}${unasked}`],
    ]);
  }
  assert.equal(secrets.asked.length, 0);

  // An answer the command cannot use stops it too, without echoing what the user typed: a field
  // typed DateTime, and a choice that is none of the prompt's.
  for (
    const [script, answer, why] of [
      [
        "$f = [System.Management.Automation.Host.FieldDescription]::new('When'); $f.SetParameterType([datetime]); " +
        "$Host.UI.Prompt('Plan', 'When?', [System.Management.Automation.Host.FieldDescription[]]@($f))",
        { action: "accept", values: { When: "TYPED-SECRET-123" } },
        "could not use its user's answer for 'When', which is not a DateTime",
      ],
      [
        "$Host.UI.PromptForChoice('Colour', 'Which?', [System.Management.Automation.Host.ChoiceDescription[]]@('&Red', '&Blue'), 0)",
        { action: "accept", choices: [7] },
        "got an answer that picks no single one of its choices",
      ],
    ] as const
  ) {
    const unusable = await interactively(
      worker,
      `${script}; 'after'`,
      answering(answer as PromptAnswer).onPrompt,
    );
    assert.deepEqual([unusable.interrupted, unusable.result.output], ["prompt", []]);
    assert.equal(unusable.prompts?.at(-1)?.prompt.message, why);
    assert.doesNotMatch(JSON.stringify(unusable), /TYPED-SECRET/);
  }

  // Any answer but an accepted one stops the call, as Ctrl+C at a console prompt: nothing after
  // the prompt runs. A decline, a cancel, and an onPrompt that says nobody can be asked.
  for (const action of ["decline", "cancel", "unavailable"] as const) {
    const stopped = await interactively(
      worker,
      "Read-Host -Prompt Name; 'after'",
      answering({ action }).onPrompt,
    );
    assert.deepEqual(
      [stopped.result.output, stopped.result.stopped, stopped.interrupted],
      [[], true, "prompt"],
      action,
    );
    assert.deepEqual(stopped.prompts?.map((r) => r.action), [action]);
    assert.deepEqual(stopped.result.errors, [], "a stop by the user is no error of the command");
  }

  // No answer within UserInputTimeout: the call stops too; an answer coming later is not sent. The
  // wait does not count against the call's own time limit.
  const late = await interactively(worker, "Read-Host -Prompt Name; 'after'", never, {
    userInputTimeoutMs: 800,
    timeoutMs: 500,
  });
  assert.equal(late.interrupted, "prompt");
  assert.deepEqual(late.result.output, []);
  assert.deepEqual(late.prompts?.map((r) => r.action), ["timeout"]);
  assert.notEqual((await worker.reset()).path, "retire");

  // A stop (the call cancelled) while a prompt waits ends the wait and stops the pipeline.
  const abort = new AbortController();
  const stopping = interactively(worker, "Read-Host -Prompt Name; 'after'", (prompt, signal) => {
    abort.abort();
    return never(prompt, signal);
  }, { signal: abort.signal });
  const stopped = await stopping;
  assert.deepEqual([stopped.interrupted, stopped.result.stopped, stopped.result.output], [
    "cancelled",
    true,
    [],
  ]);
  assert.notEqual((await worker.reset()).path, "retire");
  const after = await worker.invoke(
    {
      command: "Invoke-Expression",
      parameters: { Command: "$Host.Name; Read-Host -Prompt Again" },
      credentials: [],
      depth: 4,
    },
    { timeoutMs: 30_000 },
  );
  assert.deepEqual(after.result.output, ["svc"]);
  assert.match(after.result.errors.at(-1)?.message ?? "", /nobody can answer a prompt there/);
}

// Remove-Item -Confirm over files, answered as a user at a console would: each answer does what
// PowerShell does with it (Yes removes, No skips, Yes to All / No to All decide for the rest).
async function interactiveConfirmations(worker: RunspaceWorker): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    const remove = async (answers: PromptAnswer[]) => {
      for (const name of ["a", "b", "c", "d"]) await Deno.writeTextFile(`${dir}/${name}.txt`, name);
      const { asked, onPrompt } = answering(...answers);
      const { result, interrupted } = await worker.invoke(
        {
          command: "Remove-Item",
          parameters: { Path: `${dir}/*.txt`, Confirm: true },
          credentials: [],
          depth: 4,
        },
        { timeoutMs: 30_000, onPrompt },
      );
      assert.deepEqual(result.errors, []);
      const left: string[] = [];
      for await (const entry of Deno.readDir(dir)) left.push(entry.name);
      return { asked, left: left.sort(), interrupted };
    };
    // Yes, No, Yes to All: a and c... d removed by Yes to All without asking.
    const first = await remove([pick(0), pick(2), pick(1)]);
    assert.deepEqual(first.left, ["b.txt"]);
    assert.equal(first.asked.length, 3);
    const [prompt] = first.asked;
    assert.equal(prompt?.kind, "confirm");
    assert.equal(prompt?.caption, "Confirm");
    assert.match(
      prompt?.message ?? "",
      /Performing the operation "Remove File" on target ".*a\.txt"/,
    );
    assert.deepEqual(prompt?.choices?.map((c) => c.label), [
      "Yes",
      "Yes to All",
      "No",
      "No to All",
    ]);
    assert.deepEqual(prompt?.defaults, [0]);
    assert.deepEqual(first.asked.map((p) => p.seq), [1, 2, 3]);
    // Yes, then No to All: the rest are kept without asking.
    const second = await remove([pick(0), pick(3)]);
    assert.deepEqual(second.left, ["b.txt", "c.txt", "d.txt"]);
    assert.equal(second.asked.length, 2);
    // Declining a confirmation stops the command there: no file is removed, nothing more is asked.
    const third = await remove([]);
    assert.deepEqual(third.left, ["a.txt", "b.txt", "c.txt", "d.txt"]);
    assert.deepEqual([third.asked.length, third.interrupted], [1, "prompt"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

pwshTest(
  "warnings, information and verbose records are returned, and sent as log frames when asked",
  async (worker) => {
    const { result } = await invoke(worker, "Write-FixtureStreams");
    assert.deepEqual(result.output, ["streams-done"]);
    assert.deepEqual(result.warnings, ["fixture warning"]);
    assert.equal(result.information[0]?.message, "fixture info");

    // A startup script may lower the verbose and debug preferences: "debug" raises them for the call.
    for (const name of ["VerbosePreference", "DebugPreference"]) {
      await invoke(worker, "Set-Variable", {
        Name: name,
        Value: "SilentlyContinue",
        Scope: "Global",
      });
    }
    const logged = async (level: WorkerLogLevel) => {
      const logs: WorkerLog[] = [];
      const run = { command: "Test-LoggingTool", parameters: {}, credentials: [], depth: 4 };
      const { result } = await worker.invoke(run, {
        log: { level, onLog: (log) => logs.push(log) },
      });
      assert.deepEqual(result.output, ["logging tool done"]);
      return {
        result,
        records: logs.flatMap((log) => log.records.map((r) => `${r.stream}: ${r.message}`)),
      };
    };
    const debug = await logged("debug");
    assert.deepEqual(debug.records, [
      "warning: logging tool warning",
      "information: logging tool info",
      "verbose: logging tool verbose",
      "debug: logging tool debug",
    ]);
    assert.deepEqual([debug.result.verbose, debug.result.debug], [["logging tool verbose"], [
      "logging tool debug",
    ]]);
    const preferences = await invoke(worker, "Get-Variable", {
      Name: ["VerbosePreference", "DebugPreference"],
      ValueOnly: true,
    });
    assert.deepEqual(
      preferences.result.output,
      ["SilentlyContinue", "SilentlyContinue"],
      "put back",
    );
    assert.deepEqual((await logged("info")).records, [
      "warning: logging tool warning",
      "information: logging tool info",
    ]);
    const warning = await logged("warning");
    assert.deepEqual(warning.records, ["warning: logging tool warning"]);
    assert.deepEqual(warning.result.verbose, [], "the lowered preference holds without debug");
    await assert.rejects(
      worker.invoke({ command: "Test-LoggingTool", parameters: {}, credentials: [], depth: 4 }, {
        log: { level: "loud" as WorkerLogLevel, onLog: () => {} },
      }),
      (error) =>
        error instanceof RemoteError &&
        error.message === "The invoke log level 'loud' is not debug, info or warning.",
    );
  },
);

pwshTest("console writes and stdin reads cannot disturb the control channel", async (worker) => {
  assert.deepEqual((await invoke(worker, "Write-FixtureConsole")).result.output, ["console-done"]);
  assert.deepEqual((await invoke(worker, "Read-FixtureStdin")).result.output, ["stdin-eof"]);
});

pwshTest("a stop request ends Start-Sleep promptly and the worker stays usable", async (worker) => {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 300);
  const started = Date.now();
  const outcome = await worker.invoke(
    { command: "Start-Sleep", parameters: { Seconds: 30 }, credentials: [], depth: 4 },
    { signal: controller.signal },
  );
  assert.equal(outcome.interrupted, "cancelled");
  assert.equal(outcome.result.stopped, true);
  assert.ok(Date.now() - started < 5_000);
  assert.deepEqual((await invoke(worker, "Get-FixtureGreeting", { Name: "x" })).result.output, [
    "Hello, x!",
  ]);
});

pwshTest("a .NET call that ignores Stop gets its process tree killed", async (worker) => {
  const pidFile = await Deno.makeTempFile();
  await assert.rejects(
    () =>
      worker.invoke(
        {
          command: "Invoke-FixtureStuck",
          parameters: { Seconds: 120, PidFile: pidFile },
          credentials: [],
          depth: 4,
        },
        { timeoutMs: 1_000 },
      ),
    { name: "WorkerError", code: "TIMEOUT" },
  );
  assert.equal(worker.alive, false);
  const child = Number((await Deno.readTextFile(pidFile)).trim());
  if (Deno.build.os !== "windows") {
    assert.ok(!isAlive(child), "the child started by the command is gone");
  }
  await Deno.remove(pidFile);
});

pwshTest(
  "reset restores every surface: variable, function, alias, PSDrive, env, preference, location, $Error, module",
  async (worker) => {
    const root = Deno.build.os === "windows" ? "C:\\" : "/";
    const before = await invoke(worker, "Get-Location");
    await invoke(worker, "Set-Variable", { Name: "leak", Value: 1 });
    await invoke(worker, "Set-Item", { Path: "function:Invoke-Leak", Value: "'leak'" });
    await invoke(worker, "Set-Alias", { Name: "leak-alias", Value: "Get-Date" });
    await invoke(worker, "New-PSDrive", {
      Name: "LeakDrive",
      PSProvider: "FileSystem",
      Root: root,
    });
    await invoke(worker, "Set-Item", { Path: "env:SVC_LEAK", Value: "1" });
    await invoke(worker, "Set-Variable", { Name: "ErrorActionPreference", Value: "Stop" });
    await invoke(worker, "Set-Location", { Path: root });
    await invoke(worker, "Get-Variable", { Name: ["no-such-variable"] });
    // Archive ships with PowerShell but not with every build of it; Security is always there.
    const archive = await invoke(worker, "Get-Module", {
      ListAvailable: true,
      Name: ["Microsoft.PowerShell.Archive"],
    });
    const module = archive.result.output.length > 0
      ? "Microsoft.PowerShell.Archive"
      : "Microsoft.PowerShell.Security";
    const imported = await invoke(worker, "Import-Module", { Name: [module], PassThru: true });
    assert.deepEqual(imported.result.errors, [], `Import-Module ${module}`);
    assert.equal(imported.result.output.length, 1, `Import-Module ${module} -PassThru`);
    await worker.reset();
    // First, before any probe below can write to $Error itself (the probes run without resets).
    // -ValueOnly would write the ArrayList as one object; the PSVariable's Value shows its items.
    const errors = await invoke(worker, "Get-Variable", { Name: ["Error"] });
    assert.deepEqual((errors.result.output[0] as { Value: unknown[] }).Value, [], "$Error");
    const test = async (path: string) =>
      (await invoke(worker, "Test-Path", { Path: path })).result.output;
    assert.ok(
      (await invoke(worker, "Get-Variable", { Name: ["leak"] })).result.errors.length > 0,
      "variable",
    );
    assert.deepEqual(await test("function:Invoke-Leak"), [false], "function");
    assert.deepEqual(await test("alias:leak-alias"), [false], "alias");
    assert.deepEqual(
      (await invoke(worker, "Get-PSDrive", { Name: ["LeakDrive"] })).result.output,
      [],
      "PSDrive",
    );
    assert.deepEqual(await test("env:SVC_LEAK"), [false], "environment variable");
    const pref = await invoke(worker, "Get-Variable", {
      Name: ["ErrorActionPreference"],
      ValueOnly: true,
    });
    assert.deepEqual(pref.result.output, ["Continue"], "preference variable");
    assert.deepEqual(
      (await invoke(worker, "Get-Location")).result.output,
      before.result.output,
      "location",
    );
    const modules = await invoke(worker, "Get-Module", { Name: [module] });
    assert.deepEqual(modules.result.output, [], "module imported during the call");
  },
);

pwshTest("a startup script that throws is a startup error carrying its message", async () => {
  await using worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000 });
  await assert.rejects(
    () =>
      worker.startup({ modules: [], scriptPath: null, script: "throw 'sign-in failed'" }, 60_000),
    (error: unknown) =>
      error instanceof RemoteError && error.kind === "startup" &&
      /sign-in failed/.test(error.message),
  );
});

pwshTest("startup imports modules, reports missing ones, and its definitions persist", async () => {
  await using worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000 });
  const startup = await worker.startup({
    modules: [FIXTURE_MODULE, "No.Such.Module"],
    scriptPath: null,
    script: "function Get-FromStartup { 'from startup' }",
  }, 60_000);
  assert.equal(startup.modules.find((m) => m.name === FIXTURE_MODULE)?.found, true);
  assert.equal(startup.modules.find((m) => m.name === "No.Such.Module")?.found, false);
  const { result } = await invoke(worker, "Get-FromStartup");
  assert.deepEqual(result.output, ["from startup"]);
});

pwshTest(
  "reset cannot be misled by a call's look-alike commands, and ends its jobs, events, breakpoints and tracing",
  async (worker) => {
    const jobDir = await Deno.makeTempDir({ prefix: "svc-job-" });
    const jobScript = `${jobDir}/job.ps1`;
    await Deno.writeTextFile(jobScript, "Start-Sleep -Seconds 60");
    // Functions and aliases named like the cmdlets reset itself uses: reset must not call them.
    await invoke(worker, "Set-Item", { Path: "function:Get-ChildItem", Value: "'hijacked'" });
    await invoke(worker, "Set-Item", { Path: "function:Get-Module", Value: "'hijacked'" });
    await invoke(worker, "Set-Alias", { Name: "Remove-Variable", Value: "Write-Output" });
    await invoke(worker, "Set-Variable", { Name: "leak", Value: 1 });
    // A Private alias cannot be seen from a child scope.
    await invoke(worker, "Set-Alias", {
      Name: "private-leak",
      Value: "Get-Date",
      Option: "Private",
    });
    const job = await invoke(worker, "Start-Job", { FilePath: jobScript });
    assert.deepEqual(job.result.errors, [], "Start-Job");
    await invoke(worker, "Register-EngineEvent", { SourceIdentifier: "svc.leak" });
    await invoke(worker, "Set-PSBreakpoint", { Variable: ["leak"], Mode: "Write" });
    await invoke(worker, "Set-PSDebug", { Trace: 1 });
    await worker.reset();

    const test = async (path: string) =>
      (await invoke(worker, "Test-Path", { Path: path })).result.output;
    assert.deepEqual(await test("function:Get-ChildItem"), [false], "look-alike function");
    assert.deepEqual(await test("function:Get-Module"), [false], "look-alike function");
    assert.deepEqual(await test("alias:Remove-Variable"), [false], "look-alike alias");
    assert.ok(
      (await invoke(worker, "Get-Variable", { Name: ["leak"] })).result.errors.length > 0,
      "the variable went despite the Remove-Variable alias",
    );
    assert.deepEqual(await test("alias:private-leak"), [false], "Private alias");
    assert.deepEqual((await invoke(worker, "Get-Job")).result.output, [], "job");
    assert.deepEqual((await invoke(worker, "Get-EventSubscriber")).result.output, [], "event");
    assert.deepEqual((await invoke(worker, "Get-PSBreakpoint")).result.output, [], "breakpoint");
    const traced = await invoke(worker, "Get-FixtureGreeting", { Name: "x" });
    assert.deepEqual(traced.result.debug, [], "Set-PSDebug tracing");
    await Deno.remove(jobDir, { recursive: true });
  },
);

pwshTest("type data a startup script adds in the worker runspace shapes the output", async () => {
  await using worker = await RunspaceWorker.start({ pwsh, stopTimeoutMs: 3_000 });
  await worker.startup({
    modules: [],
    scriptPath: null,
    script: [
      "Update-TypeData -TypeName Svc.Probe -MemberType ScriptProperty -MemberName Doubled -Value { $this.Value * 2 }",
      "function Get-Probe { [pscustomobject]@{ PSTypeName = 'Svc.Probe'; Value = 21 } }",
    ].join("\n"),
  }, 60_000);
  const { result } = await invoke(worker, "Get-Probe");
  assert.deepEqual(result.output, [{ Value: 21, Doubled: 42 }]);
});

pwshTest(
  "reset takes the fast path when a call changed nothing, and the full one when it did",
  async (worker) => {
    await invoke(worker, "Get-Date");
    assert.equal((await worker.reset()).path, "fast", "Get-Date changes nothing");
    const failed = await invoke(worker, "Get-Variable", { Name: ["no-such-variable"] });
    assert.ok(failed.result.errors.length > 0);
    assert.equal((await worker.reset()).path, "fast", "an error only adds to $Error");
    const errors = await invoke(worker, "Get-Variable", { Name: ["Error"] });
    assert.deepEqual((errors.result.output[0] as { Value: unknown[] }).Value, [], "$Error cleared");
    await worker.reset();
    for (
      const [command, parameters] of [
        ["Set-Variable", { Name: "leak", Value: 1 }],
        ["Set-Variable", { Name: "ErrorActionPreference", Value: "Stop" }],
        ["Set-Location", { Path: Deno.build.os === "windows" ? "C:\\" : "/" }],
        ["Set-Alias", { Name: "leak-alias", Value: "Get-Date" }],
        ["Set-StrictMode", { Version: "Latest" }],
      ] as const
    ) {
      await invoke(worker, command, parameters);
      assert.equal((await worker.reset()).path, "full", `${command} changed the state`);
      await invoke(worker, "Get-Date");
      assert.equal((await worker.reset()).path, "fast", `clean again after ${command}`);
    }
  },
);
