import assert from "node:assert/strict";
import { isEventStream, jsonResponse, withHeader } from "../lib/http_responses.ts";

function typed(contentType: string | null): Response {
  return new Response("", contentType === null ? {} : { headers: { "content-type": contentType } });
}

Deno.test("isEventStream() reads the media type of Content-Type, its parameters and case aside", () => {
  assert.equal(isEventStream(typed("text/event-stream")), true);
  assert.equal(isEventStream(typed("text/event-stream; charset=utf-8")), true);
  assert.equal(isEventStream(typed(" Text/Event-Stream ;charset=utf-8")), true);
  assert.equal(isEventStream(typed("application/json")), false);
  // A parameter that names the type is not the type.
  assert.equal(isEventStream(typed("application/json; profile=text/event-stream")), false);
  assert.equal(isEventStream(typed("text/event-streams")), false);
  assert.equal(isEventStream(new Response(null)), false);
  assert.equal(isEventStream(jsonResponse(200, {})), false);
});

Deno.test("withHeader() keeps an event stream an event stream", () => {
  const response = withHeader(typed("text/event-stream"), "x-correlation-id", "abc");
  assert.equal(isEventStream(response), true);
  assert.equal(response.headers.get("x-correlation-id"), "abc");
});
