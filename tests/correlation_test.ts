import assert from "node:assert/strict";
import { correlationIdFor } from "../lib/correlation.ts";

const MADE = /^\d{8}-\d{6}-[0-9a-f]{8}$/;

Deno.test("correlationIdFor() keeps a caller's printable ASCII id of up to 128 characters as given", () => {
  assert.equal(correlationIdFor("abc-123"), "abc-123");
  assert.equal(correlationIdFor("!~{}[]:/"), "!~{}[]:/");
  const longest = "x".repeat(128);
  assert.equal(correlationIdFor(longest), longest);
});

Deno.test("correlationIdFor() makes its own id for a missing, empty, long, spaced or non-ASCII one", () => {
  for (const given of [null, "", "x".repeat(129), "two words", "tab\there", "é", "line\nbreak"]) {
    const id = correlationIdFor(given);
    assert.match(id, MADE, `for ${JSON.stringify(given)}`);
  }
});

Deno.test("correlationIdFor() makes ids stamped with the current UTC second and never twice the same", () => {
  const before = new Date().toISOString();
  const ids = Array.from({ length: 1000 }, () => correlationIdFor(null));
  const after = new Date().toISOString();
  assert.equal(new Set(ids).size, ids.length);
  const stamp = (iso: string) => iso.replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  for (const id of [ids[0]!, ids.at(-1)!]) {
    const text = id.slice(0, 15);
    assert.ok(
      text >= stamp(before) && text <= stamp(after),
      `${id} between ${before} and ${after}`,
    );
  }
  // One process, one random prefix: the first four hex digits are shared, the counter differs.
  assert.equal(new Set(ids.map((id) => id.slice(16, 20))).size, 1);
});
