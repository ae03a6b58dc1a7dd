/**
 * The PowerShell suite, through an MCP client: real commands (built-in cmdlets, a module under
 * `$PSHOME/Modules`, native programs, functions of a startup script) served by svc on a real pwsh
 * over stdio, checked on what the client receives.
 */
import assert from "node:assert/strict";
import {
  type CallResult,
  isAlive,
  post,
  startHttpSvc,
  startSvc,
  type SvcConnection,
} from "./support/harness.ts";

const onWindows = Deno.build.os === "windows";
const posixOnly = "the native-program fixtures use sh";

// Functions a team would define in its startup script; each call of them runs real PowerShell and,
// where named Native, a real native program.
const STARTUP_SCRIPT = String.raw`
Import-Module Microsoft.PowerShell.Security
$Settings = @{ Mode = 'safe' }
$PSDefaultParameterValues['Get-DefaultProbe:Label'] = 'from startup'
function Get-FromStartup { "policy:$(Get-ExecutionPolicy)" }
# $PSDefaultParameterValues applies to cmdlets and advanced functions only.
function Get-DefaultProbe { [CmdletBinding()] param([string]$Label = 'none') $Label }
function Set-DefaultInPlace { $global:PSDefaultParameterValues['Get-DefaultProbe:Label'] = 'leaked' }
function Get-SettingsMode { $Settings.Mode }
function Set-SettingsMode { $Settings.Mode = 'unsafe' }
function Test-StrictProbe { $null -eq $neverAssignedAnywhere }
function Remove-Guarded {
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'High')]
    param([Parameter(Mandatory)][string]$Path)
    if ($PSCmdlet.ShouldProcess($Path)) { Remove-Item -LiteralPath $Path }
}
function Invoke-NativeEcho {
    param([Parameter(Mandatory)][string]$Text)
    sh -c 'printf "%s\n" "$1"; printf "err:%s\n" "$1" >&2' sh $Text
}
function Read-NativeStdin { sh -c 'read line; echo "got:[$line]"' }
function Send-NativeStdin { param([Parameter(Mandatory)][string]$Text) $Text | sh -c cat }
function Start-NativeSleep {
    param([Parameter(Mandatory)][string]$PidFile)
    sh -c 'echo $$ > "$1"; exec sleep 60' sh $PidFile
}
function Wait-DotNetSleep { [System.Threading.Thread]::Sleep(60000); 'woke' }
`;

const COMMANDS = [
  "Get-Process",
  "Get-ChildItem",
  "Get-Content",
  "Set-Content",
  "Write-Host",
  "Write-Information",
  "Write-Output",
  "Write-Warning",
  "Get-Date",
  "Set-StrictMode",
  "Set-Variable",
  "Read-Host",
  "Get-Credential",
  "Remove-Item",
  "Get-ExecutionPolicy",
  "Compress-Archive",
  "Expand-Archive",
  "Get-FromStartup",
  "Get-DefaultProbe",
  "Set-DefaultInPlace",
  "Get-SettingsMode",
  "Set-SettingsMode",
  "Test-StrictProbe",
  "Remove-Guarded",
  "Invoke-NativeEcho",
  "Read-NativeStdin",
  "Send-NativeStdin",
  "Start-NativeSleep",
  "Wait-DotNetSleep",
];

const MAX_RESULT_BYTES = 262_144;

function config(): Record<string, unknown> {
  return {
    ShellConfiguration: {
      Commands: COMMANDS,
      MaxResultBytes: MAX_RESULT_BYTES,
      Environment: { StartupScript: STARTUP_SCRIPT },
      CommandOverrides: {
        "Start-NativeSleep": { ToolCallTimeout: "00:00:02" },
        "Wait-DotNetSleep": { ToolCallTimeout: "00:00:02" },
      },
    },
    McpServer: { RunspacePool: { StopTimeout: "00:00:02" } },
  };
}

function textOf(result: CallResult): string {
  return (result.content as { text?: string }[]).map((c) => c.text ?? "").join("\n");
}

function structured(result: CallResult): Record<string, unknown> & { output: unknown[] } {
  return result.structuredContent as Record<string, unknown> & { output: unknown[] };
}

Deno.test({
  name: "real commands over MCP: modules, processes, files, native programs, streams",
  async fn(t) {
    await using svc = await startSvc({ config: config() });
    const names = new Set((await svc.listTools()).tools.map((tool) => tool.name));
    // Get-Process's InputObject sets are left out quietly: doctor lists them (issue 31).
    assert.doesNotMatch(svc.stderr(), /InputObject/);
    const tool = (name: string) => {
      assert.ok(names.has(name), `tool ${name} is listed (have: ${[...names].sort().join(", ")})`);
      return name;
    };
    const call = (svcConnection: SvcConnection, name: string, args: Record<string, unknown> = {}) =>
      svcConnection.callTool(tool(name), args);
    const work = await Deno.makeTempDir({ prefix: "svc-pwsh-tools-" });

    await t.step("a cmdlet of a module under $PSHOME/Modules autoloads and answers", async () => {
      const result = await call(svc, "get_execution_policy", { List: true });
      assert.ok(!result.isError, textOf(result));
      const scopes = structured(result).output.map((row) => (row as { Scope: string }).Scope);
      for (const scope of ["Process", "CurrentUser", "LocalMachine"]) {
        assert.ok(scopes.includes(scope), `scope ${scope} in ${scopes.join(", ")}`);
      }
    });

    // Microsoft.PowerShell.Archive ships with every official PowerShell.
    await t.step({
      name: "Compress-Archive and Expand-Archive round-trip a file",
      fn: async () => {
        await Deno.writeTextFile(`${work}/in.txt`, "zipped ü");
        const zip = await call(svc, "compress_archive_literal_path", {
          LiteralPath: [`${work}/in.txt`],
          DestinationPath: `${work}/out.zip`,
        });
        assert.ok(!zip.isError, textOf(zip));
        const unzip = await call(svc, "expand_archive_literal_path", {
          LiteralPath: `${work}/out.zip`,
          DestinationPath: `${work}/expanded`,
        });
        assert.ok(!unzip.isError, textOf(unzip));
        assert.equal(await Deno.readTextFile(`${work}/expanded/in.txt`), "zipped ü");
      },
    });

    await t.step(
      "Get-Process returns the process as an object, within MaxResultBytes",
      async () => {
        const result = await call(svc, "get_process_id", { Id: [Deno.pid] });
        assert.ok(!result.isError, textOf(result));
        // Its format view's columns: ProcessName, not the display set's Name.
        const [process] = structured(result).output as { Id: number; ProcessName: string }[];
        assert.equal(process?.Id, Deno.pid);
        assert.match(process?.ProcessName ?? "", /^deno/);
        const bytes = new TextEncoder().encode(textOf(result)).length;
        assert.ok(bytes <= MAX_RESULT_BYTES + 1_024, `${bytes} bytes of text`);
      },
    );

    await t.step(
      "Get-ChildItem: names come back, and what exceeds MaxResultBytes is cut to whole items with counts",
      async () => {
        const dir = `${work}/listing`;
        await Deno.mkdir(dir);
        await Deno.writeTextFile(`${dir}/a.txt`, "12345");
        await Deno.writeTextFile(`${dir}/Grüße-日本.txt`, "x");
        const names = await call(svc, "get_child_item_literal_items", {
          LiteralPath: [dir],
          Name: true,
        });
        assert.ok(!names.isError, textOf(names));
        assert.deepEqual(structured(names).output.sort(), ["Grüße-日本.txt", "a.txt"]);
        // Every property of 400 files is more than MaxResultBytes (a few KB each, their folder and
        // drive given by name): the client gets a bounded text that says how much was left out.
        for (let i = 0; i < 398; i++) await Deno.writeTextFile(`${dir}/f${i}.txt`, "x");
        const files = await call(svc, "get_child_item_literal_items", {
          LiteralPath: [dir],
          _AllProperties: true,
        });
        const text = textOf(files);
        const bytes = new TextEncoder().encode(text).length;
        assert.ok(bytes <= MAX_RESULT_BYTES + 1_024, `${bytes} bytes of text`);
        const truncated = structured(files).truncated as {
          items: number;
          keptItems: number;
          stopped?: true;
        };
        // Get-ChildItem only reads: once the output is full it is stopped (the items it wrote
        // meanwhile are counted), long before the 400th.
        assert.equal(truncated.stopped, true, JSON.stringify(truncated));
        assert.ok(
          truncated.keptItems >= 1 && truncated.keptItems < truncated.items &&
            truncated.items < 400,
          JSON.stringify(truncated),
        );
        // structuredContent carries what was kept; the text block no more than 64 KiB of it.
        assert.equal((structured(files).output as unknown[]).length, truncated.keptItems);
        const inText = JSON.parse(text.split("\n[svc:")[0]!).length;
        assert.ok(inText >= 1 && inText <= truncated.keptItems, `${inText} items in the text`);
        // The worker stops encoding past what svc keeps, so the whole size is a lower bound.
        const notice = text.slice(text.indexOf("\n[svc: output truncated"));
        assert.match(
          notice.slice(0, 400),
          /output truncated: at least \d+ bytes exceed ShellConfiguration:MaxResultBytes/,
        );
      },
    );

    await t.step(
      "FileSystem provider parameters: offered and described, bound, and refused on another provider's path",
      async () => {
        const { tools } = await svc.listTools();
        const argumentsOf = (name: string) =>
          tools.find((t) => t.name === tool(name))!.inputSchema.properties as Record<
            string,
            { type: string; description?: string }
          >;
        const content = argumentsOf("get_content_path");
        const items = argumentsOf("get_child_item_items");
        const write = argumentsOf("set_content_path");
        const offered = [
          [content, ["Raw", "Encoding", "Delimiter", "Wait", "AsByteStream"]],
          [argumentsOf("get_content_literal_path"), ["Raw", "Encoding"]],
          [items, ["File", "Directory", "Hidden", "ReadOnly", "System", "FollowSymlink"]],
          [write, ["Encoding", "NoNewline", "AsByteStream"]],
        ] as const;
        for (const [properties, names] of offered) {
          for (const name of names) {
            assert.ok(properties[name], `${name} in ${Object.keys(properties).join(", ")}`);
            assert.match(properties[name].description ?? "", /FileSystem provider parameter/);
          }
        }
        assert.equal(content.Raw!.type, "boolean");
        assert.match(content.Encoding!.description ?? "", /Suggested values: .*utf8NoBOM/);
        assert.doesNotMatch(
          content.Path!.description ?? "",
          /provider/,
          "Path is the cmdlet's own",
        );

        const dir = `${work}/provider`;
        await Deno.mkdir(`${dir}/sub`, { recursive: true });
        await Deno.writeTextFile(`${dir}/lines.txt`, "one\ntwo\n");
        await Deno.writeTextFile(`${dir}/sub/deep.txt`, "x");
        const ok = async (name: string, args: Record<string, unknown>) => {
          const result = await call(svc, name, args);
          assert.ok(!result.isError, textOf(result));
          return structured(result).output;
        };
        // Get-Content -Raw: one string instead of one per line.
        assert.deepEqual(await ok("get_content_path", { Path: [`${dir}/lines.txt`] }), [
          "one",
          "two",
        ]);
        assert.deepEqual(
          await ok("get_content_path", { Path: [`${dir}/lines.txt`], Raw: true }),
          ["one\ntwo\n"],
        );
        // Get-ChildItem -File -Recurse, and -Directory.
        const files = await ok("get_child_item_items", {
          Path: [dir],
          File: true,
          Recurse: true,
          Name: true,
        });
        assert.deepEqual(files.sort(), ["lines.txt", "sub/deep.txt"]);
        assert.deepEqual(
          await ok("get_child_item_items", { Path: [dir], Directory: true, Name: true }),
          [
            "sub",
          ],
        );
        // Set-Content -Encoding writes UTF-16 LE with its byte-order mark, Get-Content reads it back.
        await ok("set_content_path", {
          Path: [`${dir}/wide.txt`],
          Value: ["hé"],
          Encoding: "unicode",
          NoNewline: true,
        });
        assert.deepEqual(
          [...await Deno.readFile(`${dir}/wide.txt`)],
          [0xff, 0xfe, 0x68, 0x00, 0xe9, 0x00],
        );
        assert.deepEqual(
          await ok("get_content_path", { Path: [`${dir}/wide.txt`], Encoding: "unicode" }),
          ["hé"],
        );

        // A path of another provider is still a path, but never with the FileSystem's arguments:
        // PowerShell would ask that provider for parameters of the same names, which svc never offered.
        for (
          const [name, args, provider] of [
            ["get_content_path", { Path: ["Env:PATH"], Raw: true }, "Environment"],
            [
              "get_content_literal_path",
              { LiteralPath: ["variable:PSHOME"], Encoding: "utf8" },
              "Variable",
            ],
            ["get_child_item_items", { Path: [dir, "Function:"], File: true }, "Function"],
          ] as const
        ) {
          const refused = await call(svc, name, args);
          assert.ok(refused.isError, `${name} ${JSON.stringify(args)}: ${textOf(refused)}`);
          assert.match(
            textOf(refused),
            new RegExp(
              `The FileSystem provider's argument '\\w+' cannot be used with path '[^']+', which is in the ${provider} provider`,
            ),
          );
        }
        assert.ok(!(await call(svc, "get_content_path", { Path: ["Env:PATH"] })).isError);
        // A path whose provider is unknown is refused in a sentence of bounded size: its drive
        // name (here 100,000 characters) is not repeated whole into the result and svc's log.
        const logged = svc.stderr().length;
        const unknown = await call(svc, "get_content_path", {
          Path: [`${"D".repeat(100_000)}:x`],
          Raw: true,
        });
        assert.ok(unknown.isError);
        assert.match(textOf(unknown), /cannot be used with path 'D+…': its provider is unknown/);
        assert.ok(textOf(unknown).length < 1_000, `${textOf(unknown).length} characters`);
        assert.ok(svc.stderr().length - logged < 2_000, "the log repeats the drive name");
      },
    );

    await t.step("non-ASCII arguments and output round-trip unchanged", async () => {
      const text = "Grüße 日本語 🚀 עברית ñ";
      const result = await call(svc, "write_output", { InputObject: [text] });
      assert.deepEqual(structured(result).output, [text]);
    });

    await t.step("Write-Host and Write-Information come back as information records", async () => {
      const host = await call(svc, "write_host", { Object: "host ü" });
      assert.ok(!host.isError, textOf(host));
      assert.deepEqual(structured(host).information, [
        { message: "host ü", tags: ["PSHOST"], source: "Write-Host" },
      ]);
      const info = await call(svc, "write_information", { MessageData: "info", Tags: ["t1"] });
      assert.deepEqual(structured(info).information, [
        { message: "info", tags: ["t1"], source: "Write-Information" },
      ]);
      assert.match(textOf(info), /INFO: info/);
    });

    await t.step({
      name: `a native program's stdout is output and its stderr is reported, not an error${
        onWindows ? ` [skipped: ${posixOnly}]` : ""
      }`,
      ignore: onWindows,
      fn: async () => {
        const text = "Grüße 日本 🚀";
        const result = await call(svc, "invoke_native_echo", { Text: text });
        assert.ok(!result.isError, textOf(result));
        assert.deepEqual(structured(result).output, [text]);
        assert.deepEqual(structured(result).stderr, [`err:${text}`]);
        assert.match(textOf(result), new RegExp(`STDERR: err:${text}`));
      },
    });

    await t.step({
      name: `a native program reading stdin gets end-of-file; piped input reaches it${
        onWindows ? ` [skipped: ${posixOnly}]` : ""
      }`,
      ignore: onWindows,
      fn: async () => {
        const started = Date.now();
        const read = await call(svc, "read_native_stdin");
        assert.deepEqual(structured(read).output, ["got:[]"]);
        assert.ok(Date.now() - started < 10_000, "no wait for input");
        const piped = await call(svc, "send_native_stdin", { Text: "piped ü" });
        assert.deepEqual(structured(piped).output, ["piped ü"]);
      },
    });

    await t.step(
      "Read-Host, Get-Credential and a confirmation stop at once where nobody can be asked, saying so",
      async () => {
        const started = Date.now();
        const nobody =
          "this client cannot ask its user, so the command was stopped; only an operator can let callers answer for the user (ShellConfiguration:PromptsAnsweredBy)";
        const read = await call(svc, "read_host_as_string", { Prompt: "Favourite colour" });
        assert.equal(read.isError, true);
        // It quotes the prompt, says why once, and gives no advice on going without the user.
        assert.equal(
          textOf(read).split("\n")[0],
          `The command asked its user: Read-Host: Favourite colour; ${nobody}`,
        );
        assert.equal(textOf(read).match(/cannot ask its user/g)?.length, 1, textOf(read));
        const credential = await call(svc, "get_credential_message_set", { Message: "sign in" });
        assert.equal(credential.isError, true);
        assert.match(
          textOf(credential),
          /^Get-Credential asked for a credential, which svc never asks a user for \(MCP forbids asking for a secret through a form\), so the command was stopped/,
        );
        const victim = `${work}/keep.txt`;
        await Deno.writeTextFile(victim, "keep");
        const guarded = await call(svc, "remove_guarded", { Path: victim });
        assert.equal(guarded.isError, true, textOf(guarded));
        const confirmed = await call(svc, "remove_item_literal_path", {
          LiteralPath: [victim],
          Confirm: true,
        });
        assert.equal(confirmed.isError, true, textOf(confirmed));
        assert.equal(await Deno.readTextFile(victim), "keep", "nothing was removed");
        // A folder with children asks whether to remove them too (ShouldContinue).
        const folder = await call(svc, "remove_item_literal_path", { LiteralPath: [work] });
        assert.equal(folder.isError, true);
        assert.match(
          textOf(folder),
          new RegExp(
            `^The command asked its user: Remove-Item: Confirm: The item at .* has children and the Recurse parameter was not specified\\..*; ${
              nobody.replace(/[()]/g, "\\$&")
            }`,
            "s",
          ),
        );
        assert.doesNotMatch(textOf(folder), /Confirm:\$false|-Recurse\b|-Force/);
        assert.equal(await Deno.readTextFile(victim), "keep", "the folder is still there");
        assert.ok(Date.now() - started < 15_000, `${Date.now() - started} ms`);
      },
    );

    await t.step("a startup script's module and function serve every call", async () => {
      for (let i = 0; i < 3; i++) {
        const result = await call(svc, "get_from_startup");
        assert.ok(!result.isError, textOf(result));
        assert.match(String(structured(result).output[0]), /^policy:\w+$/);
      }
    });

    await t.step({
      name: `a time limit stops a running native program and ends it${
        onWindows ? ` [skipped: ${posixOnly}]` : ""
      }`,
      ignore: onWindows,
      fn: async () => {
        const pidFile = `${work}/sleep.pid`;
        const started = Date.now();
        const result = await call(svc, "start_native_sleep", { PidFile: pidFile });
        assert.equal(result.isError, true);
        // The limit and the setting that set it, to raise (issue 31).
        assert.match(
          textOf(result),
          /^Command 'Start-NativeSleep' timed out after 2 s and was stopped: that is the limit ShellConfiguration:CommandOverrides:Start-NativeSleep:ToolCallTimeout sets, so raise it there if the command needs longer/,
        );
        assert.ok(Date.now() - started < 15_000, `${Date.now() - started} ms`);
        const sleeper = Number((await Deno.readTextFile(pidFile)).trim());
        assert.ok(!isAlive(sleeper), `sleep ${sleeper} is gone`);
        const after = await call(svc, "write_output", { InputObject: ["next"] });
        assert.deepEqual(structured(after).output, ["next"]);
      },
    });

    await t.step("a .NET method that ignores Stop is ended by the time limit", async () => {
      const started = Date.now();
      const result = await call(svc, "wait_dot_net_sleep");
      assert.equal(result.isError, true);
      assert.ok(Date.now() - started < 20_000, `${Date.now() - started} ms`);
      const after = await call(svc, "get_from_startup");
      assert.ok(!after.isError, textOf(after));
    });

    await Deno.remove(work, { recursive: true });
  },
});

Deno.test({
  name:
    "over HTTP, one worker: what a call leaves in strict mode, preferences, defaults and startup objects is undone",
  async fn(t) {
    const settings = config();
    // One worker, so every call below lands on the worker the call before it changed.
    settings.McpServer = {
      RunspacePool: { MinPoolSize: 1, MaxPoolSize: 1, EagerWarmCount: 1, StopTimeout: "00:00:02" },
    };
    await using svc = await startHttpSvc({ config: settings });
    const call = async (tool: string, args: Record<string, unknown> = {}) => {
      const { status, body } = await post(`${svc.url}/call`, { tool, arguments: args });
      assert.equal(status, 200, JSON.stringify(body));
      return body as CallResult;
    };

    await t.step("Set-StrictMode in one call does not reach the next", async () => {
      const strict = await call("set_strict_mode_version", { Version: "Latest" });
      assert.ok(!strict.isError, textOf(strict));
      const probe = await call("test_strict_probe");
      assert.ok(!probe.isError, `strict mode leaked: ${textOf(probe)}`);
      assert.deepEqual(structured(probe).output, [true]);
    });

    await t.step("a preference variable set by one call is back to its value", async () => {
      await call("set_variable", { Name: "WarningPreference", Value: "SilentlyContinue" });
      const warning = await call("write_warning", { Message: "still heard" });
      assert.deepEqual(structured(warning).warnings, ["still heard"]);
    });

    await t.step(
      "$PSDefaultParameterValues changed in place is back to the startup's",
      async () => {
        await call("set_default_in_place");
        const label = await call("get_default_probe");
        assert.deepEqual(structured(label).output, ["from startup"]);
      },
    );

    await t.step("a startup hashtable changed in place by a call is restored", async () => {
      await call("set_settings_mode");
      const mode = await call("get_settings_mode");
      assert.deepEqual(structured(mode).output, ["safe"]);
    });
  },
});
