import assert from "node:assert/strict";
import {
  formatTimeSpan,
  isTree,
  lookup,
  parseTimeSpan,
  Reader,
  type Tree,
} from "../lib/config_reader.ts";
import { ConfigError } from "../lib/errors.ts";

function reader(tree: Tree, env: Tree = {}, file: string | null = "/etc/svc/appsettings.json") {
  return new Reader(tree, { env, file });
}

/**
 * The problem a read kept: reads go on with the default (so every problem of a file is reported at
 * once), and the problem is the reader's last.
 */
function refusal(read: Reader, fn: () => unknown): string {
  const before = read.problems.length;
  fn();
  assert.equal(read.problems.length, before + 1, "the read kept one problem");
  const error = read.problems.at(-1)!;
  assert.ok(error instanceof ConfigError);
  assert.equal(error.code, "INVALID_VALUE");
  return error.message;
}

Deno.test("isTree() is true for objects only", () => {
  assert.equal(isTree({}), true);
  assert.equal(isTree([]), false);
  assert.equal(isTree(null), false);
  assert.equal(isTree("x"), false);
});

Deno.test("lookup() follows a colon path ignoring case, and stops at anything but an object", () => {
  const tree = { McpServer: { RunspacePool: { MaxPoolSize: 4 } }, List: [1] };
  assert.equal(lookup(tree, "mcpserver:runspacepool:maxpoolsize"), 4);
  assert.deepEqual(lookup(tree, "McpServer:RunspacePool"), { MaxPoolSize: 4 });
  assert.equal(lookup(tree, "McpServer:Missing:Key"), undefined);
  assert.equal(lookup(tree, "McpServer:RunspacePool:MaxPoolSize:Deeper"), undefined);
  assert.equal(lookup(tree, "List:0"), undefined, "arrays are not walked");
});

Deno.test("parseTimeSpan() reads .NET time spans and refuses out-of-range parts", () => {
  assert.equal(parseTimeSpan("00:00:01"), 1_000);
  assert.equal(parseTimeSpan(" 0:0:5 "), 5_000);
  assert.equal(parseTimeSpan("2.03:04:05"), ((2 * 24 + 3) * 60 + 4) * 60_000 + 5_000);
  assert.equal(parseTimeSpan("00:00:00.5"), 500);
  assert.equal(parseTimeSpan("00:00:00.0015"), 2, "fractions round to the millisecond");
  assert.equal(parseTimeSpan("99:00:00"), 99 * 3_600_000, "hours are not capped at 23");
  assert.equal(parseTimeSpan("00:00:60"), null);
  assert.equal(parseTimeSpan("00:00"), null);
  assert.equal(parseTimeSpan("-00:00:01"), null);
  assert.equal(parseTimeSpan("00:00:00.12345678"), null);
  assert.equal(parseTimeSpan(""), null);
});

Deno.test("formatTimeSpan() writes hh:mm:ss, with milliseconds only when there are some", () => {
  assert.equal(formatTimeSpan(300_000), "00:05:00");
  assert.equal(formatTimeSpan(1_500), "00:00:01.500");
  assert.equal(formatTimeSpan(5), "00:00:00.005");
  assert.equal(formatTimeSpan(90_061_000), "25:01:01");
  for (const ms of [0, 1, 999, 61_000, 3_599_999, 86_400_000]) {
    assert.equal(parseTimeSpan(formatTimeSpan(ms)), ms, `${ms} round-trips`);
  }
});

Deno.test("Reader reads each type, takes defaults for unset, null or empty values, and records them", () => {
  const read = reader({
    S: { Int: "12", Bool: "TRUE", Choice: "command", Span: "00:00:02", List: ["a", " ", "b"] },
    E: { Int: null, Bool: "", Choice: "", Span: null, Text: "" },
  });
  assert.equal(read.integer("S:Int", 1, 0), 12);
  assert.equal(read.boolean("S:Bool", false), true);
  assert.equal(read.choice("S:Choice", ["ParameterSet", "Command"], "ParameterSet"), "Command");
  assert.equal(read.timeSpan("S:Span", 1), 2_000);
  assert.deepEqual(read.strings("S:List"), ["a", "b"], "blank entries are dropped");
  assert.equal(read.integer("E:Int", 7, 0), 7);
  assert.equal(read.boolean("E:Bool", true), true);
  assert.equal(read.choice("E:Choice", ["A", "B"], "B"), "B");
  assert.equal(read.timeSpan("E:Span", 90_000), 90_000);
  assert.equal(read.optionalString("E:Text"), null);
  assert.deepEqual(read.strings("E:Missing"), []);
  assert.equal(read.optionalString("E:Gone"), null);
  assert.equal(read.values["E:Gone"], undefined);
  assert.equal(read.sources["S:Int"], "file");
  assert.equal(read.sources["E:Int"], "default");
  assert.equal(read.values["S:Int"], "12", "values are recorded as written");
  assert.equal(read.values["E:Int"], 7, "a default is recorded as the value in effect");
  assert.equal(read.values["E:Span"], "00:01:30", "a default time span as a time span");
  assert.deepEqual(read.values["E:Missing"], []);
});

Deno.test("Reader takes a setting's default and minimum from lib/config_schema.ts unless given", () => {
  const read = reader({ McpServer: { MaxStreams: 0 }, Authentication: { Schemes: { k: {} } } });
  assert.equal(read.integer("McpServer:RunspacePool:MaxPoolSize"), 16);
  assert.equal(read.timeSpan("McpServer:SendTimeout"), 30_000);
  assert.equal(read.values["McpServer:SendTimeout"], "00:00:30");
  assert.equal(read.boolean("McpServer:EnableLegacySse"), false);
  assert.equal(read.choice("McpServer:HttpTransportMode", ["Stateless", "Stateful"]), "Stateless");
  assert.equal(read.text("Authentication:Schemes:k:HeaderName"), "X-API-Key", "in a map entry");
  assert.equal(read.values["Authentication:Schemes:k:HeaderName"], "X-API-Key");
  assert.equal(read.integer("McpServer:MaxConnections", 77), 77, "a computed default is given");
  assert.match(
    refusal(read, () => read.integer("McpServer:MaxStreams")),
    /expected an integer >= 1, got 0$/,
  );
  // A key without a default, read as if it had one, is a mistake in svc, not in the configuration.
  assert.throws(() => read.integer("McpServer:SessionRunspaceCapacity"), {
    name: "Error",
    message: "'McpServer:SessionRunspaceCapacity' has no default in config_schema.ts",
  });
});

Deno.test("Reader reads ShellConfiguration keys from PoshMcp's PowerShellConfiguration too, naming the key found", () => {
  const read = reader({ PowerShellConfiguration: { MaxResultBytes: 0 } });
  assert.deepEqual(read.raw("ShellConfiguration:MaxResultBytes"), [
    "PowerShellConfiguration:MaxResultBytes",
    0,
  ]);
  assert.equal(
    refusal(read, () => read.integer("ShellConfiguration:MaxResultBytes", 1, 1024)),
    "Invalid configuration value for 'PowerShellConfiguration:MaxResultBytes' in '/etc/svc/appsettings.json': expected an integer >= 1024, got 0",
  );
  const both = reader({
    ShellConfiguration: { MaxResultBytes: 2048 },
    PowerShellConfiguration: { MaxResultBytes: 4096 },
  });
  assert.equal(both.integer("ShellConfiguration:MaxResultBytes", 1, 1024), 2048);
});

Deno.test("Reader refuses a wrong value in a sentence naming the key, where it was set, and the value", () => {
  const read = reader({
    S: { Int: 1.5, Neg: "-1", Bool: "yes", Choice: "Both", Span: "5m", Zero: "00:00:00" },
    L: { List: "Get-Date", Mixed: ["a", 1] },
    T: { Text: 5 },
  });
  const file = "in '/etc/svc/appsettings.json'";
  assert.equal(
    refusal(read, () => read.integer("S:Int", 1, 0)),
    `Invalid configuration value for 'S:Int' ${file}: expected an integer >= 0, got 1.5`,
  );
  assert.match(
    refusal(read, () => read.integer("S:Neg", 1, 0)),
    /expected an integer >= 0, got "-1"$/,
  );
  assert.match(
    refusal(read, () => read.boolean("S:Bool", true)),
    /'S:Bool'.*expected true or false, got "yes"$/,
  );
  assert.match(
    refusal(read, () => read.choice("S:Choice", ["ParameterSet", "Command"], "Command")),
    /'S:Choice'.*expected "ParameterSet" or "Command", got "Both"$/,
  );
  assert.match(
    refusal(read, () => read.timeSpan("S:Span", 1)),
    /'S:Span'.*expected a positive time span like "00:05:00" \(hh:mm:ss\), got "5m"$/,
  );
  assert.match(
    refusal(read, () => read.timeSpan("S:Zero", 1)),
    /positive time span.*got "00:00:00"$/,
  );
  assert.match(
    refusal(read, () => read.strings("L:List")),
    /'L:List'.*expected an array of strings, like \["Get-Date"\], got "Get-Date"$/,
  );
  assert.match(refusal(read, () => read.strings("L:Mixed")), /got \["a",1\]$/);
  assert.match(
    refusal(read, () => read.optionalString("T:Text")),
    /'T:Text'.*expected a string, got 5$/,
  );
});

Deno.test("Reader says a value came from an environment variable, or from the embedded default", () => {
  const env = { McpServer: { Port: "x" } };
  const fromEnv = reader({ McpServer: { Port: "x", Other: "y" } }, env);
  assert.equal(
    refusal(fromEnv, () => fromEnv.integer("McpServer:Port", 1, 0)),
    `Invalid configuration value for 'McpServer:Port' in environment variable McpServer__Port: expected an integer >= 0, got "x"`,
  );
  assert.equal(fromEnv.sources["McpServer:Port"], "environment");
  fromEnv.optionalString("McpServer:Other");
  assert.equal(fromEnv.sources["McpServer:Other"], "file");

  const embedded = reader({ A: "x" }, {}, null);
  assert.equal(
    refusal(embedded, () => embedded.integer("A", 1, 0)),
    `Invalid configuration value for 'A' in the embedded default configuration: expected an integer >= 0, got "x"`,
  );
  embedded.optionalString("A");
  assert.equal(embedded.sources["A"], "embedded default");
});
