/**
 * The real host's frame loop (lib/host/cs/SlotLoop.cs) spoken to frame by frame, as
 * docs/worker-protocol.md §2 has it: busy, stop, unknown ops, malformed frames and params, and the
 * reset's two paths; and a host built with an engine member's name changed, as a later PowerShell
 * that renamed it would look (lib/host/cs/EngineMembers.cs).
 */
import assert from "node:assert/strict";
import { writeHostFiles } from "../lib/host_files.ts";
import { defaultCacheDirectory } from "../lib/cache_directory.ts";
import { docBlock } from "./support/docs.ts";
import { TEST_PWSH as pwsh } from "./support/harness.ts";

type Frame = Record<string, unknown>;

/** A host process and the raw socket svc would hold. */
class RawHost {
  #buffer = "";
  #frames: Frame[] = [];
  #waiting: (() => void) | null = null;
  readonly #decoder = new TextDecoder();

  /** Slot 0's hello. */
  hello: Frame = {};

  private constructor(
    readonly dir: string,
    readonly child: Deno.ChildProcess,
    readonly conn: Deno.Conn,
  ) {
    void this.#read();
  }

  /**
   * Starts the host. `edit` changes its files first (in `dir`); the host then compiles its C# half
   * in memory, so that the changed build is never cached.
   */
  static async start(edit?: (dir: string) => Promise<void>): Promise<RawHost> {
    const dir = await Deno.makeTempDir({ prefix: "svc-host-protocol-" });
    await writeHostFiles(dir);
    if (edit) await edit(dir);
    const listener = Deno.listen({ transport: "unix", path: `${dir}/w.sock` });
    const args = ["-NoLogo", "-NoProfile", "-NonInteractive", "-File", `${dir}/host.ps1`];
    args.push("-Endpoint", `unix:${dir}/w.sock`);
    const cache = defaultCacheDirectory();
    if (cache && !edit) args.push("-AssemblyCache", cache);
    const child = new Deno.Command(pwsh, {
      args,
      env: { SVC_WORKER_TOKEN: "ab".repeat(32) },
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const conn = await listener.accept();
    listener.close();
    const host = new RawHost(dir, child, conn);
    host.hello = await host.frame();
    assert.equal(host.hello.type, "hello");
    return host;
  }

  async #read(): Promise<void> {
    const buffer = new Uint8Array(65536);
    while (true) {
      const count = await this.conn.read(buffer).catch(() => null);
      if (count === null) break;
      this.#buffer += this.#decoder.decode(buffer.subarray(0, count), { stream: true });
      let newline = this.#buffer.indexOf("\n");
      while (newline >= 0) {
        this.#frames.push(JSON.parse(this.#buffer.slice(0, newline)));
        this.#buffer = this.#buffer.slice(newline + 1);
        newline = this.#buffer.indexOf("\n");
      }
      this.#waiting?.();
    }
  }

  async send(frame: Frame | string): Promise<void> {
    const text = typeof frame === "string" ? frame : JSON.stringify(frame);
    await this.conn.write(new TextEncoder().encode(text + "\n"));
  }

  /** The next frame the host sends (30 s at most). */
  async frame(): Promise<Frame> {
    const deadline = Date.now() + 30_000;
    while (this.#frames.length === 0) {
      if (Date.now() > deadline) throw new Error("the host sent no frame within 30 s");
      await new Promise<void>((resolve) => {
        this.#waiting = resolve;
        setTimeout(resolve, 100);
      });
    }
    return this.#frames.shift()!;
  }

  async request(id: number, op: string, params: unknown = {}): Promise<Frame> {
    await this.send({ id, op, params });
    return await this.frame();
  }

  /** Runs a startup with no modules and no script as request `id`, which must succeed. */
  async startup(id: number): Promise<void> {
    const answer = await this.request(id, "startup", {
      modules: [],
      scriptPath: null,
      script: null,
    });
    assert.equal(answer.ok, true, JSON.stringify(answer));
  }

  async close(): Promise<number> {
    this.conn.close();
    const { code } = await this.child.status;
    await Deno.remove(this.dir, { recursive: true });
    return code;
  }
}

function errorKind(frame: Frame): string {
  return (frame.error as { kind: string }).kind;
}

Deno.test({
  name: "host frame loop: busy, stop, unknown ops, malformed frames, both reset paths",
  async fn() {
    const host = await RawHost.start();
    try {
      await host.startup(1);

      // A running invoke: another request is busy, a stop for another id is ignored, its own ends it.
      await host.send({
        id: 2,
        op: "invoke",
        params: { command: "Start-Sleep", parameters: { Seconds: 30 }, credentials: [], depth: 4 },
      });
      const busy = await host.request(3, "describe", { names: ["Get-Date"], help: false });
      assert.equal(busy.id, 3);
      assert.equal(errorKind(busy), "busy");
      await host.send({ op: "stop", params: { id: 999 } });
      const started = Date.now();
      await host.send({ op: "stop", params: { id: 2 } });
      const stopped = await host.frame();
      assert.equal(stopped.id, 2);
      assert.equal((stopped.result as { stopped: boolean }).stopped, true);
      assert.ok(Date.now() - started < 5_000);

      // Malformed frames: answered when they carry an id, dropped when they do not.
      const unknown = await host.request(4, "frobnicate");
      assert.equal(errorKind(unknown), "unknown-op");
      await host.send('{"id": 5, "op": "invoke", not json');
      const broken = await host.frame();
      assert.equal(broken.id, 5);
      assert.equal(errorKind(broken), "protocol");
      await host.send("{not json");
      await host.send({ id: 6 });
      const noOp = await host.frame();
      assert.equal(noOp.id, 6, "the frame without an id got no answer");
      assert.equal(errorKind(noOp), "protocol");
      const badParams = await host.request(7, "invoke", [1, 2]);
      assert.equal(errorKind(badParams), "protocol");
      const badDepth = await host.request(8, "invoke", {
        command: "Get-Date",
        parameters: {},
        credentials: [],
        depth: 200,
      });
      assert.equal(errorKind(badDepth), "internal");
      assert.match(String((badDepth.error as { message: string }).message), /Depth 200/);

      // Parameter names bind case-insensitively, as PowerShell's own do.
      const date = await host.request(9, "invoke", {
        command: "Get-Date",
        parameters: { year: 2001, MONTH: 2, Day: 3 },
        credentials: [],
        depth: 1,
      });
      const output = (date.result as { output: unknown[] }).output;
      assert.match(JSON.stringify(output[0]), /"2001-02-03T/);

      // Nothing changed: the fast path. A global variable: the full path, then fast again.
      const fast = await host.request(10, "reset");
      assert.equal((fast.result as { path: string }).path, "fast");
      const set = await host.request(11, "invoke", {
        command: "Set-Variable",
        parameters: { Name: "left", Value: 1, Scope: "Global" },
        credentials: [],
        depth: 1,
      });
      assert.equal(set.ok, true);
      const full = await host.request(12, "reset");
      assert.equal((full.result as { path: string }).path, "full");
      const again = await host.request(13, "reset");
      assert.equal((again.result as { path: string }).path, "fast");
    } finally {
      assert.equal(await host.close(), 0, "end-of-file on the socket ends the host with 0");
    }
  },
});

/** Changes every `"name"` literal of the host's C# half to another name, as a later engine would. */
function renamed(name: string): (dir: string) => Promise<void> {
  return async (dir) => {
    let found = 0;
    for await (const entry of Deno.readDir(`${dir}/host/cs`)) {
      const path = `${dir}/host/cs/${entry.name}`;
      const text = await Deno.readTextFile(path);
      const changed = text.replaceAll(`"${name}"`, `"${name}Renamed"`);
      if (changed !== text) found++;
      await Deno.writeTextFile(path, changed);
    }
    assert.ok(found > 0, `no C# file of the host names "${name}"`);
  };
}

Deno.test({
  name:
    "host without an engine member a reset reads: its hello names it, and a runspace a call leaves open still retires the process",
  async fn() {
    // No switch of svc's makes a member disappear: this build of the host looks for a name the
    // engine does not have, as on a PowerShell that renamed Runspace.RunspaceList.
    const host = await RawHost.start(renamed("RunspaceList"));
    try {
      await host.startup(1);
      const left = await host.request(2, "invoke", {
        command: "Invoke-Expression",
        parameters: {
          Command:
            "$global:left = [runspacefactory]::CreateRunspace(); $global:left.Open(); 'open'",
        },
        credentials: [],
        depth: 1,
      });
      assert.deepEqual((left.result as { output: unknown[] }).output, ["open"]);
      const reset = (await host.request(3, "reset")).result as { path: string; retire?: string };
      assert.equal(reset.path, "retire", JSON.stringify(reset));
      assert.match(reset.retire ?? "", /lacks the engine members Runspace\.RunspaceList/);
      assert.deepEqual(host.hello.missingMembers, ["Runspace.RunspaceListRenamed"]);
    } finally {
      await host.close();
    }
  },
});

Deno.test({
  name:
    "host with every engine member a reset reads: its hello names none, in the documented shape",
  async fn() {
    const host = await RawHost.start();
    try {
      assert.deepEqual(host.hello.missingMembers, []);
      // docs/worker-protocol.md §3 shows the hello: the real one has its fields, in that order.
      const documented = JSON.parse(docBlock("docs/worker-protocol.md", "output: hello", "json"));
      assert.deepEqual(Object.keys(host.hello), Object.keys(documented));
      assert.deepEqual(
        [host.hello.protocol, host.hello.slot, host.hello.edition],
        [documented.protocol, documented.slot, documented.edition],
      );
    } finally {
      assert.equal(await host.close(), 0);
    }
  },
});
