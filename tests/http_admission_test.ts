/** The cap on requests in flight: past it 503 with Retry-After in svc's error shape; health passes. */
import assert from "node:assert/strict";
import { RequestLimiter } from "../lib/http_admission.ts";
import { errorIn, requestTo } from "./support/http_front.ts";

Deno.test("RequestLimiter refuses past its cap until a request is answered; health is never refused", async () => {
  const limiter = new RequestLimiter(1);
  let finish!: () => void;
  const held = new Promise<void>((resolve) => finish = resolve);
  const first = limiter.handle(requestTo("/call", { body: {} }), async () => {
    await held;
    return new Response("first");
  });
  const refused = await limiter.handle(requestTo("/tools"), () => new Response("second"));
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get("retry-after"), "1");
  assert.equal(
    (await errorIn(refused)).message,
    "Too many requests in flight: at most 1 (McpServer:MaxConcurrentRequests); try again shortly",
  );
  const health = await limiter.handle(requestTo("/health/ready"), () => new Response("up"));
  assert.equal(await health.text(), "up");
  finish();
  assert.equal(await (await first).text(), "first");
  const after = await limiter.handle(requestTo("/tools"), () => new Response("again"));
  assert.equal(await after.text(), "again");
});
