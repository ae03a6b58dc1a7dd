/**
 * The svc command line: parses argv, loads settings, dispatches to a command and maps error classes
 * to exit codes (2 configuration, 3 startup, 4 runtime). No business logic lives here.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { loadSettings, type Settings, type SettingsOverrides } from "./lib/config.ts";
import { type Flag, flagDefault, FLAGS, flagVariable } from "./lib/config_flags.ts";
import { ConfigError, exitCodeOf } from "./lib/errors.ts";
import { configureLogging, flushLogging, logger } from "./lib/log.ts";
import { hardenProcess } from "./lib/process_hardening.ts";
import { describeOrigin, resolvePwsh } from "./lib/pwsh_path.ts";
import { closestNames } from "./lib/suggest.ts";
import project from "./deno.json" with { type: "json" };

/** svc's version, from deno.json. */
export const VERSION: string = project.version;

const USAGE = `svc ${VERSION} - serve PowerShell commands as MCP tools

Usage:
  svc serve [options]           Start the MCP server (stdio or HTTP)
  svc create-config [options]   Write a commented appsettings.json with every default
  svc update-config [options]   Add or remove commands, patterns and modules in the config file
  svc doctor [options]          Diagnose the configuration, PowerShell, modules, tools and pool
  svc --version                 Print the version
  svc <command> --help          Options of one command

Exit codes: 0 ok, 2 configuration error, 3 startup error (PowerShell missing or too old, startup
script failed), 4 runtime error; doctor also uses 1 for problems found and 5 for incomplete (a
configured command or module offers no tool).
`;

/** `text` after `first`, wrapped at 96 columns with `indent` spaces before each further line. */
function wrap(first: string, text: string, indent: number): string {
  const lines = [first];
  for (const word of text.split(" ")) {
    const line = lines.at(-1)!;
    const longer = line.endsWith(" ") ? line + word : `${line} ${word}`;
    if (longer.length > 96 && line.trim() !== "") lines.push(" ".repeat(indent) + word);
    else lines[lines.length - 1] = longer;
  }
  return lines.join("\n");
}

/**
 * A flag's lines of help: flag, variable and default as lib/config_flags.ts gives them (or
 * `shown` where one command means something else by it), then its note.
 */
function option(name: keyof typeof FLAGS, shown = flagDefault(FLAGS[name])): string {
  const flag: Flag = FLAGS[name];
  const head = `  ${`${flag.flag} ${flag.arg ?? ""}`.trim().padEnd(26)}${
    flagVariable(flag).padEnd(20)
  }`;
  const note = flag.note === undefined ? [] : [wrap(" ".repeat(28), flag.note, 28)];
  return [wrap(head, shown, 48), ...note].join("\n");
}

const COMMON_HELP = `${option("config")}
${option("pwsh")}
${option("logLevel")}
${option("logFormat")}
  -h, --help                                    Print this help`;

const SETTINGS_NOTE =
  `Settings from the configuration file can also be given as environment variables with '__'
between levels, e.g. ShellConfiguration__ToolCallTimeout=00:01:00 or
ShellConfiguration__Commands__0=Get-Date. Precedence: flags, environment, file, defaults.`;

const HELP: Record<string, string> = {
  serve: `svc serve - start the MCP server

Options (flag / environment variable / default):
${option("transport")}
${option("host")}
${option("port")}
${option("mcpPath")}
${option("tlsCertificate")}
${option("tlsKey")}
${option("allowAnonymous")}
${COMMON_HELP}

${SETTINGS_NOTE}
`,
  "create-config":
    `svc create-config - write a complete, commented appsettings.json with the defaults

Options:
${option("config", "./appsettings.json")}
  --force                                       false (overwrite an existing file)
  -h, --help                                    Print this help
`,
  "update-config":
    `svc update-config - edit the configuration file in place, keeping comments and formatting

Options (each repeatable; adding what is there or removing what is not changes nothing):
  --add-command <name>             --remove-command <name>
  --add-include-pattern <pattern>  --remove-include-pattern <pattern>
  --add-exclude-pattern <pattern>  --remove-exclude-pattern <pattern>
  --add-module <name>              --remove-module <name>
${option("config", "./appsettings.json (must exist)")}
  -h, --help                                    Print this help
`,
  doctor: `svc doctor - diagnose configuration, PowerShell, modules, tools, pool and authentication

Starts the configured number of workers briefly (EagerWarmCount, at least one) to report the
startup-script outcome and time per worker, then discovers the tools. Never prints a secret.
What it compiles and discovers stays in the caches (CacheDirectory), so the next serve with the
same configuration answers its first call without either.

Options:
  --format <text|json>                          text
  --strict                                      false (warnings alone make the exit code 1)
${COMMON_HELP}

Exit codes, each with its last line: 0 "Healthy."; 1 "Problems found" (errors, no tool at all, or
warnings with --strict); 2 configuration error; 3 PowerShell not found or not startable; 5
"Incomplete" (svc can serve, but a configured command or module offers no tool: not found, hidden by
an exclude pattern, or failing to import).
`,
};

const COMMON_OPTIONS = {
  config: { type: "string" },
  pwsh: { type: "string" },
  "log-level": { type: "string" },
  "log-format": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

const OPTIONS = {
  serve: {
    ...COMMON_OPTIONS,
    transport: { type: "string" },
    host: { type: "string" },
    port: { type: "string" },
    "mcp-path": { type: "string" },
    "tls-certificate": { type: "string" },
    "tls-key": { type: "string" },
    "allow-anonymous": { type: "boolean" },
  },
  "create-config": {
    config: { type: "string" },
    force: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  },
  "update-config": {
    config: { type: "string" },
    help: { type: "boolean", short: "h" },
    "add-command": { type: "string", multiple: true },
    "remove-command": { type: "string", multiple: true },
    "add-include-pattern": { type: "string", multiple: true },
    "remove-include-pattern": { type: "string", multiple: true },
    "add-exclude-pattern": { type: "string", multiple: true },
    "remove-exclude-pattern": { type: "string", multiple: true },
    "add-module": { type: "string", multiple: true },
    "remove-module": { type: "string", multiple: true },
  },
  doctor: { ...COMMON_OPTIONS, format: { type: "string" }, strict: { type: "boolean" } },
} as const;

type Command = keyof typeof OPTIONS;

/** Writes a command's own output to stdout (console.* is routed to the log once logging is set up). */
function print(text: string): void {
  const bytes = new TextEncoder().encode(`${text}\n`);
  let offset = 0;
  while (offset < bytes.length) offset += Deno.stdout.writeSync(bytes.subarray(offset));
}

function parse<C extends Command>(command: C, argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: OPTIONS[command],
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    throw new ConfigError("BAD_FLAG", flagProblem(command, (error as Error).message));
  }
}

/**
 * A command-line mistake in one sentence, from what node's parseArgs said: an unknown option gets
 * the closest one the command has ("did you mean"), else a pointer to the command's --help.
 */
function flagProblem(command: Command, said: string): string {
  const help = `run 'svc ${command} --help' for its options`;
  const unknown = /^Unknown option '([^']+)'/.exec(said);
  if (unknown) {
    const typed = unknown[1]!;
    const [close] = closestNames(
      typed.replace(/^-+/, "").split("=")[0]!,
      Object.keys(OPTIONS[command]),
      1,
    );
    return `Unknown option '${typed}' for 'svc ${command}': ${
      close === undefined ? help : `did you mean '--${close}'?`
    }`;
  }
  const missing = /^Option '([^' ]+)[^']*' argument missing/.exec(said);
  if (missing) return `Option '${missing[1]}' of 'svc ${command}' needs a value: ${help}`;
  const positional = /^Unexpected argument '([^']+)'/.exec(said);
  if (positional) {
    return `Unexpected argument '${
      positional[1]
    }' for 'svc ${command}': options start with '--'; ${help}`;
  }
  return `Invalid command line for 'svc ${command}': ${said}`;
}

function overridesOf(values: Record<string, unknown>): SettingsOverrides {
  const text = (key: string) => values[key] as string | undefined;
  return {
    config: text("config"),
    transport: text("transport"),
    pwsh: text("pwsh"),
    logLevel: text("log-level"),
    logFormat: text("log-format"),
    host: text("host"),
    port: text("port"),
    mcpPath: text("mcp-path"),
    tlsCertificate: text("tls-certificate"),
    tlsKey: text("tls-key"),
    allowAnonymous: values["allow-anonymous"] === true ? "true" : undefined,
  };
}

/**
 * Loads the settings and sets up logging. `quietUnlessAsked` logs at Warning when no log level was
 * given by flag or environment (doctor's report is its output), without pretending one was.
 */
async function settingsFor(
  values: Record<string, unknown>,
  options: { quietUnlessAsked?: boolean } = {},
): Promise<Settings> {
  const settings = await loadSettings(overridesOf(values));
  const asked = settings.sources["--log-level"] !== "default";
  const level = options.quietUnlessAsked && !asked ? "warning" : settings.logLevel;
  await configureLogging({ level, format: settings.logFormat });
  for (const warning of settings.warnings) {
    logger("config").warning("{Warning}", { Warning: warning });
  }
  if (settings.configPath === null) {
    // A user who edits the repository's appsettings.json and sees no change needs to know why.
    logger("config").info(
      "No --config or SVC_CONFIG given and no appsettings.json in {Directory}; using the default configuration built into svc.",
      { Directory: Deno.cwd() },
    );
  }
  return settings;
}

async function serve(argv: string[]): Promise<number> {
  const values = parse("serve", argv);
  if (values.help) {
    print(HELP.serve!);
    return 0;
  }
  const settings = await settingsFor(values);
  const { path: pwsh, origin } = await resolvePwsh(settings.shell.pwshPath);
  const hardening = hardenProcess();
  if (hardening === "done") {
    logger("main").debug("svc is not dumpable: its workers cannot read its environment or memory.");
  } else if (hardening !== "not Linux") {
    logger("main").info(
      "svc could not make itself non-dumpable ({Reason}): a command that reads files can read /proc/{Pid}/environ.",
      { Reason: hardening, Pid: Deno.pid },
    );
  }
  // The first SIGINT/SIGTERM drains (ShutdownDrainTimeout at most); a second one cuts off at once.
  const forced = new AbortController();
  const shutdown = new Promise<void>((resolve) => {
    const signals: Deno.Signal[] = Deno.build.os === "windows"
      ? ["SIGINT", "SIGBREAK"]
      : ["SIGINT", "SIGTERM"];
    let asked = false;
    for (const signal of signals) {
      Deno.addSignalListener(signal, () => {
        if (asked && !forced.signal.aborted) {
          logger("main").warning("Asked again to stop: cutting off the calls in flight now.");
          forced.abort();
        }
        asked = true;
        resolve();
      });
    }
  });
  logger("main").info(
    "svc {Version} serving over {Transport} (config {Config}, pwsh {Pwsh}, from {PwshOrigin}).",
    {
      Version: VERSION,
      Transport: settings.transport,
      Config: settings.configPath ?? "embedded default",
      Pwsh: pwsh,
      PwshOrigin: describeOrigin(origin),
    },
  );
  if (settings.transport === "http") {
    const { serveHttp } = await import("./lib/http.ts");
    await serveHttp({ settings, pwsh, version: VERSION, shutdown, force: forced.signal });
  } else {
    const { serveStdio } = await import("./lib/stdio.ts");
    await serveStdio({ settings, pwsh, version: VERSION, shutdown });
  }
  return 0;
}

function configPathOf(values: { config?: string | undefined }): string {
  return values.config ?? Deno.env.get(FLAGS.config.env) ?? "appsettings.json";
}

async function createConfigCommand(argv: string[]): Promise<number> {
  const values = parse("create-config", argv);
  if (values.help) {
    print(HELP["create-config"]!);
    return 0;
  }
  const { createConfig } = await import("./lib/config_template.ts");
  const result = await createConfig(configPathOf(values), { force: values.force ?? false });
  print(`${result.overwritten ? "Overwrote" : "Created"} default configuration: ${result.path}`);
  print("Wrote appsettings.schema.json beside it, for editors to complete and check the keys.");
  return 0;
}

async function updateConfigCommand(argv: string[]): Promise<number> {
  const values = parse("update-config", argv);
  if (values.help) {
    print(HELP["update-config"]!);
    return 0;
  }
  const list = (key: keyof typeof values) => (values[key] as string[] | undefined) ?? [];
  const { formatChangeReport, updateConfig } = await import("./lib/config_edit.ts");
  const report = await updateConfig(configPathOf(values), {
    addCommands: list("add-command"),
    removeCommands: list("remove-command"),
    addIncludePatterns: list("add-include-pattern"),
    removeIncludePatterns: list("remove-include-pattern"),
    addExcludePatterns: list("add-exclude-pattern"),
    removeExcludePatterns: list("remove-exclude-pattern"),
    addModules: list("add-module"),
    removeModules: list("remove-module"),
  });
  print(formatChangeReport(report));
  return 0;
}

async function doctorCommand(argv: string[]): Promise<number> {
  const values = parse("doctor", argv);
  if (values.help) {
    print(HELP.doctor!);
    return 0;
  }
  const format = values.format ?? "text";
  if (format !== "text" && format !== "json") {
    throw new ConfigError("BAD_FLAG", `Invalid --format '${format}': expected "text" or "json"`);
  }
  let settings: Settings;
  try {
    settings = await settingsFor(values, { quietUnlessAsked: true });
  } catch (error) {
    if (!(error instanceof ConfigError) || format !== "json") throw error;
    print(JSON.stringify({ version: VERSION, errors: error.problems, exitCode: 2 }, null, 2));
    return 2;
  }
  const { formatDoctorText, runDoctor } = await import("./lib/doctor.ts");
  const report = await runDoctor(settings, { version: VERSION, strict: values.strict ?? false });
  print(format === "json" ? JSON.stringify(report, null, 2) : formatDoctorText(report));
  return report.exitCode;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "--version":
    case "-V":
    case "version":
      print(VERSION);
      return 0;
    case undefined:
      print(USAGE);
      return 2;
    case "--help":
    case "-h":
    case "help":
      print(USAGE);
      return 0;
    case "serve":
      return await serve(rest);
    case "create-config":
      return await createConfigCommand(rest);
    case "update-config":
      return await updateConfigCommand(rest);
    case "doctor":
      return await doctorCommand(rest);
    default: {
      const [close] = closestNames(command, [...Object.keys(OPTIONS), "--version", "--help"], 1);
      throw new ConfigError(
        "BAD_FLAG",
        `Unknown command '${command}': ${
          close === undefined ? "run 'svc --help' for the commands" : `did you mean '${close}'?`
        }`,
      );
    }
  }
}

if (import.meta.main) {
  let code = 0;
  try {
    // bin/deno runs from the repository root; relative paths are the invoking directory's.
    const invoked = Deno.env.get("SVC_INVOCATION_DIR");
    if (invoked) Deno.chdir(invoked);
    code = await main(Deno.args);
  } catch (error) {
    code = exitCodeOf(error);
    const message = error instanceof Error ? error.message : String(error);
    // Expected errors get one sentence; a stack trace only on request, for unexpected ones.
    Deno.stderr.writeSync(new TextEncoder().encode(`svc: ${message}\n`));
    if (code === 4 && Deno.env.get("SVC_DEBUG_STACK") === "1" && error instanceof Error) {
      Deno.stderr.writeSync(new TextEncoder().encode(`${error.stack}\n`));
    }
  }
  await flushLogging().catch(() => {});
  Deno.exit(code);
}
