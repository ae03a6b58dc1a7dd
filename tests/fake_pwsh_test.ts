/**
 * Self-test of the stand-in worker (tests/support/fake-pwsh): it is driven here over the worker
 * protocol by a minimal client written from docs/worker-protocol.md, independent of lib/shell.ts,
 * so the fixture itself is known to be right before other suites rely on it.
 */
import assert from "node:assert/strict";
import { outputWithin, unlessExited, within } from "./support/deadline.ts";

const fakePwsh = new URL("./support/fake-pwsh", import.meta.url).pathname;

/** The stand-in is a bash script over Unix sockets: its self-test runs on Linux and macOS only. */
function standInTest(name: string, fn: (t: Deno.TestContext) => Promise<void>): void {
  Deno.test({ name, ignore: Deno.build.os === "windows", fn });
}
const token = "0123456789abcdef".repeat(4);

type Frame = Record<string, unknown>;

interface InvokeResult {
  output: unknown[];
  errors: Array<Record<string, unknown>>;
  warnings: string[];
  hadErrors: boolean;
  stopped: boolean;
  durationMs: number;
}

/** One stand-in process connected to a Unix socket this test listens on. */
class StandIn {
  private buffer = new Uint8Array(0);
  private queue: Frame[] = [];
  private nextId = 1;
  private readonly encoder = new TextEncoder();

  private constructor(
    readonly dir: string,
    private readonly listener: Deno.Listener,
    readonly child: Deno.ChildProcess,
    private readonly conn: Deno.Conn,
  ) {}

  static async start(env: Record<string, string> = {}): Promise<StandIn> {
    const dir = await Deno.makeTempDir({ prefix: "svc-fake-" });
    const socket = `${dir}/w.sock`;
    await Deno.writeTextFile(`${dir}/host.ps1`, "# the stand-in only checks that this exists\n");
    const listener = Deno.listen({ transport: "unix", path: socket });
    const child = new Deno.Command(fakePwsh, {
      args: [
        "-NoLogo",
        "-NoProfile",
        "-NonInteractive",
        "-File",
        `${dir}/host.ps1`,
        "-Endpoint",
        `unix:${socket}`,
      ],
      env: { SVC_WORKER_TOKEN: token, ...env },
      cwd: dir,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const conn = await unlessExited(
      listener.accept(),
      `the stand-in to connect to ${socket}`,
      child,
      () => new Response(child.stderr).text(),
      20_000,
    ).catch((error) => {
      listener.close();
      throw error;
    });
    return new StandIn(dir, listener, child, conn);
  }

  /** The next frame from the worker, or null at end-of-file. */
  async frame(): Promise<Frame | null> {
    const queued = this.queue.shift();
    if (queued) return queued;
    return await this.readFrame();
  }

  private async readFrame(): Promise<Frame | null> {
    while (true) {
      const newline = this.buffer.indexOf(10);
      if (newline !== -1) {
        const line = this.buffer.subarray(0, newline);
        this.buffer = this.buffer.slice(newline + 1);
        return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(line));
      }
      const chunk = new Uint8Array(65536);
      const n = await within(this.conn.read(chunk), "a frame from the stand-in", 30_000);
      if (n === null) return null;
      const merged = new Uint8Array(this.buffer.length + n);
      merged.set(this.buffer);
      merged.set(chunk.subarray(0, n), this.buffer.length);
      this.buffer = merged;
    }
  }

  async send(frame: Frame) {
    await this.sendRaw(this.encoder.encode(JSON.stringify(frame) + "\n"));
  }

  async sendRaw(bytes: Uint8Array) {
    let offset = 0;
    while (offset < bytes.length) offset += await this.conn.write(bytes.subarray(offset));
  }

  /** Sends a request and returns its id (the response is read with `response`). */
  async post(op: string, params: unknown = {}): Promise<number> {
    const id = this.nextId++;
    await this.send({ id, op, params });
    return id;
  }

  /** Waits for the response to `id`; other frames stay queued in arrival order. */
  async response(id: number): Promise<Frame> {
    const index = this.queue.findIndex((f) => f.id === id);
    if (index !== -1) return this.queue.splice(index, 1)[0] as Frame;
    while (true) {
      const frame = await this.readFrame();
      if (frame === null) throw new Error(`end of file before the response to ${id}`);
      if (frame.id === id) return frame;
      this.queue.push(frame);
    }
  }

  async request(op: string, params: unknown = {}): Promise<Frame> {
    return await this.response(await this.post(op, params));
  }

  async result<T = Record<string, unknown>>(op: string, params: unknown = {}): Promise<T> {
    const response = await this.request(op, params);
    assert.equal(response.ok, true, JSON.stringify(response.error));
    return response.result as T;
  }

  invoke(command: string, parameters: Record<string, unknown> = {}): Promise<InvokeResult> {
    return this.result<InvokeResult>("invoke", { command, parameters, credentials: [], depth: 4 });
  }

  /** Closes the connection (end-of-file for the worker) and returns the exit status. */
  async close(): Promise<{ code: number; stderr: string }> {
    try {
      this.conn.close();
    } catch {
      // already closed
    }
    const { code, stderr } = await within(this.child.output(), "the stand-in to exit", 20_000);
    this.listener.close();
    await Deno.remove(this.dir, { recursive: true });
    return { code, stderr: new TextDecoder().decode(stderr) };
  }
}

standInTest("fake-pwsh speaks the worker protocol", async (t) => {
  const worker = await StandIn.start();
  try {
    await t.step("the first frame is hello with the token and a 7.4+ version", async () => {
      const hello = await worker.frame();
      assert.ok(hello);
      assert.equal(hello.type, "hello");
      assert.equal(hello.token, token);
      assert.equal(hello.protocol, 1);
      assert.equal(hello.pid, worker.child.pid);
      assert.equal(hello.psVersion, "7.4.99-standin");
      assert.equal(hello.edition, "Core");
      assert.equal(typeof hello.os, "string");
    });

    await t.step("startup imports the fixture module and reports an unknown one", async () => {
      const fixture = new URL("./fixtures/SvcFixture/SvcFixture.psd1", import.meta.url).pathname;
      const result = await worker.result<{ modules: Array<Record<string, unknown>> }>("startup", {
        modules: [fixture, "No.Such.Module"],
        scriptPath: null,
        script: "# set by the startup script\nSet-Variable -Name fromStartup -Value 'yes'",
      });
      assert.deepEqual(result.modules[0], {
        name: fixture,
        found: true,
        version: "1.2.0",
        path: fixture.replace(/\.psd1$/, ".psm1"),
        error: null,
      });
      assert.equal(result.modules[1]?.found, false);
      assert.match(String(result.modules[1]?.error), /'No\.Such\.Module' was not loaded/);
    });

    await t.step(
      "describe Start-Sleep: the documented sets, types and common parameters",
      async () => {
        const { commands, missing } = await worker.result<
          { commands: Array<Record<string, unknown>>; missing: string[] }
        >("describe", { names: ["Start-Sleep", "No-Such"], help: true });
        assert.deepEqual(missing, ["No-Such"]);
        const sleep = commands[0] as {
          commandType: string;
          module: string;
          defaultParameterSet: string;
          parameterSets: Array<
            {
              name: string;
              isDefault: boolean;
              syntax: string;
              parameters: Array<Record<string, unknown>>;
            }
          >;
          help: { synopsis: string };
        };
        assert.equal(sleep.commandType, "Cmdlet");
        assert.equal(sleep.module, "Microsoft.PowerShell.Utility");
        assert.equal(sleep.defaultParameterSet, "Seconds");
        assert.deepEqual(sleep.parameterSets.map((s) => [s.name, s.isDefault]), [
          ["Seconds", true],
          ["Milliseconds", false],
          ["FromTimeSpan", false],
        ]);
        const seconds = sleep.parameterSets[0]!;
        assert.equal(seconds.syntax, "[-Seconds] <double> [<CommonParameters>]");
        const param = seconds.parameters[0]!;
        assert.equal(param.name, "Seconds");
        assert.equal(param.type, "System.Double");
        assert.equal(param.isMandatory, true);
        assert.equal(param.position, 0);
        assert.equal(param.valueFromPipeline, true);
        // Common parameters follow the command's own, in PowerShell's order (ProgressAction is 7.4).
        assert.deepEqual(seconds.parameters.slice(1).map((p) => p.name), [
          "Verbose",
          "Debug",
          "ErrorAction",
          "WarningAction",
          "InformationAction",
          "ProgressAction",
          "ErrorVariable",
          "WarningVariable",
          "InformationVariable",
          "OutVariable",
          "OutBuffer",
          "PipelineVariable",
        ]);
        const ms = sleep.parameterSets[1]!.parameters[0]!;
        assert.deepEqual([ms.name, ms.type, ms.aliases, ms.position], [
          "Milliseconds",
          "System.Int32",
          ["ms"],
          null,
        ]);
        assert.match(sleep.help.synopsis, /Suspends the activity/);
      },
    );

    await t.step(
      "describe Get-FixtureItem: two sets, default ByName, validation and help",
      async () => {
        const { commands } = await worker.result<{ commands: Array<Record<string, unknown>> }>(
          "describe",
          { names: ["get-fixtureitem"], help: true },
        );
        const item = commands[0] as {
          name: string;
          commandType: string;
          module: string;
          moduleVersion: string;
          defaultParameterSet: string;
          supportsShouldProcess: boolean;
          parameterSets: Array<
            {
              name: string;
              isDefault: boolean;
              syntax: string;
              parameters: Array<Record<string, unknown>>;
            }
          >;
          help: { synopsis: string; parameters: Record<string, string> };
        };
        assert.equal(item.name, "Get-FixtureItem");
        assert.equal(item.commandType, "Function");
        assert.equal(item.module, "SvcFixture");
        assert.equal(item.moduleVersion, "1.2.0");
        assert.equal(item.defaultParameterSet, "ByName");
        assert.equal(item.supportsShouldProcess, false);
        assert.deepEqual(item.parameterSets.map((s) => [s.name, s.isDefault]), [
          ["ByName", true],
          ["ById", false],
        ]);
        const [byName, byId] = item.parameterSets;
        assert.equal(byName!.syntax, "[-Name] <string[]> [-Kind <string>] [<CommonParameters>]");
        assert.equal(byId!.syntax, "-Id <int[]> [-Kind <string>] [<CommonParameters>]");
        const name = byName!.parameters[0]!;
        assert.deepEqual(
          [name.name, name.type, name.elementType, name.isMandatory, name.position, name.aliases],
          ["Name", "System.String[]", "System.String", true, 0, ["ItemName"]],
        );
        assert.equal(name.helpMessage, "One or more item names.");
        const kind = byId!.parameters.find((p) => p.name === "Kind")!;
        assert.deepEqual(kind.validateSet, ["File", "Folder", "Link"]);
        assert.equal(kind.isMandatory, false);
        assert.equal(byId!.parameters[0]!.type, "System.Int32[]");
        assert.equal(item.help.synopsis, "Returns fixture items by name or by id.");
        assert.deepEqual(Object.keys(item.help.parameters), ["Name", "Id", "Kind"]);

        const noHelp = await worker.result<{ commands: Array<{ help: unknown }> }>("describe", {
          names: ["Get-FixtureItem"],
          help: false,
        });
        assert.equal(noHelp.commands[0]?.help, null);
      },
    );

    await t.step("Write-Output round-trips UTF-8 exactly, one value per element", async () => {
      const text = "Grüße 日本語 🚀";
      const result = await worker.invoke("Write-Output", { InputObject: [text, 1, true] });
      assert.deepEqual(result.output, [text, 1, true]);
      assert.equal(result.hadErrors, false);
      assert.equal(result.stopped, false);
      const whole = await worker.invoke("Write-Output", { InputObject: [text], NoEnumerate: true });
      assert.deepEqual(whole.output, [[text]]);
    });

    await t.step(
      "variables persist between calls and reset restores the startup snapshot",
      async () => {
        await worker.invoke("Set-Variable", { Name: "svcState", Value: "kept" });
        const got = await worker.invoke("Get-Variable", {
          Name: ["svcState", "fromStartup"],
          ValueOnly: true,
        });
        assert.deepEqual(got.output, ["kept", "yes"]);
        await worker.result("reset");
        const after = await worker.invoke("Get-Variable", { Name: ["svcState"] });
        assert.deepEqual(after.output, []);
        assert.equal(after.hadErrors, true);
        assert.equal(after.errors[0]?.message, "Cannot find a variable with the name 'svcState'.");
        assert.equal(
          after.errors[0]?.fullyQualifiedErrorId,
          "VariableNotFound,Microsoft.PowerShell.Commands.GetVariableCommand",
        );
        assert.equal(after.errors[0]?.category, "ObjectNotFound");
        assert.equal(after.errors[0]?.terminating, false);
        const kept = await worker.invoke("Get-Variable", {
          Name: ["fromStartup"],
          ValueOnly: true,
        });
        assert.deepEqual(kept.output, ["yes"]);
      },
    );

    await t.step("binding failures carry PowerShell's texts as terminating errors", async () => {
      const range = await worker.invoke("Test-FixtureBinding", { Count: 11 });
      assert.deepEqual(range.errors.at(-1), {
        message: "Cannot validate argument on parameter 'Count'. The 11 argument is greater than " +
          "the maximum allowed range of 10. Supply an argument that is less than or equal to 10 " +
          "and then try the command again.",
        fullyQualifiedErrorId: "ParameterArgumentValidationError,Test-FixtureBinding",
        category: "InvalidData",
        targetName: null,
        targetType: null,
        exceptionType: "System.Management.Automation.ParameterBindingValidationException",
        scriptStackTrace: null,
        terminating: true,
        position: null,
      });
      const unknown = await worker.invoke("Get-NoSuchThing");
      assert.match(
        String(unknown.errors[0]?.message),
        /^The term 'Get-NoSuchThing' is not recognized/,
      );
      assert.equal(unknown.errors[0]?.fullyQualifiedErrorId, "CommandNotFoundException");
    });

    await t.step(
      "a second request while one runs is answered busy; stop ends the sleep",
      async () => {
        const started = Date.now();
        const sleepId = await worker.post("invoke", {
          command: "Start-Sleep",
          parameters: { Seconds: 30 },
          credentials: [],
          depth: 4,
        });
        const busy = await worker.request("describe", { names: ["Get-Date"], help: false });
        assert.equal(busy.ok, false);
        assert.equal((busy.error as { kind: string }).kind, "busy");
        await new Promise((resolve) => setTimeout(resolve, 300));
        await worker.send({ op: "stop", params: { id: sleepId } });
        const response = await worker.response(sleepId);
        const elapsed = Date.now() - started;
        assert.equal(response.ok, true);
        const result = response.result as InvokeResult;
        assert.equal(result.stopped, true);
        assert.deepEqual(result.errors, []);
        assert.ok(elapsed < 5_000, `stop took ${elapsed} ms`);
        const next = await worker.invoke("Get-FixtureGreeting", { Name: "after" });
        assert.deepEqual(next.output, ["Hello, after!"]);
      },
    );

    await t.step("a frame that is not JSON and an unknown op are answered, not fatal", async () => {
      await worker.send({ id: 900, op: "frobnicate", params: {} });
      const unknownOp = await worker.response(900);
      assert.equal((unknownOp.error as { kind: string }).kind, "unknown-op");
      await worker.send({ op: "stop", params: { id: 12345 } }); // ignored: nothing runs
      await worker.sendRaw(new TextEncoder().encode("{not json\n"));
      const protocolError = await worker.frame();
      assert.equal(protocolError?.id, null);
      assert.equal((protocolError?.error as { kind: string }).kind, "protocol");
    });
  } finally {
    const { code } = await worker.close();
    // End-of-file on the socket makes the worker exit with code 0 (protocol §5).
    assert.equal(code, 0);
  }
});

standInTest(
  "fake-pwsh: a startup script that throws is a startup error with its record",
  async () => {
    const worker = await StandIn.start();
    try {
      await worker.frame(); // hello
      const response = await worker.request("startup", {
        modules: [],
        scriptPath: null,
        script: "throw 'vault sign-in failed'",
      });
      assert.equal(response.ok, false);
      const error = response.error as {
        kind: string;
        message: string;
        record: Record<string, unknown>;
      };
      assert.equal(error.kind, "startup");
      assert.equal(error.message, "vault sign-in failed");
      assert.equal(error.record.fullyQualifiedErrorId, "vault sign-in failed");
      assert.equal(error.record.category, "OperationStopped");
      assert.equal(error.record.terminating, true);
      const exit = await worker.request("exit");
      assert.equal(exit.ok, true);
    } finally {
      assert.equal((await worker.close()).code, 0);
    }
  },
);

standInTest("fake-pwsh: SVC_FAKE_PWSH_VERSION and SVC_FAKE_PWSH_LOG", async () => {
  const log = await Deno.makeTempFile();
  const worker = await StandIn.start({ SVC_FAKE_PWSH_VERSION: "7.2.0", SVC_FAKE_PWSH_LOG: log });
  try {
    const hello = await worker.frame();
    assert.equal(hello?.psVersion, "7.2.0");
    await worker.result("reset");
  } finally {
    await worker.close();
  }
  assert.equal(await Deno.readTextFile(log), "reset\n");
  await Deno.remove(log);
});

standInTest("fake-pwsh: [Environment]::Exit ends the process without an answer", async () => {
  const worker = await StandIn.start();
  try {
    await worker.frame();
    await worker.result("startup", { modules: ["SvcFixture"], scriptPath: null, script: null });
    await worker.post("invoke", {
      command: "Invoke-FixtureExit",
      parameters: { Code: 3 },
      credentials: [],
      depth: 4,
    });
    assert.equal(await worker.frame(), null);
  } finally {
    assert.equal((await worker.close()).code, 3);
  }
});

standInTest("fake-pwsh: a command line without -File exits 64 like pwsh", async () => {
  const { code, stderr } = await outputWithin(
    fakePwsh,
    {
      args: ["-NoLogo", "-NoProfile", "-NonInteractive"],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    },
    "fake-pwsh without -File",
    20_000,
  );
  assert.equal(code, 64);
  assert.match(new TextDecoder().decode(stderr), /-File/);
});
