import assert from "node:assert/strict";
import { annotationsFor } from "../lib/catalog_annotations.ts";

function hints(command: string, verb: string | null = null): string {
  const a = annotationsFor(command, verb);
  return [
    a.readOnlyHint ? "read-only" : null,
    a.destructiveHint ? "destructive" : null,
    a.idempotentHint ? "idempotent" : null,
  ].filter(Boolean).join(" ") || "additive";
}

Deno.test("annotationsFor() marks read-only verbs read-only and idempotent", () => {
  for (const verb of ["Get", "Find", "Search", "Show", "Test", "Measure", "Resolve", "Compare"]) {
    assert.equal(hints(`${verb}-Thing`, verb), "read-only idempotent", verb);
  }
});

Deno.test("annotationsFor() marks additive verbs neither destructive nor idempotent", () => {
  for (const verb of ["New", "Add", "Export", "ConvertTo", "Install", "Send", "Backup"]) {
    assert.equal(hints(`${verb}-Thing`, verb), "additive", verb);
  }
});

Deno.test("annotationsFor() marks Set-like verbs destructive and idempotent", () => {
  for (const verb of ["Set", "Update", "Enable", "Disable", "Grant", "Revoke", "Protect"]) {
    assert.equal(hints(`${verb}-Thing`, verb), "destructive idempotent", verb);
  }
});

Deno.test("annotationsFor() takes every other verb, unknown ones included, as destructive", () => {
  for (const verb of ["Remove", "Stop", "Invoke", "Start", "Clear", "Frobnicate"]) {
    assert.equal(hints(`${verb}-Thing`, verb), "destructive", verb);
  }
});

Deno.test("annotationsFor() reads the verb from the command name when discovery gave none", () => {
  assert.equal(hints("Get-Thing"), "read-only idempotent");
  assert.equal(hints("Remove-Thing"), "destructive");
  assert.equal(hints("prompt"), "destructive", "a function without a verb is treated as unsafe");
  // The discovered verb wins over the name.
  assert.equal(hints("Get-Thing", "Remove"), "destructive");
});

Deno.test("annotationsFor() titles the tool with the command and always says it reaches outside", () => {
  const a = annotationsFor("Get-Date", "Get");
  assert.equal(a.title, "Get-Date");
  assert.equal(a.openWorldHint, true);
  assert.equal(annotationsFor("Remove-Item", "Remove").openWorldHint, true);
});
