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
