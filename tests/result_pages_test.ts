/**
 * Kept output's bounds, without a process: a page is readable by its owner only, for `Ttl`, and all
 * kept output together stays within `TotalBytes`, the oldest going first.
 */
import assert from "node:assert/strict";
import { ResultPages } from "../lib/result_pages.ts";

const items = (count: number, tag: string) =>
  Array.from({ length: count }, (_, i) => ({ Tag: tag, N: i, Text: "x".repeat(90) }));

Deno.test("ResultPages: a page is its owner's alone; another owner and a changed URI read nothing", () => {
  const pages = new ResultPages({ pageBytes: 1024 });
  try {
    const link = pages.keep("alice", items(30, "a"), { tool: "t", first: 5, complete: true })!;
    assert.match(link.uri, /^svc:\/\/results\/[0-9a-f-]{36}\/1$/);
    const page = pages.read("alice", link.uri)!;
    assert.ok(page.pages > 1, "30 items of about 110 bytes need several 1 KiB pages");
    assert.ok(new TextEncoder().encode(page.text).length <= 1024);
    assert.equal((JSON.parse(page.text) as { N: number }[])[0]!.N, 0);
    assert.equal(pages.read("bob", link.uri), null);
    for (
      const uri of [
        link.uri.replace(/\/1$/, `/${page.pages + 1}`),
        link.uri.replace(/\/1$/, "/0"),
        `${link.uri}/`,
        link.uri.toUpperCase(),
      ]
    ) {
      assert.equal(pages.read("alice", uri), null, uri);
    }
  } finally {
    pages.close();
  }
});

Deno.test("ResultPages: all kept output stays within TotalBytes, the oldest dropped first", () => {
  const pages = new ResultPages({ pageBytes: 4096, maxBytes: 4096, totalBytes: 10_000 });
  try {
    const links = Array.from(
      { length: 5 },
      (_, i) =>
        pages.keep("alice", items(30, `call ${i}`), { tool: "t", first: 0, complete: true })!,
    );
    const sizes = links.map((link) => link.size!);
    assert.ok(sizes.every((size) => size <= 4096), JSON.stringify(sizes));
    const readable = links.map((link) => pages.read("alice", link.uri) !== null);
    // Room for two of about 3.4 KB within 10,000 bytes: the three oldest went.
    assert.deepEqual(readable, [false, false, false, true, true]);
    const kept = links.filter((_, i) => readable[i]).reduce((sum, link) => sum + link.size!, 0);
    assert.ok(kept <= 10_000, `${kept} bytes kept`);
  } finally {
    pages.close();
  }
});

Deno.test("ResultPages: a page expires with Ttl, and MaxBytes 0 keeps nothing", async () => {
  const pages = new ResultPages({ pageBytes: 4096, ttlMs: 50 });
  const off = new ResultPages({ pageBytes: 4096, maxBytes: 0 });
  try {
    const link = pages.keep("alice", items(3, "t"), { tool: "t", first: 0, complete: true })!;
    assert.ok(pages.read("alice", link.uri)!.ttlMs <= 50);
    await new Promise((resolve) => setTimeout(resolve, 120));
    assert.equal(pages.read("alice", link.uri), null);
    assert.equal(off.keep("alice", items(3, "t"), { tool: "t", first: 0, complete: true }), null);
  } finally {
    pages.close();
    off.close();
  }
});
