/**
 * Output shaped for a model (issue 13): objects reduced to what PowerShell would show, the
 * `_RequestedProperties` / `_AllProperties` / `_MaxResults` arguments, what was left out said in the
 * result, and truncation that keeps whole items or a string's head and tail. End to end through the
 * SDK client on real pwsh, plus the pure parts as units.
 */
import assert from "node:assert/strict";
import type { ShellSettings } from "../lib/config.ts";
import { overrideFor } from "../lib/config_overrides.ts";
import { callLimits } from "../lib/output_limits.ts";
import { outputShaping, refusedProperties } from "../lib/output_shaping.ts";
import { fitOutput, shorten } from "../lib/result_fit.ts";
import { invokeRequest } from "../lib/worker_request.ts";
import { fixtureConfig, outputOf, startSvc } from "./support/harness.ts";

type Structured = {
  output?: unknown[];
  omitted?: {
    properties?: { type: string; shown: string[]; omitted: string[] }[];
    unknownProperties?: string[];
    moreResults?: boolean;
    uncomputed?: number;
  };
};

type Truncated = { limit: number; items: number; keptItems: number; stopped?: true };
type CallResult = Awaited<ReturnType<Awaited<ReturnType<typeof startSvc>>["callTool"]>>;
const textOf = (result: CallResult) => result.content.map((c) => c.text ?? "").join("\n");

const notesOf = (result: { content: { type: string; text?: string }[] }) =>
  result.content.map((c) => c.text ?? "").filter((t) => t.startsWith("SHOWN:")).join("\n");

Deno.test("output is shaped for a model: display sets, requested properties, result limits", async (t) => {
  await using svc = await startSvc({ config: fixtureConfig() });

  await t.step("every tool offers the shaping arguments and declares its output", async () => {
    const { tools } = await svc.listTools();
    const record = tools.find((tool) => tool.name === "get_fixture_record");
    assert.ok(record, "get_fixture_record is listed");
    for (const tool of tools) {
      const properties = tool.inputSchema.properties as Record<string, { type: string }>;
      assert.equal(properties["_RequestedProperties"]?.type, "array", tool.name);
      assert.equal(properties["_AllProperties"]?.type, "boolean", tool.name);
      assert.equal(properties["_MaxResults"]?.type, "integer", tool.name);
      const output = (tool as { outputSchema?: { type: string } }).outputSchema;
      assert.equal(output?.type, "object", tool.name);
    }
  });

  await t.step(
    "objects show their DefaultDisplayPropertySet, and say what was left out",
    async () => {
      const result = await svc.callTool("get_fixture_record", { Count: 2 });
      assert.equal(result.isError, undefined);
      const expected = [
        { Name: "record1", Id: 1, Size: 1024 },
        { Name: "record2", Id: 2, Size: 2048 },
      ];
      assert.deepEqual(outputOf(result), expected);
      const structured = result.structuredContent as Structured;
      assert.deepEqual(structured.output, expected);
      assert.deepEqual(structured.omitted?.properties, [
        {
          type: "SvcFixture.Record",
          shown: ["Name", "Id", "Size"],
          omitted: ["Owner", "Path", "Notes"],
        },
      ]);
      assert.match(
        notesOf(result),
        /SvcFixture\.Record objects show Name, Id, Size; left out: Owner, Path, Notes\. .*_RequestedProperties.*_AllProperties/,
      );
    },
  );

  await t.step("_AllProperties keeps every property", async () => {
    const result = await svc.callTool("get_fixture_record", { Count: 1, _AllProperties: true });
    const [record] = outputOf(result) as Record<string, unknown>[];
    assert.deepEqual(Object.keys(record!), ["Name", "Id", "Size", "Owner", "Path", "Notes"]);
    assert.equal((result.structuredContent as Structured).omitted, undefined);
    assert.equal(notesOf(result), "");
  });

  await t.step("_RequestedProperties takes names and wildcards in any case", async () => {
    const result = await svc.callTool("get_fixture_record", {
      Count: 1,
      _RequestedProperties: ["path", "O*", "NoSuchProperty"],
    });
    assert.deepEqual(outputOf(result), [{ Path: "/records/record1", Owner: "svc" }]);
    const omitted = (result.structuredContent as Structured).omitted;
    assert.deepEqual(omitted?.unknownProperties, ["NoSuchProperty"]);
    assert.match(notesOf(result), /no output object has a property matching 'NoSuchProperty'/);
    // The caller chose the properties: which others were left out goes unsaid, in either half.
    assert.doesNotMatch(notesOf(result), /left out/);
    assert.equal(omitted?.properties, undefined);
  });

  await t.step("_MaxResults keeps the first items and says more exist", async () => {
    const result = await svc.callTool("get_fixture_record", { Count: 5, _MaxResults: 2 });
    assert.deepEqual((outputOf(result) as { Id: number }[]).map((r) => r.Id), [1, 2]);
    assert.equal((result.structuredContent as Structured).omitted?.moreResults, true);
    assert.match(notesOf(result), /more results exist than _MaxResults allowed/);
    const all = await svc.callTool("get_fixture_record", { Count: 2, _MaxResults: 2 });
    assert.equal((all.structuredContent as Structured).omitted?.moreResults, undefined);
  });

  await t.step("a bad _MaxResults is refused before any worker runs", async () => {
    const result = await svc.callTool("get_fixture_record", { _MaxResults: 0 });
    assert.equal(result.isError, true);
    assert.match(result.content[0]?.text ?? "", /'_MaxResults'.*less than the minimum 1/);
    // The schema states no maximum; a larger number than the worker counts means all.
    const huge = await svc.callTool("get_fixture_record", { Count: 2, _MaxResults: 1e12 });
    assert.equal((outputOf(huge) as unknown[]).length, 2);
  });

  await t.step(
    "a format view shows its group-by, its columns by label (script blocks computed in the worker) and the identity",
    async () => {
      const errors = async () =>
        outputOf(await svc.callTool("get_variable", { Name: ["Error"], ValueOnly: true }));
      const errorsBefore = await errors();
      const result = await svc.callTool("get_fixture_sample", { Count: 2 });
      assert.equal(result.isError, undefined);
      // Greeting calls the module's own function: the column ran in the worker runspace.
      const expected = [1, 2].map((i) => ({
        Batch: "batch1",
        Name: `sample${i}`,
        "Size (KB)": 2 * i,
        Greeting: `Hello, sample${i}!`,
        Late: "late",
        Broken: null,
        Id: i,
      }));
      assert.deepEqual(outputOf(result), expected);
      const structured = result.structuredContent as Structured;
      assert.deepEqual(structured.output, expected);
      assert.deepEqual(structured.omitted?.properties, [{
        type: "SvcFixture.Sample",
        shown: ["Batch", "Name", "Size (KB)", "Greeting", "Late", "Broken", "Id"],
        omitted: ["Bytes", "DelayMilliseconds", "BlockMilliseconds"],
      }]);
      // The column that throws shows nothing, as in PowerShell, and leaves $Error as the call did.
      assert.deepEqual(await errors(), errorsBefore);
    },
  );

  await t.step("_RequestedProperties names computed columns as the report shows them", async () => {
    const result = await svc.callTool("get_fixture_sample", {
      Count: 1,
      _RequestedProperties: ["size (kb)", "Name", "Bytes"],
    });
    assert.deepEqual(outputOf(result), [{ "Size (KB)": 2, Name: "sample1", Bytes: 2048 }]);
    assert.equal((result.structuredContent as Structured).omitted?.unknownProperties, undefined);
  });

  await t.step(
    "computed columns stop at the time bound and say so; the worker goes on",
    async () => {
      // Each Late waits 450 ms: the 1 s bound ends the third, and the rest are not started.
      const started = performance.now();
      const result = await svc.callTool("get_fixture_sample", { Count: 6, DelayMilliseconds: 450 });
      const elapsed = performance.now() - started;
      const items = outputOf(result) as { Late: string | null; Name: string }[];
      assert.equal(items.length, 6);
      assert.equal(items[0]!.Late, "late");
      assert.equal(items[5]!.Late, null);
      assert.equal(items[5]!.Name, "sample6");
      const uncomputed = (result.structuredContent as Structured).omitted?.uncomputed ?? 0;
      assert.ok(uncomputed >= 3 && uncomputed <= 5, `${uncomputed} items left null`);
      assert.match(
        notesOf(result),
        /computed columns of \d item\(s\) are null: computing them took more than the 1 second/,
      );
      assert.ok(elapsed < 2_400, `${Math.round(elapsed)} ms, where all six would take 2.7 s`);
      const next = await svc.callTool("get_fixture_sample", { Count: 1 });
      assert.equal((outputOf(next) as { Late: string }[])[0]!.Late, "late");
    },
  );

  await t.step(
    "tools/list carries no result size hint under the default MaxResultBytes",
    async () => {
      const { tools } = await svc.listTools();
      for (const tool of tools) {
        assert.equal((tool as { _meta?: unknown })._meta, undefined, tool.name);
      }
    },
  );

  await t.step(
    "a read-only command is stopped once its output is full: a million records answer at once",
    async () => {
      const started = performance.now();
      const result = await svc.callTool("get_fixture_record", { Count: 1_000_000 });
      const ms = Math.round(performance.now() - started);
      const structured = result.structuredContent as Structured & { truncated: Truncated };
      const { truncated } = structured;
      assert.equal(truncated.limit, 24_576, "the default cap");
      assert.equal(truncated.stopped, true, JSON.stringify(truncated));
      // Unstopped, the worker would have counted all 1,000,000 (about a minute of pwsh here). It
      // stops once the cap and the output kept past it (ResultResources:MaxBytes) are full.
      assert.ok(truncated.items < 5_000, `stopped after ${truncated.items} items, ${ms} ms`);
      assert.equal(structured.output?.length, truncated.keptItems);
      assert.match(textOf(result), /the command was stopped after \d+, as no more could be kept/);
    },
  );

  await t.step("a command run for its effects is not stopped: every item is counted", async () => {
    const words = Array.from({ length: 3_000 }, (_, i) => `word-${i}-`.padEnd(24, "w"));
    const result = await svc.callTool("write_output", { InputObject: words });
    const { truncated, output } = result.structuredContent as Structured & {
      truncated: Truncated;
    };
    assert.equal(truncated.items, 3_000);
    assert.equal(truncated.stopped, undefined);
    assert.deepEqual(output, words.slice(0, truncated.keptItems));
  });

  await t.step(
    "each half of a result says everything: a client reading only structuredContent, or only the text",
    async () => {
      const cut = await svc.callTool("get_fixture_record", { Count: 1_000 });
      const failed = await svc.callTool("invoke_fixture_error", { Message: "bad thing" });
      const prompt = await svc.callTool("read_fixture_prompt", {});
      const views = {
        structuredContent: (r: CallResult) => JSON.stringify(r.structuredContent),
        content: (r: CallResult) => textOf(r),
      };
      for (const [half, view] of Object.entries(views)) {
        const seen = view(cut);
        assert.match(seen, /record1\b/, half);
        assert.match(
          seen,
          /output truncated: (at least )?\d+ bytes exceed ShellConfiguration:MaxResultBytes \(24576\)/,
          half,
        );
        assert.match(seen, /Ask for less with _MaxResults or _RequestedProperties/, half);
        assert.match(
          seen,
          /left out: Owner, Path, Notes\. Name properties in _RequestedProperties/,
          half,
        );
        // No client reads a large output twice: each half holds it within the cap once.
        assert.ok(new TextEncoder().encode(seen).length < 24_576 + 4_096, half);
        const error = view(failed);
        for (const detail of ["bad thing", "InvalidArgument", "fixture-target", "FixtureError"]) {
          assert.ok(error.includes(detail), `${half} lacks ${detail}: ${error}`);
        }
        assert.match(
          view(prompt),
          /this client cannot ask its user, so the command was stopped/,
          half,
        );
      }
      const kept = (cut.structuredContent as Structured).output!;
      assert.deepEqual(JSON.parse(textOf(cut).split("\n")[0]!), kept, "the same items in both");
    },
  );

  await t.step("strings, numbers and objects without a display set stay whole", async () => {
    const greeting = await svc.callTool("get_fixture_greeting", { Name: "model" });
    assert.deepEqual(outputOf(greeting), ["Hello, model!"]);
    const items = await svc.callTool("get_fixture_item_by_name", { Name: ["a"] });
    assert.deepEqual(outputOf(items), [{ Name: "a", Id: 1, Kind: "File" }]);
    assert.equal((items.structuredContent as Structured).omitted, undefined);
  });

  // Last: it replaces the stdio worker, and with it the session's state.
  await t.step(
    "a computed column that ignores the stop does not leave the stdio session unable to run calls",
    async () => {
      // Blocked in .NET past the bound, the column keeps the worker runspace busy for 8 s; stdio
      // has no reset between calls to retire it, so each call failed with "a pipeline is already
      // running" until it ended (for good, had it blocked for good).
      const blocked = await svc.callTool("get_fixture_sample", {
        Count: 1,
        BlockMilliseconds: 8_000,
      });
      assert.equal((outputOf(blocked) as { Late: unknown }[])[0]!.Late, null);
      const next = await svc.callTool("get_fixture_greeting", { Name: "again" });
      assert.notEqual(next.isError, true, textOf(next));
      assert.deepEqual(outputOf(next), ["Hello, again!"]);
    },
  );
});

Deno.test("UseDefaultDisplayProperties false keeps objects whole; CommandOverrides DefaultProperties still apply", async (t) => {
  await using svc = await startSvc({
    config: fixtureConfig({
      UseDefaultDisplayProperties: false,
      // PoshMcp's spelling of a per-command projection, keyed in another letter case.
      CommandOverrides: { "get-fixtureitem": { DefaultProperties: ["Name", "Kind"] } },
    }),
  });
  await t.step("no display set is applied", async () => {
    const result = await svc.callTool("get_fixture_record", { Count: 1 });
    const [record] = outputOf(result) as Record<string, unknown>[];
    assert.equal(Object.keys(record!).length, 6);
  });
  await t.step(
    "DefaultProperties reduce the command's objects and say what was left out",
    async () => {
      const items = await svc.callTool("get_fixture_item_by_name", { Name: ["a", "b"] });
      assert.deepEqual(outputOf(items), [{ Name: "a", Kind: "File" }, { Name: "b", Kind: "File" }]);
      assert.deepEqual((items.structuredContent as Structured).omitted?.properties, [
        {
          type: "System.Management.Automation.PSCustomObject",
          shown: ["Name", "Kind"],
          omitted: ["Id"],
        },
      ]);
      assert.match(notesOf(items), /left out: Id/);
    },
  );
  await t.step("the caller's _RequestedProperties and _AllProperties win over them", async () => {
    const requested = await svc.callTool("get_fixture_item_by_name", {
      Name: ["a"],
      _RequestedProperties: ["Id"],
    });
    assert.deepEqual(outputOf(requested), [{ Id: 1 }]);
    const all = await svc.callTool("get_fixture_item_by_name", {
      Name: ["a"],
      _AllProperties: true,
    });
    assert.deepEqual(outputOf(all), [{ Name: "a", Id: 1, Kind: "File" }]);
  });
});

const shell = (extra: Partial<ShellSettings> = {}) =>
  ({ useDefaultDisplayProperties: true, commandOverrides: {}, ...extra }) as ShellSettings;

Deno.test("outputShaping(): _AllProperties, then requested, then DefaultProperties, then display sets", () => {
  const overrides = {
    "get-thing": { defaultProperties: ["Owner"] },
    "Get-Plain": { useDefaultDisplayProperties: false },
  };
  const settings = shell({ commandOverrides: overrides });
  assert.deepEqual(outputShaping(settings, overrideFor(settings, "Get-Thing"), {}), {
    properties: ["Owner"],
  });
  assert.deepEqual(
    outputShaping(settings, overrideFor(settings, "Get-Thing"), {
      _RequestedProperties: [" Name ", ""],
    }),
    { properties: ["Name"] },
  );
  assert.deepEqual(
    outputShaping(settings, overrideFor(settings, "Get-Thing"), {
      _AllProperties: true,
      _RequestedProperties: ["Name"],
      _MaxResults: 3,
    }),
    { maxResults: 3 },
  );
  assert.deepEqual(outputShaping(settings, overrideFor(settings, "Get-Other"), {}), {
    properties: "display",
  });
  assert.deepEqual(outputShaping(settings, overrideFor(settings, "get-plain"), {}), {});
  assert.deepEqual(outputShaping(shell({ useDefaultDisplayProperties: false }), undefined, {}), {});
});

Deno.test("outputShaping() and refusedProperties(): AllowedProperties bound what a caller may ask for", () => {
  const allowed = ["Id", "Name", "CPU", "StartTime", "TotalProcessorTime"];
  const settings = shell({
    commandOverrides: {
      "Get-Process": { allowedProperties: allowed, defaultProperties: ["Id", "CommandLine"] },
      "Get-Bare": { allowedProperties: [] },
    },
  });
  const override = overrideFor(settings, "Get-Process");
  const tool = { name: "get_process_name", command: "Get-Process" };
  const shaping = (requested: string[]) => ({ _RequestedProperties: requested });
  // _AllProperties gives the allowed ones, a wildcard the allowed ones it matches.
  assert.deepEqual(outputShaping(settings, override, { _AllProperties: true }), {
    properties: allowed,
  });
  assert.deepEqual(outputShaping(settings, override, shaping(["*time", "id"])), {
    properties: ["Id", "StartTime", "TotalProcessorTime"],
  });
  assert.deepEqual(outputShaping(settings, override, {}), { properties: ["Id"] });
  assert.equal(refusedProperties(tool, override, shaping(["Id", "*Time", "C*"])), null);
  assert.equal(
    refusedProperties(tool, override, shaping(["Id", "CommandLine", "Modu?es"])),
    "'_RequestedProperties' of tool 'get_process_name' asks for 'CommandLine', 'Modu?es', which the configuration does not offer for 'Get-Process' (CommandOverrides AllowedProperties): it offers Id, Name, CPU, StartTime, TotalProcessorTime",
  );
  assert.equal(refusedProperties(tool, undefined, shaping(["CommandLine"])), null);
  const bare = overrideFor(settings, "Get-Bare");
  assert.match(refusedProperties(tool, bare, shaping(["Id"]))!, /it offers none$/);
  assert.deepEqual(outputShaping(settings, bare, { _AllProperties: true }), {
    properties: "display",
  });
  // Without the display sets, what a caller gets unasked is the allowed ones too.
  const plain = shell({
    useDefaultDisplayProperties: false,
    commandOverrides: settings.commandOverrides,
  });
  assert.deepEqual(outputShaping(plain, overrideFor(plain, "Get-Bare"), {}), {
    properties: "display",
  });
});

Deno.test("invokeRequest(): properties become select, maxResults first; progress and limits are the worker's", () => {
  const run = { command: "Get-Thing", parameters: { Name: "a" }, credentials: [], depth: 2 };
  const none = { limits: null, progress: false };
  assert.deepEqual(invokeRequest(run, none), run);
  assert.deepEqual(invokeRequest({ ...run, properties: ["Id", "*Time"], maxResults: 5 }, none), {
    ...run,
    select: { properties: ["Id", "*Time"], display: false },
    first: 5,
  });
  assert.deepEqual(invokeRequest({ ...run, properties: "display" }, none), {
    ...run,
    select: { properties: null, display: true },
  });
  const limits = callLimits(65_536);
  assert.deepEqual(invokeRequest(run, { limits, progress: true }), {
    ...run,
    progress: true,
    limits,
  });
  // A command that only reads may be stopped once its output is full; without limits there is none.
  assert.deepEqual(invokeRequest({ ...run, stopWhenFull: true }, { limits, progress: false }), {
    ...run,
    limits: { ...limits, stopWhenFull: true },
  });
  assert.deepEqual(invokeRequest({ ...run, stopWhenFull: true }, none), run);
});

Deno.test("fitOutput(): whole items from the start, then a count of what was dropped", () => {
  const items = Array.from({ length: 50 }, (_, i) => ({ id: i, text: "y".repeat(100) }));
  const fitted = fitOutput(items, 2048);
  const [json, notice] = fitted.text.split("\n");
  assert.deepEqual(JSON.parse(json!), fitted.kept);
  assert.ok(new TextEncoder().encode(fitted.text).length <= 2048);
  assert.deepEqual(fitted.kept, items.slice(0, fitted.kept.length));
  assert.match(
    notice!,
    new RegExp(
      `the first ${fitted.kept.length} of 50 item\\(s\\) are kept whole, ${
        50 - fitted.kept.length
      } dropped`,
    ),
  );
  assert.equal(fitted.truncated?.keptItems, fitted.kept.length);
});

Deno.test("fitOutput(): one huge string keeps its head and tail with a marker between", () => {
  const text = `HEAD${"é".repeat(20_000)}TAIL`;
  const fitted = fitOutput([text], 4096);
  assert.ok(new TextEncoder().encode(fitted.text).length <= 4096);
  const [kept] = fitted.kept as string[];
  assert.ok(kept!.startsWith("HEAD"));
  assert.ok(kept!.endsWith("TAIL"));
  assert.match(kept!, /…\[svc: \d+ characters cut\]…/);
  assert.equal(fitted.truncated?.shortenedFirst, true);
  assert.match(fitted.text, /the first item was shortened to fit/);
});

Deno.test("shorten(): an object keeps every key, its long strings cut", () => {
  const value = { Name: "x", Content: "z".repeat(50_000), Nested: { Log: "w".repeat(10_000) } };
  const cut = shorten(value, 2000) as typeof value;
  assert.equal(cut.Name, "x");
  assert.match(cut.Content, /^z+\n…\[svc: \d+ characters cut\]…\nz+$/);
  assert.match(cut.Nested.Log, /characters cut/);
  assert.ok(JSON.stringify(cut).length <= 2000);
});

Deno.test({
  name:
    "real format views: Get-Process, Get-ChildItem -Recurse and Get-PSDrive show what PowerShell shows",
  fn: async () => {
    // A whole Process at depth 4 takes more than the default cap: raised, as an operator would.
    await using svc = await startSvc({
      config: {
        ShellConfiguration: {
          Commands: ["Get-Process", "Get-ChildItem", "Get-PSDrive"],
          MaxResultBytes: 262_144,
        },
      },
    });
    // Its InputObject set takes Process objects, which no JSON client can send: not offered.
    const { tools } = await svc.listTools();
    const names = tools.map((tool) => tool.name);
    // Over the default cap every tool says how large its results may be (Claude Code reads it).
    for (const tool of tools) {
      const meta = (tool as { _meta?: Record<string, unknown> })._meta;
      assert.equal(meta?.["anthropic/maxResultSizeChars"], 524_288, tool.name);
    }
    assert.ok(names.includes("get_process_id"), names.join(", "));
    assert.ok(!names.some((name) => name.startsWith("get_process_input_object")), names.join(", "));

    // Process: the view's columns, memory and CPU computed by its script blocks, Id kept.
    const one = await svc.callTool("get_process_id", { Id: [Deno.pid] });
    assert.equal(one.isError, undefined);
    const bytes = new TextEncoder().encode(JSON.stringify(one)).length;
    assert.ok(bytes < 2300, `${bytes} bytes for one process`);
    const [process] = outputOf(one) as Record<string, unknown>[];
    assert.deepEqual(Object.keys(process!), [
      "NPM(K)",
      "PM(M)",
      "WS(M)",
      "CPU(s)",
      "Id",
      "SI",
      "ProcessName",
    ]);
    assert.equal(process!.Id, Deno.pid);
    // "{0:N2}" -f [float]($_.WS / 1MB): Deno's working set is tens of megabytes.
    assert.match(String(process!["WS(M)"]), /^\d[\d,]*\.\d\d$/);
    assert.ok(Number(String(process!["WS(M)"]).replaceAll(",", "")) > 1, String(process!["WS(M)"]));
    assert.match(
      notesOf(one),
      /System\.Diagnostics\.Process objects show NPM\(K\), PM\(M\), WS\(M\), CPU\(s\), Id, SI, ProcessName; left out: /,
    );
    const all = await svc.callTool("get_process_id", { Id: [Deno.pid], _AllProperties: true });
    const [whole] = (all.structuredContent as Structured).output as Record<string, unknown>[];
    assert.ok(Object.keys(whole!).length > 40, `${Object.keys(whole!).length} properties`);
    assert.equal(whole!.ProcessName, process!.ProcessName);
    const requested = await svc.callTool("get_process_id", {
      Id: [Deno.pid],
      _RequestedProperties: ["Id", "WS"],
    });
    assert.deepEqual(Object.keys((outputOf(requested) as object[])[0]!), ["Id", "WS"]);

    // A directory tree: folders and files under the same names, with their directory (the view's
    // group-by) and FullName, and no colour codes.
    const dir = await Deno.realPath(await Deno.makeTempDir());
    await Deno.mkdir(`${dir}/sub`);
    await Deno.writeTextFile(`${dir}/a.txt`, "12345");
    await Deno.writeTextFile(`${dir}/sub/b.txt`, "123");
    const listing = await svc.callTool("get_child_item_items", { Path: [dir], Recurse: true });
    const entries = outputOf(listing) as Record<string, unknown>[];
    const byName = new Map(entries.map((entry) => [entry.Name, entry]));
    assert.deepEqual([...byName.keys()].sort(), ["a.txt", "b.txt", "sub"]);
    const sep = Deno.build.os === "windows" ? "\\" : "/";
    for (const entry of entries) {
      assert.deepEqual(Object.keys(entry), Object.keys(entries[0]!), JSON.stringify(entries));
      assert.equal(entry.FullName, `${entry.Directory}${sep}${entry.Name}`);
    }
    assert.equal(byName.get("b.txt")!.Directory, `${dir}${sep}sub`);
    assert.equal(byName.get("a.txt")!.Directory, dir);
    // Every property of a file, the files and folders among them given as paths: a FileInfo's
    // Directory, its Parent and Root, each whole to SerializationDepth, made 2.1 MB of one file.
    const everything = await svc.callTool("get_child_item_items", {
      Path: [`${dir}/a.txt`],
      _AllProperties: true,
    });
    const [file] = outputOf(everything) as Record<string, unknown>[];
    assert.equal(file?.Directory, dir, JSON.stringify(file).slice(0, 500));
    assert.equal(file?.Length, 5);
    assert.equal((everything.structuredContent as { truncated?: unknown }).truncated, undefined);
    assert.ok(JSON.stringify(file).length < 16_384, `${JSON.stringify(file).length} bytes`);
    assert.ok(!Object.keys(entries[0]!).includes("NameString"));
    assert.ok(!JSON.stringify(entries).includes("\\u001b"), "no ANSI escapes");
    if (Deno.build.os !== "windows") {
      // The Unix view: LastWriteTime is a script block over $_.LastWriteTime, kept as the date itself.
      assert.deepEqual(Object.keys(entries[0]!), [
        "Directory",
        "UnixMode",
        "User",
        "Group",
        "LastWriteTime",
        "Size",
        "Name",
        "FullName",
      ]);
      assert.equal(byName.get("a.txt")!.Size, 5);
      assert.ok(!Number.isNaN(Date.parse(String(byName.get("a.txt")!.LastWriteTime))));
    }
    await Deno.remove(dir, { recursive: true });

    // PSDriveInfo's view computes every column but Name and CurrentLocation; before, its Provider
    // property came whole (a megabyte for the first drive).
    const drives = await svc.callTool("get_psdrive_name", {});
    const listed = outputOf(drives) as Record<string, unknown>[];
    const variable = listed.find((drive) => drive.Name === "Variable");
    assert.deepEqual(variable, {
      Name: "Variable",
      "Used (GB)": null,
      "Free (GB)": null,
      Provider: "Variable",
      Root: "",
      CurrentLocation: "",
    });
    const driveBytes = new TextEncoder().encode(JSON.stringify(drives)).length;
    assert.ok(driveBytes < 8192, `${driveBytes} bytes for ${listed.length} drives`);
  },
});
