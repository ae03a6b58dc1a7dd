/** The one error type and the one funnel: every error answer has one shape. */
import assert from "node:assert/strict";
import { answerErrors, errorResponse, HttpError, RpcCode } from "../lib/http_errors.ts";
import { errorIn, requestTo } from "./support/http_front.ts";

Deno.test("errorResponse() answers the JSON-RPC error envelope with the error's status and headers", async () => {
  const response = errorResponse(
    new HttpError(405, "Use GET /tools", { headers: { allow: "GET" } }),
  );
  assert.equal(response.status, 405);
  assert.equal(response.headers.get("allow"), "GET");
  assert.equal(response.headers.get("content-type"), "application/json");
  assert.deepEqual(await response.json(), {
    jsonrpc: "2.0",
    id: null,
    error: { code: -32000, message: "Use GET /tools" },
  });
});

Deno.test("errorResponse() sends a code and data when the error has them", async () => {
  const result = { content: [{ type: "text", text: "bad" }], isError: true };
  const response = errorResponse(
    new HttpError(400, "bad", { code: RpcCode.invalidParams, data: result }),
  );
  assert.deepEqual(await errorIn(response), { code: -32602, message: "bad", data: result });
});

Deno.test("answerErrors() passes an answer through and answers a thrown HttpError as it says", async () => {
  const req = requestTo("/call", { body: {} });
  const ok = await answerErrors(req, "c-1", () => Promise.resolve(new Response("fine")));
  assert.equal(await ok.text(), "fine");
  const refused = await answerErrors(req, "c-1", () => {
    throw new HttpError(429, "Too many", { headers: { "retry-after": "5" } });
  });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get("retry-after"), "5");
  assert.equal((await errorIn(refused)).message, "Too many");
});

Deno.test("answerErrors() answers any other error 500 naming the correlation id, never its message", async () => {
  const req = requestTo("/call", { body: {} });
  const response = await answerErrors(req, "corr-77", () => {
    throw new TypeError("secret internal detail");
  });
  assert.equal(response.status, 500);
  const error = await errorIn(response);
  assert.deepEqual(error, {
    code: RpcCode.internalError,
    message: "Internal error; correlation id corr-77",
  });
  const rejected = await answerErrors(req, "corr-78", () => Promise.reject("not even an Error"));
  assert.equal(rejected.status, 500);
  assert.match((await errorIn(rejected)).message, /corr-78/);
});
