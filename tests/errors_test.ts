import assert from "node:assert/strict";
import { ConfigError, exitCodeOf, RemoteError, StartupError, WorkerError } from "../lib/errors.ts";

Deno.test("exitCodeOf() maps configuration errors to 2, startup errors to 3, anything else to 4", () => {
  assert.equal(exitCodeOf(new ConfigError("BAD_FLAG", "bad")), 2);
  assert.equal(exitCodeOf(new StartupError("PWSH_NOT_FOUND", "none")), 3);
  assert.equal(exitCodeOf(new WorkerError("EXITED", "gone")), 4);
  assert.equal(exitCodeOf(new RemoteError("startup", "threw", null)), 4);
  assert.equal(exitCodeOf(new Error("plain")), 4);
  assert.equal(exitCodeOf("a string"), 4);
  assert.equal(exitCodeOf(undefined), 4);
});

Deno.test("each error class carries its name, code, message and cause", () => {
  const cause = new Error("underlying");
  const config = new ConfigError("UNREADABLE_FILE", "Cannot read 'x'", { cause });
  assert.equal(config.name, "ConfigError");
  assert.equal(config.code, "UNREADABLE_FILE");
  assert.equal(config.message, "Cannot read 'x'");
  assert.equal(config.cause, cause);
  assert.ok(config instanceof Error);

  const startup = new StartupError("PWSH_TOO_OLD", "too old");
  assert.equal(startup.name, "StartupError");
  assert.equal(startup.code, "PWSH_TOO_OLD");
  assert.equal(String(startup), "StartupError: too old");
});

Deno.test("WorkerError keeps the exit code only when given, and RemoteError is a REMOTE WorkerError", () => {
  assert.equal(new WorkerError("EXITED", "gone", { exitCode: 137 }).exitCode, 137);
  assert.equal(new WorkerError("EXITED", "gone", { exitCode: 0 }).exitCode, 0);
  assert.equal(new WorkerError("TIMEOUT", "slow").exitCode, null);

  const record = {
    message: "boom",
    fullyQualifiedErrorId: "X",
    category: null,
    targetName: null,
    targetType: null,
    exceptionType: null,
    scriptStackTrace: null,
    terminating: true,
    position: null,
  };
  const remote = new RemoteError("reset", "reset failed", record);
  assert.ok(remote instanceof WorkerError);
  assert.equal(remote.name, "RemoteError");
  assert.equal(remote.code, "REMOTE");
  assert.equal(remote.kind, "reset");
  assert.equal(remote.record, record);
  assert.equal(remote.exitCode, null);
});
