/** JSON bodies of the POST endpoints: the content type first, then the body within its bounds. */
import assert from "node:assert/strict";
import { type BodyBounds, BodyBudget } from "../lib/http_body.ts";
import { readJsonBody, requireJsonContent } from "../lib/http_json_body.ts";
import { refusal, requestTo } from "./support/http_front.ts";

const bounds = (limit = 1024): BodyBounds => ({
  limit,
  timeoutMs: 5_000,
  budget: new BodyBudget(1 << 20),
});

Deno.test("requireJsonContent() takes application/json with parameters and refuses anything else with 415", async () => {
  requireJsonContent(
    requestTo("/call", {
      body: "{}",
      headers: { "content-type": "Application/JSON; charset=utf-8" },
    }),
  );
  for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/jsonx"]) {
    const error = await refusal(() =>
      requireJsonContent(requestTo("/call", { body: "{}", headers: { "content-type": type } }))
    );
    assert.equal(error.status, 415, type);
    assert.equal(error.message, "Unsupported Media Type: Content-Type must be application/json");
  }
  const none = await refusal(() =>
    requireJsonContent(new Request("http://127.0.0.1:8080/call", { method: "POST" }))
  );
  assert.equal(none.status, 415);
});

Deno.test("readJsonBody() parses a body, refuses non-JSON with 400 -32700 and an oversized one with 413 -32600", async () => {
  assert.deepEqual(await readJsonBody(requestTo("/x", { body: { a: [1] } }), bounds(), "no"), {
    a: [1],
  });
  const notJson = await refusal(() =>
    readJsonBody(requestTo("/x", { body: "{nope" }), bounds(), "The body is not JSON")
  );
  assert.deepEqual([notJson.status, notJson.code, notJson.message], [
    400,
    -32700,
    "The body is not JSON",
  ]);
  const notText = await refusal(() =>
    readJsonBody(
      new Request("http://127.0.0.1:8080/x", { method: "POST", body: new Uint8Array([0xff]) }),
      bounds(),
      "The body is not JSON",
    )
  );
  assert.equal(notText.code, -32700, "a body that is not UTF-8 is not JSON either");
  const big = await refusal(() =>
    readJsonBody(requestTo("/x", { body: "x".repeat(2048) }), bounds(1024), "no")
  );
  assert.deepEqual([big.status, big.code], [413, -32600]);
  assert.match(big.message, /McpServer:MaxRequestBodyBytes \(1024 bytes\)/);
});
