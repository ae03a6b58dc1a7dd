/**
 * URI templates of configured resources (RFC 6570 level 1): what parses, what a URI gives each
 * variable, and what never matches.
 */
import assert from "node:assert/strict";
import { MAX_URI_LENGTH, parseUriTemplate, type UriTemplate } from "../lib/resource_template.ts";

function parsed(text: string): UriTemplate {
  const template = parseUriTemplate(text);
  assert.ok(typeof template !== "string", String(template));
  return template;
}

Deno.test("a variable takes one path segment, percent-decoded", () => {
  const template = parsed("greet://people/{Name}/at/{Place}.txt");
  assert.deepEqual(template.variables, ["Name", "Place"]);
  assert.deepEqual(template.match("greet://people/Ada%20L/at/home.txt"), {
    Name: "Ada L",
    Place: "home",
  });
  assert.deepEqual(template.match("greet://people/%24(whoami)/at/x.txt")?.Name, "$(whoami)");
  for (
    const uri of ["greet://people/a/b/at/x.txt", "greet://people//at/x.txt", "greet://people/a"]
  ) {
    assert.equal(template.match(uri), null, uri);
  }
  // A bad escape matches nothing, rather than passing the raw text.
  assert.equal(template.match("greet://people/%E0%A4%A/at/x.txt"), null);
});

Deno.test("literal text is literal, regular-expression characters included", () => {
  const template = parsed("x://a.b+(c)/{V}");
  assert.deepEqual(template.match("x://a.b+(c)/1"), { V: "1" });
  assert.equal(template.match("x://aXb+(c)/1"), null);
  assert.deepEqual(parsed("plain://no/vars").match("plain://no/vars"), {});
});

Deno.test("what level 1 does not have, or that cannot bind a parameter, is refused", () => {
  const refusals: [string, RegExp][] = [
    ["x://{+path}", /'\{\+path\}' is not a level-1 variable/],
    ["x://{a,b}", /'\{a,b\}' is not a level-1 variable/],
    ["x://{1a}", /not a level-1 variable/],
    ["x://{A}/{a}", /variable '\{a\}' appears twice/],
    ["x://{A}{B}", /'\{A\}\{B\}': variables need text between them/],
    ["x://{A", /a brace is not part of a \{variable\}/],
    ["x://A}", /a brace is not part of a \{variable\}/],
  ];
  for (const [text, message] of refusals) {
    const result = parseUriTemplate(text);
    assert.equal(typeof result, "string", text);
    assert.match(result as string, message, text);
  }
});

Deno.test("a URI past the length bound matches nothing, and a long one matches fast", () => {
  const template = parsed("x://{A}-{B}-{C}/end");
  assert.equal(template.match(`x://${"a".repeat(MAX_URI_LENGTH)}-b-c/end`), null);
  // What made a backtracking matcher take a second: separators everywhere, no match at the end.
  const started = performance.now();
  assert.equal(template.match(`x://${"a-".repeat(MAX_URI_LENGTH / 2 - 6)}/nope`), null);
  assert.ok(performance.now() - started < 100, "matching reads the URI once");
});

Deno.test("a variable ends where the text after it first occurs", () => {
  assert.deepEqual(parsed("x://{A}-{B}").match("x://a-b-c"), { A: "a", B: "b-c" });
  assert.deepEqual(parsed("x://{A}.txt").match("x://a.b.txt"), { A: "a.b" });
  assert.equal(parsed("x://{A}-{B}").match("x://a-"), null);
});
