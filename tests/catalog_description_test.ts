import assert from "node:assert/strict";
import {
  cap,
  PARAMETER_DESCRIPTION_CAP,
  sanitize,
  TOOL_DESCRIPTION_CAP,
  toolDescription,
} from "../lib/catalog_description.ts";
import type { HelpMeta } from "../lib/worker_protocol.ts";
import { commandMeta, paramMeta } from "./support/descriptors.ts";

function help(synopsis: string | null, description: string | null = null): HelpMeta {
  return { synopsis, description, parameters: {} };
}

const twoSets = commandMeta("Get-ChildItem", [
  ["Items", [paramMeta("Path", "System.String[]")]],
  ["LiteralItems", [paramMeta("LiteralPath", "System.String[]")]],
], { module: "Microsoft.PowerShell.Management" });

Deno.test("toolDescription() prefers the help synopsis, cleaned", () => {
  const command = commandMeta("Get-Thing", [["__AllParameterSets", []]], {
    help: help("  Gets\tthe\nthing. ", "Long description."),
  });
  assert.deepEqual(toolDescription(command, null), {
    description: "Gets the thing.",
    source: "synopsis",
  });
});

Deno.test("toolDescription() skips a synopsis that is only the name or a syntax line, for the description", () => {
  for (const synopsis of ["Get-Thing", "Get-Thing [-Name <string>]", "   ", null]) {
    const command = commandMeta("Get-Thing", [["__AllParameterSets", []]], {
      help: help(synopsis, "Gets\r\n\r\nthe thing."),
    });
    assert.deepEqual(toolDescription(command, null), {
      description: "Gets\n\nthe thing.",
      source: "description",
    }, String(synopsis));
  }
});

Deno.test("toolDescription() writes a short description from the metadata when there is no help", () => {
  // Verb and noun in words, the command and the set: its arguments are in the schema beside it.
  assert.deepEqual(toolDescription(twoSets, twoSets.parameterSets[0]!), {
    description: "Get child item (Get-ChildItem, parameter set Items).",
    source: "generated",
  });
  // A command with one set, and a tool covering every set, name no set.
  const command = commandMeta("Set-Thing", [["__AllParameterSets", []]]);
  assert.equal(
    toolDescription(command, command.parameterSets[0]!).description,
    "Set thing (Set-Thing).",
  );
  assert.equal(toolDescription(twoSets, null).description, "Get child item (Get-ChildItem).");
});

Deno.test("toolDescription() falls back to the syntax line, then the name, for commands without verb and noun", () => {
  const script = commandMeta("deploy.ps1", [["__AllParameterSets", []]], {
    verb: null,
    noun: null,
  });
  script.parameterSets[0]!.syntax = "[-Target] <string>";
  assert.deepEqual(toolDescription(script, script.parameterSets[0]!), {
    description: "deploy.ps1 [-Target] <string>",
    source: "syntax",
  });
  script.parameterSets[0]!.syntax = "deploy.ps1 [-Target] <string>";
  assert.equal(
    toolDescription(script, script.parameterSets[0]!).description,
    "deploy.ps1 [-Target] <string>",
  );
  assert.deepEqual(toolDescription(script, null), {
    description: "deploy.ps1",
    source: "name",
  });
});

Deno.test("toolDescription() caps a long description at 1024 characters", () => {
  const command = commandMeta("Get-Thing", [["__AllParameterSets", []]], {
    help: help("word ".repeat(500)),
  });
  const { description } = toolDescription(command, null);
  assert.equal(TOOL_DESCRIPTION_CAP, 1024);
  assert.ok(description.length <= 1024 && description.endsWith("word…"), description.slice(-20));
});

Deno.test("sanitize() drops control characters, collapses whitespace and keeps paragraphs", () => {
  assert.equal(sanitize("a\u0007b\u001bc"), "abc");
  assert.equal(sanitize("one\ttwo\vthree\ffour"), "one two three four");
  assert.equal(sanitize("line one\nline two"), "line one line two");
  assert.equal(
    sanitize("para one\r\n  \r\npara two\n\n\n\npara three"),
    "para one\n\npara two\n\npara three",
  );
  assert.equal(sanitize("\n\n  \n"), "");
  assert.equal(sanitize("ünïcødé — kept"), "ünïcødé — kept");
});

Deno.test("cap() cuts at a word boundary past half the length, else mid-word, ending with …", () => {
  assert.equal(cap("short", 10), "short");
  assert.equal(cap("exactly10!", 10), "exactly10!");
  assert.equal(cap("alpha beta gamma delta", 15), "alpha beta…");
  // No space in the second half: cut mid-word rather than lose half the text.
  assert.equal(cap("a bcdefghijklmnopqrstuvwxyz", 10), "a bcdefgh…");
  assert.ok(cap("x".repeat(600), PARAMETER_DESCRIPTION_CAP).length === PARAMETER_DESCRIPTION_CAP);
});
