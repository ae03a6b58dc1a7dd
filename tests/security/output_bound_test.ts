/**
 * A call cannot make svc hold much more than `MaxResultBytes` needs: the worker stops encoding
 * output once it has more than svc keeps and counts the rest, bounds the error and other streams the
 * same way, and svc refuses (and retires the worker for) any frame larger than a call can produce,
 * before holding it. Measured on a real svc process: the growth of its peak RSS during a call.
 */
import assert from "node:assert/strict";
import { RunspaceWorker } from "../../lib/worker.ts";
import type { WorkerLog, WorkerProgress } from "../../lib/worker_protocol.ts";
import { post, processMemory, startHttpSvc, TEST_PWSH } from "../support/harness.ts";
import { textOf } from "./support.ts";

const OUTPUT_FIXTURE = new URL("./fixtures/OutputFixture.psm1", import.meta.url).pathname;
const MAX_RESULT_BYTES = 1_048_576;
/**
 * svc's peak RSS may grow this much during one call, whatever the call produced: 32 × MaxResultBytes.
 * A response within the call's limits (under 2.4 × MaxResultBytes) is held as bytes, text and parsed
 * objects, fitted, and sent as the text block, structured content and the HTTP body; the rest is the
 * garbage collector's slack. Measured: 4–19 MB; before the bound, 70–720 MB (docs/security.md).
 */
const PEAK_GROWTH_BOUND = 32 * MAX_RESULT_BYTES;

const MB = 1024 * 1024;

/**
 * Runs `task` and returns its result with how far svc's peak RSS rose above its RSS before it: the
 * peak is reset first (`clear_refs` 5) and read as VmHWM after, so a spike between samples counts.
 */
async function peakGrowth<T>(pid: number, task: () => Promise<T>): Promise<[T, number]> {
  Deno.writeTextFileSync(`/proc/${pid}/clear_refs`, "5");
  const before = processMemory(pid);
  const result = await task();
  return [result, processMemory(pid, "VmHWM") - before];
}

interface CallBody {
  content: { type: string; text?: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

Deno.test({
  name: "a call's output, streams and frames are bounded by MaxResultBytes before svc holds them",
  ignore: Deno.build.os !== "linux",
}, async (t) => {
  const config = {
    ShellConfiguration: { Modules: [OUTPUT_FIXTURE], MaxResultBytes: MAX_RESULT_BYTES },
    McpServer: {
      RunspacePool: {
        MinPoolSize: 1,
        EagerWarmCount: 1,
        RunspacesPerProcess: 1,
        StopTimeout: "00:00:02",
      },
    },
  };
  await using svc = await startHttpSvc({ config });
  const call = async (tool: string, args: Record<string, unknown>) => {
    const response = await post(`${svc.url}/call`, { tool, arguments: args });
    assert.equal(response.status, 200, JSON.stringify(response.body).slice(0, 400));
    return response.body as CallBody;
  };
  // Warm: the first call loads what later calls reuse (the SDK, the catalog, JIT).
  await call("get_large_output", { Kilobytes: 1024 });

  await t.step("100 MB of output items: whole items kept, the rest counted", async () => {
    // Not read-only: svc lets it run to its end, and the worker counts what it cannot send.
    const [result, growth] = await peakGrowth(
      svc.pid,
      () => call("write_large_output", { Kilobytes: 100 * 1024 }),
    );
    assert.notEqual(result.isError, true, textOf(result).slice(0, 400));
    const truncated = result.structuredContent?.truncated as Record<string, unknown>;
    assert.equal(truncated.items, 1600);
    assert.ok(Number(truncated.keptItems) >= 14 && Number(truncated.keptItems) < 16);
    assert.ok(Number(truncated.bytes) >= 100 * MB, JSON.stringify(truncated));
    const text = textOf(result);
    assert.match(
      text,
      /output truncated: at least \d+ bytes exceed ShellConfiguration:MaxResultBytes \(1048576\); the first 1[45] of 1600 item\(s\) are kept whole, 158[56] dropped/,
    );
    assert.ok(new TextEncoder().encode(text).length <= MAX_RESULT_BYTES + 1024);
    assert.ok(growth < PEAK_GROWTH_BOUND, `svc's peak RSS grew ${growth / MB} MB`);
  });

  await t.step("the same from a read-only command: stopped once its output is full", async () => {
    const [result, growth] = await peakGrowth(
      svc.pid,
      () => call("get_large_output", { Kilobytes: 100 * 1024 }),
    );
    const truncated = result.structuredContent?.truncated as Record<string, unknown>;
    assert.equal(truncated.stopped, true, JSON.stringify(truncated));
    // 1.25 MiB of 64 KiB items fill the worker's budget at the 21st; the stop lands at that write.
    assert.ok(Number(truncated.items) <= 22, JSON.stringify(truncated));
    assert.ok(Number(truncated.keptItems) >= 14 && Number(truncated.keptItems) < 16);
    assert.ok(growth < PEAK_GROWTH_BOUND, `svc's peak RSS grew ${growth / MB} MB`);
  });

  await t.step("one 100 MB string: its head and tail kept, the cut counted", async () => {
    const [result, growth] = await peakGrowth(
      svc.pid,
      () => call("get_large_string", { Megabytes: 100 }),
    );
    const output = result.structuredContent?.output as string[] | undefined;
    const text = textOf(result);
    const kept = (output ?? JSON.parse(text.split("\n[svc:")[0]!))[0] as string;
    assert.ok(kept.startsWith("HEADxxx") && kept.endsWith("xxxTAIL"));
    const cut = Number(/…\[svc: (\d+) characters cut\]…/.exec(kept)?.[1]);
    // Every character not shown is counted: shown + cut = the string's whole length.
    const shown = kept.length - /\n…\[svc: \d+ characters cut\]…\n/.exec(kept)![0].length;
    assert.equal(shown + cut, 100 * MB + 8);
    assert.match(text, /the first item was shortened to fit\./);
    assert.ok(growth < PEAK_GROWTH_BOUND, `svc's peak RSS grew ${growth / MB} MB`);
  });

  await t.step("16 MB on each stream: records kept up to the bound, the rest counted", async () => {
    const [result, growth] = await peakGrowth(
      svc.pid,
      () => call("write_large_streams", { Megabytes: 16 }),
    );
    assert.equal(result.isError, true);
    const structured = result.structuredContent ?? {};
    const errors = structured.errors as { message: string; terminating: boolean }[];
    assert.ok(errors.length >= 1 && errors.length < 100, `${errors.length} errors`);
    const last = errors[errors.length - 1]!;
    assert.equal(last.terminating, true, "the terminating error is always kept");
    assert.match(last.message, /^terminating e+\n…\[svc: \d+ characters cut\]…\ne+$/);
    const dropped = structured.droppedRecords as Record<string, number>;
    assert.equal(dropped.errors! + errors.length - 1, 256, JSON.stringify(dropped));
    // Errors come first; once the records fill MaxResultBytes, every later one is only counted.
    assert.deepEqual(
      { ...dropped, errors: 0 },
      { errors: 0, warnings: 256, information: 256, verbose: 256 },
    );
    assert.ok(
      textOf(result).includes(
        `[svc: ${dropped.errors} error, 256 warning, 256 information and 256 verbose record(s) were left out: the call's records together exceeded ShellConfiguration:MaxResultBytes (1048576).]`,
      ),
    );
    const bytes = new TextEncoder().encode(JSON.stringify(result)).length;
    assert.ok(bytes < 8 * MAX_RESULT_BYTES, `${bytes} bytes of result`);
    assert.ok(growth < PEAK_GROWTH_BOUND, `svc's peak RSS grew ${growth / MB} MB`);
  });

  await t.step("a frame past the cap retires the worker; svc keeps serving", async () => {
    const [result, growth] = await peakGrowth(
      svc.pid,
      () => call("send_raw_frame", { Megabytes: 64 }),
    );
    assert.equal(result.isError, true);
    assert.match(
      textOf(result),
      /^PowerShell worker process \d+ sent a frame over \d+ bytes, more than a call can produce under ShellConfiguration:MaxResultBytes \(1048576\), so it was retired$/,
    );
    assert.ok(growth < PEAK_GROWTH_BOUND, `svc's peak RSS grew ${growth / MB} MB`);
    const after = await call("get_large_output", { Kilobytes: 1024 });
    assert.notEqual(after.isError, true, textOf(after).slice(0, 400));
  });
});

Deno.test("under a small MaxResultBytes: output up to it arrives whole, shape reports and progress are bounded", async (t) => {
  const config = {
    ShellConfiguration: {
      Modules: [OUTPUT_FIXTURE],
      MaxResultBytes: 4096,
      // The operator's choice, unlike a caller's, is followed by what it left out.
      CommandOverrides: { "Get-WideObject": { DefaultProperties: ["P1"] } },
    },
    McpServer: { RunspacePool: { MinPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" } },
  };
  await using svc = await startHttpSvc({ config });
  const call = async (tool: string, args: Record<string, unknown>) => {
    const response = await post(`${svc.url}/call`, { tool, arguments: args });
    assert.equal(response.status, 200, JSON.stringify(response.body).slice(0, 400));
    return response.body as CallBody;
  };

  await t.step(
    "output up to the cap arrives whole; just over it, svc fits it, its size exact",
    async () => {
      const under = await call("get_large_output", { Kilobytes: 3, ItemKilobytes: 1 });
      assert.equal(under.structuredContent?.truncated, undefined);
      assert.equal((under.structuredContent?.output as string[]).length, 3);
      // 4 items of 1 KiB: 4109 bytes, over 4096 and within the worker's 1.25 × 4096.
      const over = await call("get_large_output", { Kilobytes: 4, ItemKilobytes: 1 });
      assert.deepEqual(over.structuredContent?.truncated, {
        bytes: 4109,
        limit: 4096,
        items: 4,
        keptItems: 3,
        shortenedFirst: false,
      });
      assert.match(textOf(over), /output truncated: 4109 bytes exceed/);
    },
  );

  await t.step(
    "an object of 1000 properties: the report lists 256 omitted names, counts all",
    async () => {
      const result = await call("get_wide_object", { Properties: 1000, Count: 40 });
      const omitted = result.structuredContent?.omitted as {
        properties: { type: string; omitted: string[]; omittedCount: number }[];
      };
      assert.equal(omitted.properties.length, 16, "at most 16 types are reported");
      assert.equal(omitted.properties[0]!.omitted.length, 256);
      assert.equal(omitted.properties[0]!.omittedCount, 999);
      assert.match(
        textOf(result),
        /SHOWN: Wide\.Type0 objects show P1; left out: P0, P2, .*, and 987 more\./,
      );
    },
  );
});

Deno.test("a worker under MaxResultBytes cuts each progress and log string to 1/64 of it (256 bytes at least)", async () => {
  await using worker = await RunspaceWorker.start({
    pwsh: TEST_PWSH,
    stopTimeoutMs: 2_000,
    maxResultBytes: 16_384,
  });
  await worker.startup({ modules: [OUTPUT_FIXTURE], scriptPath: null, script: null });
  const seen: WorkerProgress[] = [];
  const { result } = await worker.invoke(
    {
      command: "Write-LargeProgress",
      parameters: { Kilobytes: 100 },
      credentials: [],
      depth: 2,
    },
    { onProgress: (progress) => seen.push(progress) },
  );
  assert.deepEqual(result.output, ["done"]);
  assert.ok(seen.length > 0, "a progress record arrived");
  const { activity, status } = seen[0]!;
  for (const text of [activity, status]) {
    assert.ok(new TextEncoder().encode(JSON.stringify(text)).length <= 256, `${text.length} chars`);
    const cut = Number(/…\[svc: (\d+) characters cut\]…/.exec(text)?.[1]);
    assert.equal(
      text.length - /\n…\[svc: \d+ characters cut\]…\n/.exec(text)![0].length + cut,
      102_401,
    );
  }
  // Log frames: each string cut the same way, at most 64 records a frame, the rest counted.
  const logs: WorkerLog[] = [];
  const streams = await worker.invoke(
    {
      command: "Write-LargeStreams",
      parameters: { Megabytes: 1, RecordKilobytes: 4 },
      credentials: [],
      depth: 2,
    },
    { log: { level: "debug", onLog: (log) => logs.push(log) } },
  );
  assert.equal(streams.result.errors.at(-1)?.terminating, true);
  const records = logs.flatMap((log) => log.records);
  const dropped = logs.reduce((sum, log) => sum + (log.dropped ?? 0), 0);
  assert.equal(records.length + dropped, 3 * 256, `${records.length} sent, ${dropped} dropped`);
  assert.ok(logs.every((log) => log.records.length <= 64), "at most 64 records a frame");
  assert.deepEqual(records.slice(0, 3).map((r) => r.stream), ["warning", "verbose", "information"]);
  for (const { message } of records) {
    assert.ok(new TextEncoder().encode(JSON.stringify(message)).length <= 256, message);
    assert.match(message, /^\d+ e+\n…\[svc: \d+ characters cut\]…\ne+$/);
  }
});

Deno.test("the worker lets go of output it could never send while the command still runs", async () => {
  await using worker = await RunspaceWorker.start({
    pwsh: TEST_PWSH,
    stopTimeoutMs: 2_000,
    maxResultBytes: MAX_RESULT_BYTES,
  });
  await worker.startup({ modules: [OUTPUT_FIXTURE], scriptPath: null, script: null });
  // 6000 distinct strings of 16 Ki characters: 192 MiB held as UTF-16 if the worker kept them all.
  const { result } = await worker.invoke({
    command: "Write-DistinctOutput",
    parameters: { Count: 6000 },
    credentials: [],
    depth: 2,
  });
  assert.equal(result.outputCut?.items, 6000);
  assert.ok(result.outputCut!.bytes >= 6000 * 16 * 1024, JSON.stringify(result.outputCut));
  assert.ok(result.output.length >= 70 && result.output.length <= 80, `${result.output.length}`);
  const growth = Number(/managed heap growth (-?\d+)/.exec(result.warnings[0] ?? "")?.[1]);
  assert.ok(growth < 32 * MB, `the managed heap grew ${growth / MB} MB during the call`);
});
