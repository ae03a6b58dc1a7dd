/**
 * How a prompt command's output becomes messages, and a prompt argument's string the value its
 * parameter takes, without a process: the rules of docs/mcp-prompts.md, case by case.
 */
import assert from "node:assert/strict";
import { argumentValue, messagesOf } from "../lib/mcp_prompt.ts";

const prompt = { name: "p" };

Deno.test("messagesOf(): a string is a user message, a role object one message per content block", () => {
  assert.deepEqual(
    messagesOf(prompt, [
      "Hi",
      { Role: "Assistant", Content: "Hello" },
      { role: "user", content: [{ Type: "image", Data: "AAAA", MimeType: "image/png" }, "more"] },
      { role: "user", content: { type: "resource_link", uri: "file:///a", name: "a" } },
      { role: "user", content: { type: "resource", resource: { uri: "x://b", blob: "AAAA" } } },
      42,
      { name: "no role" },
    ]),
    [
      { role: "user", content: { type: "text", text: "Hi" } },
      { role: "assistant", content: { type: "text", text: "Hello" } },
      { role: "user", content: { type: "image", data: "AAAA", mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "more" } },
      { role: "user", content: { type: "resource_link", uri: "file:///a", name: "a" } },
      { role: "user", content: { type: "resource", resource: { uri: "x://b", blob: "AAAA" } } },
      { role: "user", content: { type: "text", text: "42" } },
      { role: "user", content: { type: "text", text: '{"name":"no role"}' } },
    ],
  );
});

Deno.test("messagesOf(): an object with a role that is no message is refused, saying which item and why", () => {
  assert.match(
    messagesOf(prompt, ["a", { role: "system", content: "x" }]) as string,
    /^Prompt 'p' wrote output item 2 with a role, which is not a message: its role must be 'user' or 'assistant', not "system"$/,
  );
  assert.match(
    messagesOf(prompt, [{ role: "user", content: { type: "video", data: "x" } }]) as string,
    /a content block's type must be one of text, image, audio, resource, resource_link, not "video"/,
  );
  assert.match(
    messagesOf(prompt, [{
      role: "user",
      content: { type: "resource", resource: { uri: 1 } },
    }]) as string,
    /a resource block needs a resource with a uri and a text or a blob/,
  );
  assert.match(
    messagesOf(prompt, [{ role: "user", content: [] }]) as string,
    /its content is empty/,
  );
  assert.equal(messagesOf(prompt, []), "Prompt 'p' wrote no output, so it has no message");
});

Deno.test("argumentValue(): a string becomes what its parameter's schema takes, else stays a string", () => {
  assert.equal(argumentValue({ schema: { type: "boolean" } }, "TRUE"), true);
  assert.equal(argumentValue({ schema: { type: "boolean" } }, "no"), "no");
  assert.equal(argumentValue({ schema: { type: "integer" } }, "12"), 12);
  assert.equal(argumentValue({ schema: { type: "integer" } }, " "), " ");
  assert.equal(argumentValue({ schema: { type: "number" } }, "1e400"), "1e400");
  assert.deepEqual(argumentValue({ schema: { type: "array", items: { type: "integer" } } }, "3"), [
    3,
  ]);
  assert.equal(argumentValue({ schema: { type: "string" } }, "$(x)"), "$(x)");
});
