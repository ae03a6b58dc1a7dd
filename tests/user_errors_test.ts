/**
 * What a user or client sees when they get something wrong: a stdin line that is not JSON-RPC gets
 * its JSON-RPC error at once (and a Warning in the log), a mistyped tool name gets the closest tool
 * names, and every refused call leaves an audit line.
 */
import assert from "node:assert/strict";
import { within } from "./support/deadline.ts";
import { fixtureConfig, logged, startSvc, TEST_PWSH } from "./support/harness.ts";

const root = new URL("../", import.meta.url).pathname;

Deno.test("stdio answers a line that is not JSON with -32700 and one that is not JSON-RPC with -32600", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-lines-" });
  try {
    await Deno.writeTextFile(`${dir}/appsettings.json`, JSON.stringify(fixtureConfig()));
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--quiet",
        `${root}main.ts`,
        "serve",
        "--config",
        `${dir}/appsettings.json`,
      ],
      env: { SVC_PWSH: TEST_PWSH, SVC_CACHE_DIR: `${dir}/cache`, SVC_INVOCATION_DIR: "" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(
      'not json at all\n{"jsonrpc":"2.0","id":7,"params":{}}\n{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
    ));
    const replies: Record<string, unknown>[] = [];
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    while (replies.length < 3) {
      const { value, done } = await within(reader.read(), "three replies on stdout");
      if (done) break;
      buffered += value;
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      replies.push(...lines.filter((l) => l.trim()).map((l) => JSON.parse(l)));
    }
    await writer.close();
    await reader.cancel();
    const stderr = await within(new Response(child.stderr).text(), "svc to exit");
    await child.status;
    assert.deepEqual(replies[0], {
      jsonrpc: "2.0",
      id: null,
      error: { code: -32700, message: "Parse error: the line is not JSON" },
    });
    assert.equal((replies[1] as { id: number }).id, 7);
    assert.equal((replies[1] as { error: { code: number } }).error.code, -32600);
    assert.deepEqual(replies[2], { jsonrpc: "2.0", id: 1, result: {} });
    assert.match(stderr, /WARNING stdio: Refused a 15-byte line on stdin: not JSON;/);
    assert.match(stderr, /WARNING stdio: Refused a \d+-byte line on stdin: not JSON-RPC;/);
    assert.doesNotMatch(stderr, /not json at all/, "a refused line's content is never logged");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a mistyped tool name gets the closest names, and refused calls leave an audit line", async () => {
  await using svc = await startSvc();
  await assert.rejects(
    () => svc.callTool("get_fixture_greting", { Name: "x" }),
    /Unknown tool 'get_fixture_greting'; did you mean 'get_fixture_greeting'\?/,
  );
  await assert.rejects(() => svc.callTool("no_such_thing_at_all", {}), (error: Error) => {
    assert.match(error.message, /Unknown tool 'no_such_thing_at_all'/);
    assert.doesNotMatch(error.message, /did you mean/);
    return true;
  });
  const bad = await svc.callTool("get_fixture_greeting", { Nme: "x" });
  assert.equal(bad.isError, true);
  await logged(
    svc.stderr,
    /INFO +mcp: Tool call get_fixture_greting by \S+ refused: unknown tool\./,
  );
  await logged(
    svc.stderr,
    /INFO +mcp: Tool call get_fixture_greeting \(Get-FixtureGreeting\) by \S+ refused: /,
  );
});
