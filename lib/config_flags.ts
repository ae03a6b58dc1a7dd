/**
 * The command-line flags of `svc serve` and `svc doctor`, each with the `SVC_*` variable that stands
 * in for it and its default, once: `loadSettings` reads them, and `--help` and the table of
 * docs/configuration.md (scripts/config_reference.ts) are written from them. A flag that comes
 * before a configuration key takes its variable and default from that key's setting
 * (lib/config_schema.ts).
 *
 * @module
 */
import { BIN_PWSH_VERSION } from "./pwsh_path.ts";
import { settingOf, shownDefault } from "./config_schema.ts";

/** A command-line flag, and the `SVC_*` variable that stands in for it. */
export interface Flag {
  /** The option, as typed. */
  flag: string;
  /** Its value in help, like `<int>`; a switch has none. */
  arg?: string;
  /** The variable, unless the flag sets a key whose setting names it. */
  env?: string;
  /** The configuration key the flag and variable come before. */
  key?: string;
  /** The default when neither flag nor variable is given and the flag sets no key. */
  default?: string;
  /** The default in words (or after the key's), and where it applies, for help and docs. */
  help: string;
  /** A longer note for `--help`, under the line. */
  note?: string;
}

/** The flags of `svc serve` and `svc doctor`, by their name in `SettingsOverrides`. */
export const FLAGS = {
  transport: {
    flag: "--transport",
    arg: "<stdio|http>",
    env: "SVC_TRANSPORT",
    default: "stdio",
    help: "",
  },
  host: {
    flag: "--host",
    arg: "<address>",
    env: "SVC_HOST",
    default: "127.0.0.1",
    help: "(http; 0.0.0.0 binds every interface, e.g. in a container)",
  },
  port: {
    flag: "--port",
    arg: "<int>",
    env: "SVC_PORT",
    default: "8080",
    help: "(http; 0 picks a free port)",
  },
  mcpPath: { flag: "--mcp-path", arg: "<path>", env: "SVC_MCP_PATH", help: "/ and /mcp (http)" },
  tlsCertificate: {
    flag: "--tls-certificate",
    arg: "<path>",
    key: "McpServer:TlsCertificatePath",
    help: "(http; with --tls-key, HTTPS)",
    note:
      "PEM file of the certificate chain, the server's certificate first. With --tls-key (its private key) svc serves HTTPS only, TLS 1.2 and 1.3, and takes a renewed pair without a restart.",
  },
  tlsKey: {
    flag: "--tls-key",
    arg: "<path>",
    key: "McpServer:TlsKeyPath",
    help: "(http)",
  },
  allowAnonymous: {
    flag: "--allow-anonymous",
    key: "McpServer:AllowAnonymous",
    help: "(http)",
    note:
      "Serve callers without credentials on an address other than loopback. Risky: anyone who can reach the port calls every tool the default policy allows, as svc's user. Without it, svc refuses to start (exit 2) when authentication is off or not required and --host is not loopback.",
  },
  config: {
    flag: "--config",
    arg: "<path>",
    env: "SVC_CONFIG",
    help: "./appsettings.json, else the embedded default",
  },
  pwsh: {
    flag: "--pwsh",
    arg: "<path>",
    key: "ShellConfiguration:PwshPath",
    help: `(installs PowerShell ${BIN_PWSH_VERSION} from NuGet)`,
  },
  logLevel: {
    flag: "--log-level",
    arg: "<level>",
    key: "Logging:LogLevel:Default",
    help: "",
    note: "(Trace, Debug, Information, Warning, Error, Critical)",
  },
  logFormat: {
    flag: "--log-format",
    arg: "<text|json>",
    env: "SVC_LOG_FORMAT",
    default: "text",
    help: "(logs always go to stderr)",
  },
} as const satisfies Record<string, Flag>;

/** The variable that stands in for a flag: its own, or the one of the key it sets. */
export function flagVariable(flag: Flag): string {
  const env = flag.env ?? (flag.key === undefined ? undefined : settingOf(flag.key)?.env);
  if (env === undefined) {
    throw new Error(`${flag.flag} has no variable in lib/config_flags.ts or its key's setting`);
  }
  return env;
}

/** A flag's default for help and docs: `key, else default (where)` (— for none), or `default (where)`. */
export function flagDefault(flag: Flag): string {
  const setting = flag.key === undefined ? undefined : settingOf(flag.key);
  const value = setting === undefined
    ? flag.default
    : `${flag.key}, else ${shownDefault(setting) ?? "—"}`;
  return [value, flag.help].filter(Boolean).join(" ");
}

/** A flag's value, else its variable's; undefined when neither. */
export type GivenFlag = (name: keyof typeof FLAGS) => string | undefined;

/** "flag --port, env SVC_PORT", for messages. */
export function flagWords(name: keyof typeof FLAGS): string {
  return `flag ${FLAGS[name].flag}, env ${flagVariable(FLAGS[name])}`;
}
