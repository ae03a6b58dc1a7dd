import assert from "node:assert/strict";
import { parse, type ParseError } from "jsonc-parser";
import { parseJsoncFast } from "../lib/jsonc.ts";
import { defaultConfigText } from "../lib/config_template.ts";

/** What the full JSONC parser makes of a text, with the options svc reads configuration with. */
function full(text: string): { value: unknown; ok: boolean } {
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  return { value, ok: errors.length === 0 };
}

Deno.test("parseJsoncFast() reads comments and trailing commas as the full JSONC parser does", () => {
  const texts = [
    '{"a": 1}',
    '{"a": [1, 2,], }',
    "[1, /* a comment */ ]",
    '{"a": "x // not a comment", // a comment\n "b": "/* nor this */",}',
    '{"a": "an escaped \\" quote //",}',
    '// head\n{\n  "a": { "b": [ "c", ], }, // tail\n}\n',
    '{"a": 1}// end without a newline',
    '{"a": 1,/* between */}',
    '{"a": "\\\\", "b": 2,}',
    '{"a": "ünïcødé, \\u00e9",\r\n "b": null,\r\n}',
    defaultConfigText(),
  ];
  for (const text of texts) {
    const expected = full(text);
    assert.ok(expected.ok, `the full parser accepts ${JSON.stringify(text)}`);
    assert.deepEqual(parseJsoncFast(text), expected.value, text);
  }
});

Deno.test("parseJsoncFast() gives up on whatever the full parser refuses", () => {
  const texts = [
    "{,}",
    "[1,,]",
    "[,1]",
    '{"a": 1 /* never closed',
    '{"a": 1 / 2}',
    "{ a: 1 }",
    '{"a": "open }',
    '{"a": 1}\n{}',
  ];
  for (const text of texts) {
    assert.equal(full(text).ok, false, `the full parser refuses ${JSON.stringify(text)}`);
    assert.equal(parseJsoncFast(text), undefined, text);
  }
});

Deno.test("parseJsoncFast() agrees with the full parser on comment and comma corner cases", () => {
  const texts = [
    "[1, // a trailing comma, then a comment\n]",
    "[1, /* a */ /* b */ ]",
    '{"a": 1, /* a comment with // inside */ }',
    '{"a": 1 // a comment with /* inside\n}',
    "/* a /* nested-looking */ [1]",
    '{"a" /* between key and colon */ : 1}',
    '{"a": 1}\r\n// CRLF file\r\n',
    '{"a": "\\\\"// after an escaped backslash\n}',
    '{"url": "http://example.com/*not a comment*/"}',
    '{"a": [],}',
    '{"a": {},}',
    "[[1,],[2,],]",
    "[1,]]",
    '{"a": 1,,}',
    '{"a": 1},',
    "[1 // never closed array\n",
    "// only a comment",
    "",
    '{"a": 1} /* */ ',
    "[1,/**/,2]",
  ];
  for (const text of texts) {
    const expected = full(text);
    const fast = parseJsoncFast(text);
    if (expected.ok) assert.deepEqual(fast, expected.value, `accepted: ${JSON.stringify(text)}`);
    else assert.equal(fast, undefined, `refused: ${JSON.stringify(text)}`);
  }
});
