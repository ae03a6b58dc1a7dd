/**
 * Calls waiting for their users cannot take the pool (issue 32 review): a 2026-07-28 call that
 * prompts is held with its worker leased and no request open, so one API key's `Confirm: true`
 * calls, answered by nobody, once leased every worker for `UserInputTimeout` and another key's
 * calls failed "No PowerShell worker became free". At most half of `MaxPoolSize` calls wait at
 * once; the next one that asks fails at once, saying why. Real pwsh, real HTTP.
 */
import assert from "node:assert/strict";
import { fixtureConfig, post, startHttpSvc } from "../support/harness.ts";

const KEY_M = "mallory-key-6a0c1f93d2";
const KEY_B = "bob-key-0b7e44c1a95f";

type RpcBody = { result?: Record<string, unknown>; error?: { code: number; message: string } };

/** A 2026-07-28 tools/call of a client that can answer elicitations, as the holder of `key`. */
async function modernCall(url: string, key: string, name: string, args: Record<string, unknown>) {
  const response = await post(`${url}/mcp`, {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: {
      name,
      arguments: args,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
        "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
      },
    },
  }, {
    accept: "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": name,
    "x-api-key": key,
  });
  return response.body as RpcBody;
}

Deno.test("security: one key's unanswered confirmations hold at most half the pool; another key is served", async () => {
  const config = fixtureConfig({ UserInputTimeout: "00:00:30" });
  (config["ShellConfiguration"] as { Commands: string[] }).Commands.push("Remove-Item");
  config["McpServer"] = {
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
  try {
    const confirm = () =>
      modernCall(svc.url, KEY_M, "remove_item_path", { Path: file, Confirm: true });
    const held = await Promise.all([confirm(), confirm()]);
    for (const h of held) {
      assert.equal(h.result?.["resultType"], "input_required", JSON.stringify(h));
    }
    const refused = await confirm();
    assert.equal(refused.result?.["isError"], true, JSON.stringify(refused));
    assert.match(
      JSON.stringify(refused.result),
      /2 calls wait for input on this server already.*McpServer:RunspacePool:MaxPoolSize/,
    );
    const served = await modernCall(svc.url, KEY_B, "get_fixture_greeting", { Name: "bob" });
    assert.equal(served.result?.["isError"], undefined, JSON.stringify(served));
    assert.match(JSON.stringify(served.result), /bob/);
    assert.ok(await Deno.stat(file), "nothing was removed");
  } finally {
    await Deno.remove(file).catch(() => {});
  }
});
