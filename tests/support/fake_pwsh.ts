// The stand-in worker: a test fixture that accepts the command line svc gives `pwsh` and speaks
// the svc worker protocol (docs/worker-protocol.md) over the endpoint it is given, serving a
// fixed set of commands (tests/support/README.md). It implements the protocol on its own and
// imports nothing from lib/, so a framing or codec bug in lib/ fails a test instead of being
// mirrored here. stdout and stderr are never used for protocol.
//
// Run through tests/support/fake-pwsh:
//   fake-pwsh -NoLogo -NoProfile -NonInteractive [-ExecutionPolicy Bypass] -File <dir>/host.ps1
//             -Endpoint unix:<socket path>|tcp:127.0.0.1:<port> [-AssemblyCache <dir>]
//             [-RemoveScriptDirectory]
// with the token in SVC_WORKER_TOKEN.

import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { bindArguments, type CallArguments } from "./fake_pwsh_binding.ts";
import { builtinCommands, resolveSessionPath } from "./fake_pwsh_builtins.ts";
import {
  bindableParameters,
  type CmdletData,
  type CommandMeta,
  describeCommand,
  loadCmdletData,
  switchType,
} from "./fake_pwsh_metadata.ts";
import {
  commandNotFound,
  type ErrorInfo,
  errorRecord,
  fromJson,
  hasWildcard,
  PipelineStopped,
  PSCredential,
  PSCustomObject,
  PSHashtable,
  type PSValue,
  TerminatingError,
  thrownString,
  toJsonValue,
  wildcardToRegExp,
} from "./fake_pwsh_model.ts";
import { CommandTable, InvokeContext, type ServedCommand, Session } from "./fake_pwsh_runtime.ts";
import {
  parseStartupScript,
  resolveStartupArguments,
  UnsupportedStartupLine,
} from "./fake_pwsh_startup.ts";
import {
  fixtureCommands,
  fixtureModuleName,
  fixtureModulePath,
  fixtureModuleVersion,
} from "./fixture_module.ts";

const encoder = new TextEncoder();

function diagnostic(message: string) {
  Deno.stderr.writeSync(encoder.encode(`fake-pwsh: ${message}\n`));
}

// ---------------------------------------------------------------------------------------------
// Command line (POWERSHELL-NOTES §1: bad command line → exit 64, like pwsh)

type Endpoint = { transport: "unix"; path: string } | {
  transport: "tcp";
  hostname: string;
  port: number;
};

interface CommandLine {
  file: string;
  endpoint: Endpoint;
  /** -RemoveScriptDirectory: remove the script's directory on the way out, as host.ps1 does. */
  removeScriptDirectory: boolean;
}

function usageError(message: string): never {
  diagnostic(message);
  Deno.exit(64);
}

function parseCommandLine(argv: string[]): CommandLine {
  const seen = new Set<string>();
  let file: string | undefined;
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i] as string;
    const lower = arg.toLowerCase();
    if (lower === "-nologo" || lower === "-noprofile" || lower === "-noninteractive") {
      seen.add(lower);
    } else if (lower === "-executionpolicy") {
      if (i + 1 >= argv.length) usageError("Missing the argument for -ExecutionPolicy.");
      i++;
    } else if (lower === "-file") {
      file = argv[i + 1];
      if (file === undefined || file === "") {
        usageError(
          "Cannot process the command because -File requires a file path. Supply a path for the " +
            "-File parameter and then try the command again.",
        );
      }
      i += 2;
      break; // -File is last: everything after it belongs to the script.
    } else {
      usageError(
        `The argument '${arg}' is not recognized as the name of a script file. Check the ` +
          "spelling of the name, or if a path was included, verify that the path is correct and " +
          "try again.",
      );
    }
  }
  if (file === undefined) {
    usageError(
      "-File <path> is missing: the stand-in worker only runs svc's worker host script " +
        "(expected -NoLogo -NoProfile -NonInteractive [-ExecutionPolicy Bypass] -File <path> " +
        "-Endpoint <endpoint>).",
    );
  }
  for (const required of ["-nologo", "-noprofile", "-noninteractive"]) {
    if (!seen.has(required)) {
      usageError(
        `svc's worker command line always has -NoLogo -NoProfile -NonInteractive before -File; ` +
          `${required} is missing.`,
      );
    }
  }
  if (!existsSync(file)) {
    usageError(
      `The argument '${file}' is not recognized as the name of a script file. Check the spelling ` +
        "of the name, or if a path was included, verify that the path is correct and try again.",
    );
  }
  // The script's own arguments: -Endpoint <endpoint> [-AssemblyCache <dir>]
  // [-RemoveScriptDirectory] (a binding failure of host.ps1's param block would end pwsh with exit
  // code 1). The stand-in has no compiled half, so the cache directory is accepted and not used.
  const isSwitch = (arg: string) => arg.toLowerCase() === "-removescriptdirectory";
  const scriptArgs = argv.slice(i).filter((arg) => !isSwitch(arg));
  const named = new Map<string, string>();
  for (let k = 0; k + 1 < scriptArgs.length; k += 2) {
    named.set((scriptArgs[k] as string).toLowerCase(), scriptArgs[k + 1] as string);
  }
  const known = [...named.keys()].every((name) =>
    name === "-endpoint" || name === "-assemblycache"
  );
  if (scriptArgs.length % 2 !== 0 || !named.has("-endpoint") || !known) {
    diagnostic(
      `host script arguments must be -Endpoint <endpoint> [-AssemblyCache <dir>] [-RemoveScriptDirectory], got: ${
        argv.slice(i).join(" ")
      }`,
    );
    Deno.exit(1);
  }
  return {
    file,
    endpoint: parseEndpoint(named.get("-endpoint") as string),
    removeScriptDirectory: argv.slice(i).some(isSwitch),
  };
}

function parseEndpoint(text: string): Endpoint {
  if (text.startsWith("unix:") && text.length > 5) {
    return { transport: "unix", path: text.slice(5) };
  }
  const tcp = /^tcp:(.+):(\d+)$/.exec(text);
  if (tcp) {
    const port = Number(tcp[2]);
    if (port > 0 && port < 65536) {
      return { transport: "tcp", hostname: tcp[1] as string, port };
    }
  }
  diagnostic(`invalid endpoint '${text}' (expected unix:<path> or tcp:127.0.0.1:<port>)`);
  Deno.exit(1);
}

// ---------------------------------------------------------------------------------------------
// Environment knobs (documented in tests/support/README.md)

interface Knobs {
  psVersion: string;
  logFile: string | undefined;
  noise: boolean;
  hello: "ok" | "wrong-token" | "not-hello" | "silent" | "garbage";
  delayMs: number;
  exitCode: number | undefined;
  resetDelayMs: number;
  resetFail: boolean;
}

function readKnobs(): Knobs {
  const env = (name: string) => {
    const value = Deno.env.get(name);
    return value === undefined || value === "" ? undefined : value;
  };
  const hello = env("SVC_FAKE_PWSH_HELLO") ?? "ok";
  if (!["ok", "wrong-token", "not-hello", "silent", "garbage"].includes(hello)) {
    usageError(`SVC_FAKE_PWSH_HELLO must be ok, wrong-token, not-hello, silent or garbage`);
  }
  const exit = env("SVC_FAKE_PWSH_EXIT");
  return {
    psVersion: env("SVC_FAKE_PWSH_VERSION") ?? "7.4.99-standin",
    logFile: env("SVC_FAKE_PWSH_LOG"),
    noise: env("SVC_FAKE_PWSH_NOISE") === "1",
    hello: hello as Knobs["hello"],
    delayMs: Number(env("SVC_FAKE_PWSH_DELAY_MS") ?? 0) || 0,
    exitCode: exit === undefined ? undefined : Number(exit),
    resetDelayMs: Number(env("SVC_FAKE_PWSH_RESET_DELAY_MS") ?? 0) || 0,
    resetFail: env("SVC_FAKE_PWSH_RESET_FAIL") === "1",
  };
}

function osDescription(): string {
  const names: Record<string, string> = {
    linux: "Linux",
    darwin: "Darwin",
    windows: "Microsoft Windows",
  };
  return `${names[Deno.build.os] ?? Deno.build.os} ${Deno.osRelease()}`;
}

// ---------------------------------------------------------------------------------------------
// Frames (protocol §2): one JSON object per line, UTF-8, LF.

class FrameChannel {
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly conn: Deno.Conn, private readonly onGone: () => void) {}

  /** Queues one frame; frames are written whole and in order. */
  send(frame: unknown): Promise<void> {
    return this.sendRaw(encoder.encode(JSON.stringify(frame) + "\n"));
  }

  sendRaw(bytes: Uint8Array): Promise<void> {
    this.tail = this.tail.then(async () => {
      let offset = 0;
      while (offset < bytes.length) offset += await this.conn.write(bytes.subarray(offset));
    }).catch(() => {
      // The peer is gone: a slot never outlives its connection (protocol §5).
      this.onGone();
    });
    return this.tail;
  }

  /** Yields each line without its LF; ends at end-of-file (or a broken connection). */
  async *lines(): AsyncGenerator<Uint8Array> {
    const chunk = new Uint8Array(64 * 1024);
    let pending: Uint8Array[] = [];
    let pendingLength = 0;
    while (true) {
      let n: number | null;
      try {
        n = await this.conn.read(chunk);
      } catch {
        n = null;
      }
      if (n === null) return;
      let start = 0;
      while (start < n) {
        const newline = chunk.subarray(start, n).indexOf(10);
        if (newline === -1) {
          pending.push(chunk.slice(start, n));
          pendingLength += n - start;
          break;
        }
        const piece = chunk.subarray(start, start + newline);
        const line = new Uint8Array(pendingLength + piece.length);
        let at = 0;
        for (const part of pending) {
          line.set(part, at);
          at += part.length;
        }
        line.set(piece, at);
        pending = [];
        pendingLength = 0;
        start += newline + 1;
        yield line;
      }
    }
  }

  close() {
    try {
      this.conn.close();
    } catch {
      // already closed
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Operations (protocol §4)

class OpError extends Error {
  constructor(readonly kind: string, message: string, readonly record: ErrorInfo | null = null) {
    super(message);
  }
}

type Params = Record<string, unknown>;

interface Running {
  id: number;
  op: string;
  abort: AbortController;
}

function elapsed(start: number): number {
  return Math.round(performance.now() - start);
}

function stringArray(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

class Worker {
  private running: Running | null = null;

  constructor(
    private readonly channel: FrameChannel,
    private readonly table: CommandTable,
    private readonly session: Session,
    private readonly logFile: string | undefined,
    private readonly knobs: Pick<Knobs, "resetDelayMs" | "resetFail">,
    /** Starts another slot of this process (protocol §4.8). */
    private readonly openSlot: (slot: number) => void,
  ) {}

  onFrame(bytes: Uint8Array) {
    let frame: unknown;
    try {
      frame = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch {
      this.log("<invalid>");
      this.fail(null, "protocol", "The frame is not valid UTF-8 JSON.");
      return;
    }
    if (typeof frame !== "object" || frame === null || Array.isArray(frame)) {
      this.log("<invalid>");
      this.fail(null, "protocol", "The frame is not a JSON object.");
      return;
    }
    const { id, op, params } = frame as { id?: unknown; op?: unknown; params?: unknown };
    this.log(typeof op === "string" ? op : "<invalid>");
    const paramsObject = typeof params === "object" && params !== null && !Array.isArray(params)
      ? params as Params
      : {};
    if (op === "stop") {
      this.stop(paramsObject.id);
      return;
    }
    if (op === "open") {
      const slot = paramsObject.slot;
      if (typeof slot === "number" && Number.isInteger(slot) && slot > 0) this.openSlot(slot);
      else diagnostic("dropped an open frame without a positive integer slot");
      return;
    }
    if (typeof id !== "number" || !Number.isInteger(id)) {
      this.fail(null, "protocol", "The frame has no integer id.");
      return;
    }
    if (typeof op !== "string") {
      this.fail(id, "protocol", "The frame has no op.");
      return;
    }
    if (this.running) {
      this.fail(id, "busy", `Request ${this.running.id} (${this.running.op}) is still running.`);
      return;
    }
    const abort = new AbortController();
    this.running = { id, op, abort };
    this.dispatch(op, paramsObject, abort.signal).then(
      (result) => this.finish(id, { id, ok: true, result }),
      (e: unknown) => {
        const error = e instanceof OpError
          ? { kind: e.kind, message: e.message, record: e.record }
          : { kind: "internal", message: e instanceof Error ? e.message : String(e), record: null };
        return this.finish(id, { id, ok: false, error });
      },
    );
  }

  private log(op: string) {
    if (this.logFile) appendFileSync(this.logFile, `${op}\n`);
  }

  private fail(id: number | null, kind: string, message: string) {
    this.channel.send({ id, ok: false, error: { kind, message, record: null } });
  }

  /** The response is svc's signal that the worker is free: mark it free before sending. */
  private async finish(id: number, response: unknown) {
    if (this.running?.id === id) this.running = null;
    await this.channel.send(response);
  }

  /** A stop for an invoke that is not running is ignored (protocol §4.7). */
  private stop(id: unknown) {
    if (this.running && this.running.id === id && this.running.op === "invoke") {
      this.running.abort.abort();
    }
  }

  private dispatch(op: string, params: Params, signal: AbortSignal): Promise<unknown> {
    switch (op) {
      case "startup":
        return this.startup(params);
      case "commands":
        return Promise.resolve(this.commands(params));
      case "describe":
        return Promise.resolve(this.describe(params));
      case "invoke":
        return this.invoke(params, signal);
      case "reset":
        return this.reset();
      case "exit":
        return this.exit();
      default:
        return Promise.reject(new OpError("unknown-op", `Unknown operation '${op}'.`));
    }
  }

  private async reset(): Promise<{ durationMs: number }> {
    const start = performance.now();
    if (this.knobs.resetDelayMs > 0) {
      await new Promise((done) => setTimeout(done, this.knobs.resetDelayMs));
    }
    if (this.knobs.resetFail) {
      throw new OpError(
        "reset",
        "The session state could not be restored (SVC_FAKE_PWSH_RESET_FAIL).",
      );
    }
    this.session.reset();
    return { durationMs: elapsed(start) };
  }

  private async exit(): Promise<never> {
    const id = this.running?.id ?? null;
    await this.channel.send({ id, ok: true, result: {} });
    this.channel.close();
    return await new Promise<never>(() => {});
  }

  // -- startup (§4.1) ---------------------------------------------------------------------------

  private async startup(params: Params) {
    const start = performance.now();
    const modules = stringArray(params.modules).map((name) => this.importModule(name));
    if (typeof params.scriptPath === "string" && params.scriptPath !== "") {
      const path = resolveSessionPath(this.session, params.scriptPath);
      let text: string;
      try {
        text = readFileSync(path, "utf8");
      } catch {
        const error = commandNotFound(params.scriptPath);
        throw new OpError("startup", error.info.message, error.info);
      }
      await this.runStartupScript(text);
    }
    if (typeof params.script === "string" && params.script !== "") {
      await this.runStartupScript(params.script);
    }
    this.session.snapshot();
    return { modules, durationMs: elapsed(start) };
  }

  private importModule(name: string) {
    const path = fixtureModulePath(name, this.session.location);
    const isPath = /[\\/]/.test(name);
    if (path !== null && (!isPath || existsSync(resolveSessionPath(this.session, name)))) {
      this.session.fixtureLoaded = true;
      return { name, found: true, version: fixtureModuleVersion, path, error: null };
    }
    return {
      name,
      found: false,
      version: null,
      path: null,
      error: `The specified module '${name}' was not loaded because no valid module file was ` +
        "found in any module directory.",
    };
  }

  private async runStartupScript(text: string) {
    let statements;
    try {
      statements = parseStartupScript(text);
    } catch (e) {
      if (e instanceof UnsupportedStartupLine) throw new OpError("startup", e.message);
      throw e;
    }
    for (const statement of statements) {
      try {
        if (statement.kind === "throw") {
          const thrown = thrownString(statement.message);
          // A bare `throw` is RuntimeException "ScriptHalted" without a target object.
          if (statement.bare) {
            throw new TerminatingError({ ...thrown.info, targetName: null, targetType: null });
          }
          throw thrown;
        }
        const command = this.table.find(this.session, statement.command);
        if (!command) throw commandNotFound(statement.command);
        const args = resolveStartupArguments(
          statement.args,
          (name) => startupParamIsSwitch(command, name),
          (name) => {
            throw missingArgument(command, name);
          },
        );
        // $ErrorActionPreference = 'Stop' for the startup run: any error ends it.
        const ctx = new InvokeContext(this.session, new AbortController().signal, {
          errorAction: "Stop",
        });
        await runCommand(command, ctx, args);
      } catch (e) {
        if (e instanceof TerminatingError) {
          throw new OpError("startup", e.info.message, e.info);
        }
        throw e;
      }
    }
  }

  // -- commands (§4.2) --------------------------------------------------------------------------

  private commands(params: Params) {
    const available = this.table.available(this.session)
      .slice()
      .sort((a, b) => a.def.name.localeCompare(b.def.name, "en", { sensitivity: "base" }));
    const entry = (c: ServedCommand, source: string, via: string) => ({
      name: c.def.name,
      module: c.def.module,
      commandType: c.def.commandType,
      source,
      via,
    });
    const commands: unknown[] = [];
    const missing: string[] = [];
    for (const name of stringArray(params.names)) {
      const hits = hasWildcard(name)
        ? available.filter((c) => wildcardToRegExp(name).test(c.def.name))
        : [this.table.find(this.session, name)].filter((c): c is ServedCommand => c !== undefined);
      if (hits.length === 0) missing.push(name);
      for (const c of hits) commands.push(entry(c, "name", name));
    }
    for (const module of stringArray(params.modules)) {
      // svc passes the strings it gave `startup`, so a path to the fixture names SvcFixture.
      const isFixture = fixtureModulePath(module, this.session.location) !== null;
      const pattern = wildcardToRegExp(isFixture ? fixtureModuleName : module);
      for (const c of available.filter((c) => pattern.test(c.def.module))) {
        commands.push(entry(c, "module", module));
      }
    }
    for (const patternText of stringArray(params.patterns)) {
      const pattern = wildcardToRegExp(patternText);
      for (const c of available.filter((c) => pattern.test(c.def.name))) {
        commands.push(entry(c, "pattern", patternText));
      }
    }
    return { commands, missing };
  }

  // -- describe (§4.3) --------------------------------------------------------------------------

  private describe(params: Params) {
    const withHelp = params.help !== false;
    const commands: CommandMeta[] = [];
    const missing: string[] = [];
    for (const name of stringArray(params.names)) {
      const command = this.table.find(this.session, name);
      if (command) commands.push(describeCommand(command.def, withHelp));
      else missing.push(name);
    }
    return { commands, missing };
  }

  // -- invoke (§4.4) ----------------------------------------------------------------------------

  private async invoke(params: Params, signal: AbortSignal) {
    const start = performance.now();
    if (typeof params.command !== "string" || params.command === "") {
      throw new OpError("internal", "invoke needs params.command (a command name).");
    }
    const depth = typeof params.depth === "number" ? params.depth : 4;
    const named = this.invokeArguments(params);
    const ctx = new InvokeContext(this.session, signal);
    const id = this.running?.id;
    if (params.progress === true) {
      ctx.onProgress = (record) => void this.channel.send({ type: "progress", id, ...record });
    }
    let stopped = false;
    try {
      const command = this.table.find(this.session, params.command);
      if (!command) throw commandNotFound(params.command);
      await runCommand(command, ctx, { named });
      // A command that cannot act on a stop (a blocking call) is stopped when it returns.
      stopped = signal.aborted;
    } catch (e) {
      if (e instanceof TerminatingError) ctx.errors.push(e.info);
      else if (e instanceof PipelineStopped) stopped = true;
      else throw e;
    }
    const shaped = shapeOutput(ctx.output, params);
    return {
      output: shaped.output.map((value) => toJsonValue(value, depth)),
      errors: ctx.errors,
      warnings: ctx.warnings,
      verbose: ctx.verbose,
      debug: ctx.debug,
      information: ctx.information,
      hadErrors: ctx.errors.length > 0,
      stopped,
      durationMs: elapsed(start),
      ...(shaped.shape ? { shape: shaped.shape } : {}),
    };
  }

  /** `parameters` by name; those listed in `credentials` become PSCredentials (protocol §4.4). */
  private invokeArguments(params: Params): Array<[string, PSValue]> {
    const parameters = typeof params.parameters === "object" && params.parameters !== null &&
        !Array.isArray(params.parameters)
      ? params.parameters as Record<string, unknown>
      : {};
    const credentials = new Set(stringArray(params.credentials));
    return Object.entries(parameters).map(([name, value]): [string, PSValue] => {
      if (!credentials.has(name)) return [name, fromJson(value)];
      const { UserName: user, Password: password } = (value ?? {}) as Record<string, unknown>;
      if (typeof user !== "string" || user === "" || typeof password !== "string") {
        throw new OpError(
          "internal",
          `Parameter '${name}' is listed in credentials but is not {"UserName", "Password"} ` +
            "with a non-empty UserName.",
        );
      }
      return [name, new PSCredential(user, password)];
    });
  }
}

/**
 * `first` and `select` of an invoke (protocol §4.4), as lib/host/cs/OutputProjection.cs applies them:
 * objects keep the requested properties (wildcards allowed), else their type's display set, else
 * stay whole; scalars always stay whole.
 */
function shapeOutput(output: PSValue[], params: Params): { output: PSValue[]; shape?: unknown } {
  const first = typeof params.first === "number" ? params.first : null;
  const select = typeof params.select === "object" && params.select !== null
    ? params.select as { properties?: unknown; display?: unknown }
    : null;
  if (first === null && select === null) return { output };
  const moreResults = first !== null && output.length > first;
  const items = moreResults ? output.slice(0, first!) : output;
  if (select === null) return { output: items, shape: { moreResults } };
  const requested = stringArray(select.properties);
  const matched = new Set<string>();
  const types = new Map<string, { type: string; shown: string[]; omitted: string[] }>();
  const shaped = items.map((item) => {
    if (!(item instanceof PSCustomObject)) return item;
    const names = item.properties.map(([name]) => name);
    let shown: string[] | null = null;
    if (requested.length > 0) {
      shown = [];
      for (const pattern of requested) {
        const re = wildcardToRegExp(pattern);
        for (const name of names.filter((n) => re.test(n))) {
          matched.add(pattern);
          if (!shown.includes(name)) shown.push(name);
        }
      }
    } else if (select.display === true && item.displaySet) {
      shown = item.displaySet;
    }
    if (shown === null) return item;
    const values = new Map(item.properties);
    const kept = new PSHashtable(
      new Map(shown.filter((name) => values.has(name)).map((name) => [name, values.get(name)!])),
    );
    if (!types.has(item.typeName)) {
      const keys = [...kept.entries.keys()];
      types.set(item.typeName, {
        type: item.typeName,
        shown: keys,
        omitted: names.filter((n) => !keys.includes(n)),
      });
    }
    return kept;
  });
  return {
    output: shaped,
    shape: {
      moreResults,
      types: [...types.values()],
      unknownProperties: requested.filter((p) => !matched.has(p)),
    },
  };
}

/** Binds and runs one command; binding errors are terminating errors of the call. */
async function runCommand(command: ServedCommand, ctx: InvokeContext, args: CallArguments) {
  const binding = bindArguments(command.def, args);
  ctx.applyCommonParameters(binding);
  await command.run(ctx, binding);
}

function findParameter(command: ServedCommand, name: string) {
  const lower = name.toLowerCase();
  const all = bindableParameters(command.def);
  return all.find((p) => [p.name, ...(p.aliases ?? [])].some((n) => n.toLowerCase() === lower)) ??
    all.find((p) => [p.name, ...(p.aliases ?? [])].some((n) => n.toLowerCase().startsWith(lower)));
}

function startupParamIsSwitch(command: ServedCommand, name: string): boolean {
  return findParameter(command, name)?.type === switchType;
}

function missingArgument(command: ServedCommand, name: string): TerminatingError {
  const param = findParameter(command, name);
  return new TerminatingError(errorRecord({
    message: `Missing an argument for parameter '${param?.name ?? name}'. Specify a parameter ` +
      `of type '${param?.type ?? "System.Object"}' and try again.`,
    errorId: `MissingArgument,${command.def.errorIdSuffix}`,
    category: "InvalidArgument",
    exceptionType: "System.Management.Automation.ParameterBindingException",
  }));
}

// ---------------------------------------------------------------------------------------------

/** Ends the process as host.ps1 does: with -RemoveScriptDirectory, its directory goes first. */
function exitHost(cli: CommandLine, code: number): never {
  if (cli.removeScriptDirectory) {
    try {
      Deno.removeSync(dirname(cli.file), { recursive: true });
    } catch (e) {
      diagnostic(`cannot remove the host's directory: ${e instanceof Error ? e.message : e}`);
    }
  }
  Deno.exit(code);
}

async function connect(cli: CommandLine): Promise<Deno.Conn> {
  const { endpoint } = cli;
  try {
    if (endpoint.transport === "unix") {
      return await Deno.connect({ transport: "unix", path: endpoint.path });
    }
    const conn = await Deno.connect({ hostname: endpoint.hostname, port: endpoint.port });
    conn.setNoDelay(true);
    return conn;
  } catch (e) {
    diagnostic(`cannot connect to the endpoint: ${e instanceof Error ? e.message : String(e)}`);
    exitHost(cli, 1);
  }
}

async function sendHello(channel: FrameChannel, knobs: Knobs, slot: number) {
  const token = Deno.env.get("SVC_WORKER_TOKEN") ?? "";
  if (token === "") diagnostic("SVC_WORKER_TOKEN is not set");
  const hello = {
    type: "hello",
    token,
    protocol: 1,
    slot,
    pid: Deno.pid,
    psVersion: knobs.psVersion,
    edition: "Core",
    os: osDescription(),
  };
  switch (knobs.hello) {
    case "ok":
      return await channel.send(hello);
    case "wrong-token":
      return await channel.send({
        ...hello,
        token: token.startsWith("0") ? "1".repeat(64) : "0".repeat(64),
      });
    case "not-hello":
      return await channel.send({ ...hello, type: "ready" });
    case "garbage":
      return await channel.sendRaw(encoder.encode("this is not a frame\n"));
    case "silent":
      return;
  }
}

function writeStartupNoise() {
  // Looks like a frame on purpose: svc must not read the worker's stdout as protocol.
  Deno.stdout.writeSync(encoder.encode('{"type":"hello","token":"stdout-is-not-protocol"}\n'));
  Deno.stdout.writeSync(encoder.encode("fake-pwsh: stdout noise at startup\n"));
  Deno.stderr.writeSync(encoder.encode("fake-pwsh: stderr noise at startup\n"));
}

async function main() {
  // tests/support/fake-pwsh runs Deno through bin/deno, which changes directory to the repo
  // root: go back to the directory the stand-in was started in (the runspace's location).
  const startDir = Deno.env.get("SVC_FAKE_PWSH_CWD");
  if (startDir) Deno.chdir(startDir);

  const cli = parseCommandLine(Deno.args);
  const knobs = readKnobs();
  if (knobs.noise) writeStartupNoise();
  if (knobs.exitCode !== undefined) Deno.exit(knobs.exitCode);

  let data: CmdletData;
  try {
    data = loadCmdletData();
  } catch (e) {
    diagnostic(`cannot read the cmdlet data: ${e instanceof Error ? e.message : String(e)}`);
    Deno.exit(70);
  }
  const table = new CommandTable([...builtinCommands(data), ...fixtureCommands()]);
  const home = Deno.cwd();
  if (knobs.delayMs > 0) await new Promise((done) => setTimeout(done, knobs.delayMs));

  // Each slot is a connection with a session of its own; the process ends with its last slot.
  let live = 0;
  const runSlot = async (slot: number) => {
    live++;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (--live === 0) exitHost(cli, 0);
    };
    const conn = await connect(cli);
    const channel = new FrameChannel(conn, end);
    await sendHello(channel, knobs, slot);
    const worker = new Worker(channel, table, new Session(home), knobs.logFile, knobs, (next) => {
      runSlot(next).catch((e) => diagnostic(`slot ${next} failed: ${e}`));
    });
    for await (const line of channel.lines()) worker.onFrame(line);
    // End of file: svc closed the connection or died. This slot stops (protocol §5).
    end();
  };
  await runSlot(0);
}

if (import.meta.main) await main();
