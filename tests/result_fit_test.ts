import assert from "node:assert/strict";
import { firstItemBudget, fitOutput, shorten } from "../lib/result_fit.ts";

const bytes = (text: string) => new TextEncoder().encode(text).length;

Deno.test("fitOutput() returns output within the cap as it is, with no notice", () => {
  const output = [{ a: 1 }, "two", null];
  const fitted = fitOutput(output, 1024);
  const json = '[{"a":1},"two",null]';
  assert.deepEqual(fitted, { text: json, json, kept: output, truncated: null, notice: null });
  assert.deepEqual(fitOutput([], 1024), {
    text: "[]",
    json: "[]",
    kept: [],
    truncated: null,
    notice: null,
  });
  // Exactly at the cap still fits.
  const exact = ["x".repeat(1024 - 4)];
  assert.equal(fitOutput(exact, 1024).truncated, null);
});

Deno.test("fitOutput() keeps whole items from the start and says how many were dropped", () => {
  const output = Array.from({ length: 50 }, (_, i) => ({ i, text: "y".repeat(40) }));
  const fitted = fitOutput(output, 1024);
  const [json, notice] = fitted.text.split("\n");
  assert.deepEqual(JSON.parse(json!), fitted.kept);
  assert.deepEqual(fitted.kept, output.slice(0, fitted.kept.length));
  assert.ok(fitted.kept.length > 0 && fitted.kept.length < 50);
  assert.ok(bytes(fitted.text) <= 1024, `${bytes(fitted.text)} bytes`);
  const total = bytes(JSON.stringify(output));
  assert.equal(
    notice,
    `[svc: output truncated: ${total} bytes exceed ShellConfiguration:MaxResultBytes (1024); the first ${fitted.kept.length} of 50 item(s) are kept whole, ${
      50 - fitted.kept.length
    } dropped. Ask for less with _MaxResults or _RequestedProperties.]`,
  );
  assert.deepEqual(fitted.truncated, {
    bytes: total,
    limit: 1024,
    items: 50,
    keptItems: fitted.kept.length,
    shortenedFirst: false,
  });
});

Deno.test("fitOutput() shortens a first item too large to keep, and drops the rest", () => {
  const big = { name: "first", body: "z".repeat(5000) };
  const fitted = fitOutput([big, "second"], 1024);
  assert.equal(fitted.kept.length, 1);
  assert.ok(bytes(fitted.text) <= 1024, `${bytes(fitted.text)} bytes`);
  const kept = fitted.kept[0] as { name: string; body: string };
  assert.equal(kept.name, "first", "short strings are kept");
  assert.match(kept.body, /^z+\n…\[svc: \d+ characters cut\]…\nz+$/);
  assert.match(
    fitted.text,
    /the first item was shortened to fit and 1 item\(s\) after it were dropped\. Ask for less/,
  );
  assert.equal(fitted.truncated?.shortenedFirst, true);
  assert.equal(fitted.truncated?.keptItems, 1);
  // A single item: no dropped items to speak of.
  assert.match(fitOutput([big], 1024).text, /the first item was shortened to fit\. Ask for less/);
});

Deno.test("fitOutput() of output the worker cut: counts from the cut, size as a lower bound", () => {
  const sent = Array.from({ length: 30 }, (_, i) => ({ i, text: "y".repeat(40) }));
  // Even when what arrived fits, the worker's cut says the output was larger.
  const fitted = fitOutput(sent.slice(0, 3), 1024, {
    items: 5000,
    bytes: 250_000,
    shortenedFirst: false,
  });
  assert.deepEqual(fitted.kept, sent.slice(0, 3));
  assert.deepEqual(fitted.truncated, {
    bytes: 250_000,
    atLeast: true,
    limit: 1024,
    items: 5000,
    keptItems: 3,
    shortenedFirst: false,
  });
  assert.ok(
    fitted.text.endsWith(
      "[svc: output truncated: at least 250000 bytes exceed ShellConfiguration:MaxResultBytes (1024); the first 3 of 5000 item(s) are kept whole, 4997 dropped. Ask for less with _MaxResults or _RequestedProperties.]",
    ),
  );
  // What arrived and is cut again here: svc's own count of kept items, the worker's of all items.
  const again = fitOutput(sent, 1024, { items: 5000, bytes: 250_000, shortenedFirst: false });
  assert.ok(again.kept.length < 30 && bytes(again.text) <= 1024);
  assert.equal(again.truncated?.items, 5000);
});

Deno.test("fitOutput() keeps a first item the worker shortened as it is, and says it was shortened", () => {
  const cut = `${"a".repeat(200)}\n…[svc: 99800 characters cut]…\n${"b".repeat(200)}`;
  assert.ok(bytes(JSON.stringify(cut)) <= firstItemBudget(1024));
  const fitted = fitOutput([cut], 1024, { items: 3, bytes: 100_010, shortenedFirst: true });
  assert.deepEqual(fitted.kept, [cut], "not cut a second time: the worker's count stays exact");
  assert.equal(fitted.truncated?.shortenedFirst, true);
  assert.match(
    fitted.text,
    /at least 100010 bytes exceed .*; the first item was shortened to fit and 2 item\(s\) after it were dropped\./,
  );
});

Deno.test("shorten() keeps a string's head and tail and says how many characters went", () => {
  const text = `${"a".repeat(500)}${"b".repeat(500)}`;
  const cut = shorten(text, 300) as string;
  assert.ok(bytes(JSON.stringify(cut)) <= 300, `${bytes(JSON.stringify(cut))} bytes`);
  assert.ok(cut.startsWith("aaa") && cut.endsWith("bbb"));
  const [, dropped] = /\[svc: (\d+) characters cut\]/.exec(cut)!;
  const kept = cut.replace(/\n…\[svc: \d+ characters cut\]…\n/, "");
  assert.equal(Number(dropped) + kept.length, 1000);
  assert.equal(shorten("short", 300), "short");
});

Deno.test("shorten() fits text whose JSON escapes or UTF-8 make bytes outnumber characters", () => {
  for (const unit of ['"', "\n", "é", "€", "\u0001"]) {
    const text = unit.repeat(2000);
    const cut = shorten(text, 600) as string;
    assert.ok(
      bytes(JSON.stringify(cut)) <= 600,
      `${JSON.stringify(unit)}: ${bytes(JSON.stringify(cut))} bytes`,
    );
    // The smallest cap leaves room for the notice even then.
    assert.ok(bytes(fitOutput([text], 1024).text) <= 1024, JSON.stringify(unit));
  }
});

Deno.test("shorten() keeps at least 64 characters of a string, even over a tiny budget", () => {
  const cut = shorten("\u0001".repeat(2000), 100) as string;
  assert.equal(cut.replace(/\n…\[svc: \d+ characters cut\]…\n/, "").length, 64);
  assert.match(cut, /\[svc: 1936 characters cut\]/);
});

Deno.test("shorten() never splits a surrogate pair", () => {
  const text = "😀".repeat(1000);
  const cut = shorten(text, 300) as string;
  assert.ok(!/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(cut));
  assert.ok(cut.startsWith("😀") && cut.endsWith("😀"));
});

Deno.test("shorten() cuts the long strings of nested objects and arrays and keeps their shape", () => {
  const value = { id: 7, list: ["x".repeat(3000), "ok"], inner: { note: "y".repeat(3000) } };
  const cut = shorten(value, 600) as typeof value;
  assert.ok(bytes(JSON.stringify(cut)) <= 600, `${bytes(JSON.stringify(cut))} bytes`);
  assert.equal(cut.id, 7);
  assert.equal(cut.list[1], "ok");
  assert.match(cut.list[0]!, /characters cut/);
  assert.match(cut.inner.note, /characters cut/);
});

Deno.test("shorten() turns a value with too many short strings into its JSON text, cut", () => {
  const many = Array.from({ length: 500 }, (_, i) => `item-${i}`);
  const cut = shorten(many, 300);
  assert.equal(typeof cut, "string");
  assert.ok((cut as string).startsWith('["item-0"'));
  assert.ok(bytes(JSON.stringify(cut)) <= 300);
});
