/**
 * Held calls cannot take the pool: a 2026-07-28 call that prompts is held with its worker leased
 * and no request open, so one API key's `Confirm: true` calls, answered by nobody, once leased
 * every worker for `UserInputTimeout` and another key's calls failed "No PowerShell worker became
 * free". A 2025-11-25 call asking its user through `elicitation/create` is held in its request,
 * keeping its worker the same way. At most half of `MaxPoolSize` calls of both eras are held at
 * once; the next one that asks fails at once. Real pwsh, real HTTP (Stateful, which serves both
 * eras).
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { eventually, fixtureConfig, modernToolCall, startHttpSvc } from "../support/harness.ts";

const KEY_M = "mallory-key-6a0c1f93d2";
const KEY_B = "bob-key-0b7e44c1a95f";

type RpcBody = { result?: Record<string, unknown>; error?: { code: number; message: string } };

/** A 2026-07-28 tools/call of a client that can answer elicitations, as the holder of `key`. */
async function modernCall(url: string, key: string, name: string, args: Record<string, unknown>) {
  const response = await modernToolCall(url, name, { arguments: args }, {
    headers: { "x-api-key": key },
  });
  return response.body as RpcBody;
}

/** A 2025-11-25 Stateful session of `key` whose user never answers (until the test ends). */
async function silentUser(url: string, key: string) {
  const client = new Client(
    { name: "silent", version: "1" },
    { capabilities: { elicitation: { form: {} } } },
  );
  let asked = 0;
  const never = Promise.withResolvers<{ action: "cancel" }>();
  client.setRequestHandler("elicitation/create", () => (asked++, never.promise));
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { "x-api-key": key } },
    }),
  );
  return {
    client,
    asked: () => asked,
    async close() {
      never.resolve({ action: "cancel" });
      await client.close();
    },
  };
}

Deno.test("security: one key's unanswered questions hold at most half the pool, in both eras; another key is served", async () => {
  const config = fixtureConfig({ UserInputTimeout: "00:00:30" });
  (config["ShellConfiguration"] as { Commands: string[] }).Commands.push("Remove-Item");
  config["McpServer"] = {
    HttpTransportMode: "Stateful",
    RunspacePool: { MaxPoolSize: 4, StopTimeout: "00:00:02", AcquisitionTimeout: "00:00:20" },
  };
  config["Authentication"] = {
    Enabled: true,
    Schemes: {
      keys: { Type: "ApiKey", Keys: { mallory: { Value: KEY_M }, bob: { Value: KEY_B } } },
    },
  };
  await using svc = await startHttpSvc({ config });
  const file = await Deno.makeTempFile({ prefix: "svc-held-" });
  const args = { Path: file, Confirm: true };
  const old = await silentUser(svc.url, KEY_M);
  try {
    // One question of each era: the 2025 one waits on its open request, the 2026 one is held.
    const asking = old.client.callTool({ name: "remove_item_path", arguments: args })
      .catch((error: Error) => error);
    // The call may wait for a worker first: 6.5 s at a load average of 14 on two cores.
    assert.ok(await eventually(() => old.asked() === 1, 30_000), "the 2025 question was asked");
    const held = await modernCall(svc.url, KEY_M, "remove_item_path", args);
    assert.equal(held.result?.["resultType"], "input_required", JSON.stringify(held));
    // Two of four workers wait: the next question of either era fails at once.
    const refused = await modernCall(svc.url, KEY_M, "remove_item_path", args);
    assert.equal(refused.result?.["isError"], true, JSON.stringify(refused));
    assert.match(
      JSON.stringify(refused.result),
      /2 calls wait for input on this server already.*McpServer:RunspacePool:MaxPoolSize/,
    );
    const second = await old.client.callTool({ name: "remove_item_path", arguments: args });
    assert.equal(second.isError, true, JSON.stringify(second));
    assert.equal(old.asked(), 1, "the second 2025 question was not sent");
    // The other half of the pool serves another key.
    const served = await modernCall(svc.url, KEY_B, "get_fixture_greeting", { Name: "bob" });
    assert.equal(served.result?.["isError"], undefined, JSON.stringify(served));
    assert.match(JSON.stringify(served.result), /bob/);
    assert.ok(await Deno.stat(file), "nothing was removed");
    await old.close();
    await asking;
  } finally {
    await old.close().catch(() => {});
    await Deno.remove(file).catch(() => {});
  }
});
