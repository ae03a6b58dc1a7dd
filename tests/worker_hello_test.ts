import assert from "node:assert/strict";
import { StartupError, WorkerError } from "../lib/errors.ts";
import {
  acceptHello,
  helloWarnings,
  missingSecurityFixes,
  versionAtLeast,
} from "../lib/worker_hello.ts";

const TOKEN = "0123456789abcdef0123456789abcdef";

function hello(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "hello",
    token: TOKEN,
    protocol: 1,
    pid: 4242,
    psVersion: "7.6.9",
    edition: "Core",
    os: "Linux",
    missingMembers: [],
    ...extra,
  };
}

function refusal(frame: Record<string, unknown>): Error {
  try {
    acceptHello(frame, TOKEN, 1);
  } catch (error) {
    return error as Error;
  }
  throw new Error(`expected ${JSON.stringify(frame)} to be refused`);
}

Deno.test("acceptHello() returns what a valid hello says of the worker", () => {
  assert.deepEqual(acceptHello(hello(), TOKEN, 1), {
    pid: 4242,
    psVersion: "7.6.9",
    edition: "Core",
    os: "Linux",
    missingMembers: [],
  });
});

Deno.test("acceptHello() falls back to the process id svc knows and empty strings", () => {
  const { pid: _pid, edition: _edition, os: _os, ...bare } = hello();
  assert.deepEqual(acceptHello(bare, TOKEN, 77), {
    pid: 77,
    psVersion: "7.6.9",
    edition: "",
    os: "",
    missingMembers: [],
  });
});

Deno.test("acceptHello() refuses a wrong frame type, a missing or wrong token, without quoting the token", () => {
  for (
    const frame of [
      hello({ type: "result" }),
      hello({ token: undefined }),
      hello({ token: 12345 }),
      hello({ token: `${TOKEN}x` }),
      hello({ token: TOKEN.slice(1) }),
      hello({ token: "" }),
    ]
  ) {
    const error = refusal(frame);
    assert.ok(error instanceof WorkerError);
    assert.equal(error.code, "BAD_HELLO");
    assert.equal(error.message, "PowerShell worker's first frame was not a valid hello");
  }
});

Deno.test("acceptHello() refuses another protocol version, quoting it", () => {
  const error = refusal(hello({ protocol: 2 }));
  assert.ok(error instanceof WorkerError);
  assert.equal(error.code, "BAD_HELLO");
  assert.equal(error.message, "PowerShell worker speaks protocol 2, expected 1");
  assert.match(refusal(hello({ protocol: "1" })).message, /speaks protocol "1", expected 1/);
  assert.match(refusal(hello({ protocol: undefined })).message, /speaks protocol undefined/);
});

Deno.test("acceptHello() refuses PowerShell before 7.4 as a startup error saying what to do", () => {
  const error = refusal(hello({ psVersion: "7.3.12" }));
  assert.ok(error instanceof StartupError);
  assert.equal(error.code, "PWSH_TOO_OLD");
  assert.equal(
    error.message,
    "PowerShell 7.3.12 is too old: svc needs PowerShell 7.4 or later (install it from https://aka.ms/powershell or point svc at it with --pwsh)",
  );
  assert.match(
    refusal(hello({ psVersion: undefined })).message,
    /^PowerShell \(unknown version\) is too old/,
  );
  assert.match(
    refusal(hello({ psVersion: "5.1.19041" })).message,
    /^PowerShell 5\.1\.19041 is too old/,
  );
});

Deno.test("versionAtLeast() compares major and minor numerically, previews included", () => {
  assert.equal(versionAtLeast("7.4.0", [7, 4]), true);
  assert.equal(versionAtLeast("7.5.0-preview.2", [7, 4]), true);
  assert.equal(versionAtLeast("7.10.1", [7, 4]), true, "10 > 4 as numbers, not as text");
  assert.equal(versionAtLeast("8.0", [7, 4]), true);
  assert.equal(versionAtLeast("7.3.99", [7, 4]), false);
  assert.equal(versionAtLeast("6.9", [7, 4]), false);
  assert.equal(versionAtLeast("7", [7, 4]), false);
  assert.equal(versionAtLeast("", [7, 4]), false);
  assert.equal(versionAtLeast("v7.4", [7, 4]), false);
});

Deno.test("acceptHello() takes the engine members the worker lacks, and refuses a hello without that list", () => {
  const info = acceptHello(hello({ missingMembers: ["Runspace.RunspaceList"] }), TOKEN, 1);
  assert.deepEqual(info.missingMembers, ["Runspace.RunspaceList"]);
  for (const missingMembers of [undefined, "Runspace.RunspaceList", [1], null]) {
    const error = refusal(hello({ missingMembers }));
    assert.ok(error instanceof WorkerError);
    assert.equal(error.code, "BAD_HELLO");
    assert.equal(error.message, "PowerShell worker's hello has no list of missing members");
  }
});

Deno.test("missingSecurityFixes() names the fixed release of each line known to have advisories", () => {
  const cases: [string, string | null][] = [
    ["7.4.6", "7.4.20"],
    ["7.4.19", "7.4.20"],
    ["7.4.20", null],
    ["7.5.4", "7.5.11"],
    ["7.5.11", null],
    ["7.6.5", "7.6.6"],
    ["7.6.6-rc.1", "7.6.6"],
    ["7.6.6", null],
    ["7.6.10", null],
    ["7.7.0", null],
    ["7.10.1", null],
    ["not a version", null],
  ];
  for (const [version, fixed] of cases) assert.equal(missingSecurityFixes(version), fixed, version);
});

Deno.test("helloWarnings() says an old release and missing engine members in one sentence each", () => {
  const info = acceptHello(hello(), TOKEN, 1);
  assert.deepEqual(helloWarnings({ ...info, psVersion: "7.6.10" }), []);
  const [old] = helloWarnings({ ...info, psVersion: "7.4.19" });
  assert.match(old!, /^PowerShell 7\.4\.19 lacks the security fixes of PowerShell 7\.4\.20 \(/);
  const [missing] = helloWarnings({ ...info, missingMembers: ["AppContext.s_switches", "X.Y"] });
  assert.match(
    missing!,
    /lacks engine members a reset reads .* \(AppContext\.s_switches, X\.Y\): every worker process runs one worker, serves one call and is retired/,
  );
});
