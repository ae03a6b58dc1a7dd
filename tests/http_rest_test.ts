/** The REST routes: GET /tools, POST /call and how a call's outcome maps to a status. */
import assert from "node:assert/strict";
import type { Principal } from "../lib/auth.ts";
import { BodyBudget } from "../lib/http_body.ts";
import { listTools, postCall, type RestOptions } from "../lib/http_rest.ts";
import { PoolError } from "../lib/pool_contract.ts";
import { arg, toolOf } from "./support/descriptors.ts";
import {
  ANONYMOUS_CALLER,
  keyCaller,
  mcpOptionsOf,
  refusal,
  requestTo,
  runnerOf,
  settingsOf,
} from "./support/http_front.ts";

const settings = await settingsOf();
const greeting = toolOf("get_greeting", [arg("Name", { type: "string" }, { required: true })]);
const secret = toolOf("set_secret", []);

function restOf(withWorker?: Parameters<typeof runnerOf>[1], limit = 4096): RestOptions {
  return {
    // Only callers holding `admin` may see set_secret.
    mcp: mcpOptionsOf(
      settings,
      runnerOf([greeting, secret], withWorker),
      (principal, tool) => tool.name !== "set_secret" || principal.roles.includes("admin"),
    ),
    bodyBounds: { limit, timeoutMs: 5_000, budget: new BodyBudget(1 << 20) },
  };
}

const call = (body: unknown, principal: Principal = ANONYMOUS_CALLER, rest = restOf()) =>
  postCall(requestTo("/call", { body }), principal, rest);

Deno.test("GET /tools lists the tools the caller may call; another method is 405", async () => {
  const names = async (principal: Principal) =>
    ((await (await listTools(requestTo("/tools"), principal, restOf())).json()).tools as {
      name: string;
    }[]).map((t) => t.name);
  assert.deepEqual(await names(ANONYMOUS_CALLER), ["get_greeting"]);
  assert.deepEqual(await names(keyCaller("root", ["admin"])), ["get_greeting", "set_secret"]);
  const post = await refusal(
    listTools(requestTo("/tools", { body: {} }), ANONYMOUS_CALLER, restOf()),
  );
  assert.deepEqual([post.status, post.message, post.headers.allow], [405, "Use GET /tools", "GET"]);
});

Deno.test("POST /call refuses a wrong method, content type, body or shape before calling", async () => {
  const get = await refusal(postCall(requestTo("/call"), ANONYMOUS_CALLER, restOf()));
  assert.deepEqual([get.status, get.headers.allow], [405, "POST"]);
  const text = await refusal(
    postCall(
      requestTo("/call", { body: "{}", headers: { "content-type": "text/plain" } }),
      ANONYMOUS_CALLER,
      restOf(),
    ),
  );
  assert.equal(text.status, 415);
  const notJson = await refusal(
    postCall(
      requestTo("/call", { body: "{", headers: { "content-type": "application/json" } }),
      ANONYMOUS_CALLER,
      restOf(),
    ),
  );
  assert.deepEqual([notJson.status, notJson.code], [400, -32700]);
  assert.match(notJson.message, /must be JSON/);
  for (const body of [{ arguments: {} }, { tool: "x", arguments: [] }, null]) {
    const shape = await refusal(call(body));
    assert.equal(shape.status, 400, JSON.stringify(body));
    assert.match(shape.message, /'tool' is missing or 'arguments' is not an object/);
  }
  const big = await refusal(call({ tool: "get_greeting", pad: "x".repeat(8192) }));
  assert.equal(big.status, 413);
});

Deno.test("POST /call maps outcomes: unknown or hidden tool 404, bad arguments 400 with the result", async () => {
  const unknown = await refusal(call({ tool: "get_greting", arguments: {} }));
  assert.deepEqual([unknown.status, unknown.code], [404, -32602]);
  assert.equal(unknown.message, "Unknown tool 'get_greting'; did you mean 'get_greeting'?");
  const hidden = await refusal(call({ tool: "set_secret", arguments: {} }));
  assert.equal(hidden.status, 404, "a tool the caller may not call is unknown to them");
  const invalid = await refusal(call({ tool: "get_greeting", arguments: {} }));
  assert.deepEqual([invalid.status, invalid.code], [400, -32602]);
  assert.match(invalid.message, /'Name'/);
  assert.equal((invalid.data as { isError: boolean }).isError, true);
});

Deno.test("POST /call is 503 with Retry-After when no worker frees up, and 200 isError when the run fails", async () => {
  const exhausted = restOf(() => Promise.reject(new PoolError("EXHAUSTED", "No worker", 3)));
  const busy = await refusal(
    call({ tool: "get_greeting", arguments: { Name: "a" } }, undefined, exhausted),
  );
  assert.equal(busy.status, 503);
  assert.equal(busy.headers["retry-after"], "3");
  assert.equal(busy.message, "No worker");
  assert.equal((busy.data as { isError: boolean }).isError, true);
  const failing = restOf(() => Promise.reject(new Error("the worker exited")));
  const response = await call(
    { tool: "get_greeting", arguments: { Name: "a" } },
    undefined,
    failing,
  );
  assert.equal(response.status, 200);
  const result = await response.json();
  assert.equal(result.isError, true);
  assert.match(JSON.stringify(result.content), /the worker exited/);
});
