/**
 * The svc command line: parses argv, loads settings, dispatches to a command and maps error classes
 * to exit codes (2 configuration, 3 startup, 4 runtime). No business logic lives here.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { loadSettings } from "./lib/config.ts";
import { ConfigError, exitCodeOf } from "./lib/errors.ts";
import { configureLogging, flushLogging, logger } from "./lib/log.ts";
import { resolvePwsh } from "./lib/shell.ts";
import { serveHttp } from "./lib/http.ts";
import { serveStdio } from "./lib/stdio.ts";
import project from "./deno.json" with { type: "json" };

/** svc's version, from deno.json. */
export const VERSION: string = project.version;

const USAGE = `svc ${VERSION} - serve PowerShell commands as MCP tools

Usage:
  svc serve [options]      Start the MCP server
  svc --version            Print the version
  svc --help               Print this help

Options of serve (flag / environment variable / default):
  --transport <stdio|http>  SVC_TRANSPORT       stdio
  --host <address>          SVC_HOST            127.0.0.1 (http; 0.0.0.0 binds every interface,
                                                e.g. in a container)
  --port <int>              SVC_PORT            8080 (http; 0 picks a free port)
  --mcp-path <path>         SVC_MCP_PATH        / and /mcp (http)
  --config <path>           SVC_CONFIG          ./appsettings.json, else the embedded default
  --pwsh <path>             SVC_PWSH            ShellConfiguration:PwshPath, else 'pwsh' on PATH
  --log-level <level>       SVC_LOG_LEVEL       Logging:LogLevel:Default, else Information
                            (Trace, Debug, Information, Warning, Error, Critical)
  --log-format <text|json>  SVC_LOG_FORMAT      text
  -h, --help                                    Print this help

Settings from the configuration file can also be given as environment variables with '__' between
levels, e.g. ShellConfiguration__ToolCallTimeout=00:01:00 or ShellConfiguration__Commands__0=Get-Date.
Logs always go to stderr. Exit codes: 0 ok, 2 configuration error, 3 startup error (PowerShell
missing or too old, startup script failed), 4 runtime error.
`;

const SERVE_OPTIONS = {
  transport: { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  "mcp-path": { type: "string" },
  config: { type: "string" },
  pwsh: { type: "string" },
  "log-level": { type: "string" },
  "log-format": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

function print(text: string): void {
  // deno-lint-ignore no-console
  console.log(text);
}

async function serve(argv: string[]): Promise<void> {
  let values;
  try {
    values =
      parseArgs({ args: argv, options: SERVE_OPTIONS, strict: true, allowPositionals: false })
        .values;
  } catch (error) {
    throw new ConfigError(
      "BAD_FLAG",
      `Invalid command line for 'svc serve': ${(error as Error).message}`,
    );
  }
  if (values.help) {
    print(USAGE);
    return;
  }
  const settings = await loadSettings({
    config: values.config,
    transport: values.transport,
    pwsh: values.pwsh,
    logLevel: values["log-level"],
    logFormat: values["log-format"],
    host: values.host,
    port: values.port,
    mcpPath: values["mcp-path"],
  });
  await configureLogging({ level: settings.logLevel, format: settings.logFormat });
  for (const warning of settings.warnings) {
    logger("config").warning("{Warning}", { Warning: warning });
  }
  const pwsh = await resolvePwsh(settings.shell.pwshPath);
  const shutdown = new Promise<void>((resolve) => {
    const signals: Deno.Signal[] = Deno.build.os === "windows"
      ? ["SIGINT", "SIGBREAK"]
      : ["SIGINT", "SIGTERM"];
    for (const signal of signals) Deno.addSignalListener(signal, () => resolve());
  });
  logger("main").info("svc {Version} serving over {Transport} (config {Config}, pwsh {Pwsh}).", {
    Version: VERSION,
    Transport: settings.transport,
    Config: settings.configPath ?? "embedded default",
    Pwsh: pwsh,
  });
  if (settings.transport === "http") {
    await serveHttp({ settings, pwsh, version: VERSION, shutdown });
  } else await serveStdio({ settings, pwsh, version: VERSION, shutdown });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--version" || command === "-V" || command === "version") {
    print(VERSION);
    return 0;
  }
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    print(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === "serve") {
    await serve(rest);
    return 0;
  }
  throw new ConfigError(
    "BAD_FLAG",
    `Unknown command '${command}': run 'svc --help' for the commands`,
  );
}

if (import.meta.main) {
  let code = 0;
  try {
    code = await main(Deno.args);
  } catch (error) {
    code = exitCodeOf(error);
    const message = error instanceof Error ? error.message : String(error);
    // Expected errors get one sentence; only unexpected ones are worth a stack trace at debug level.
    Deno.stderr.writeSync(new TextEncoder().encode(`svc: ${message}\n`));
    if (code === 4 && Deno.env.get("SVC_DEBUG_STACK") === "1" && error instanceof Error) {
      Deno.stderr.writeSync(new TextEncoder().encode(`${error.stack}\n`));
    }
  }
  await flushLogging().catch(() => {});
  Deno.exit(code);
}
