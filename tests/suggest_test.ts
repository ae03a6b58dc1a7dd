import assert from "node:assert/strict";
import { closestNames, editDistance } from "../lib/suggest.ts";

Deno.test("editDistance() counts insertions, deletions and substitutions, case-sensitively", () => {
  assert.equal(editDistance("", ""), 0);
  assert.equal(editDistance("", "abc"), 3);
  assert.equal(editDistance("abc", ""), 3);
  assert.equal(editDistance("kitten", "sitting"), 3);
  assert.equal(editDistance("flaw", "lawn"), 2);
  assert.equal(editDistance("Get", "get"), 1);
  assert.equal(editDistance("same", "same"), 0);
});

Deno.test("closestNames() ranks by distance ignoring case, then by name, and keeps the spelling of the known name", () => {
  const known = ["get_date", "get_data", "set_date", "get_process", "remove_item"];
  assert.deepEqual(closestNames("GET_DATE", known), ["get_date", "get_data", "set_date"]);
  assert.deepEqual(closestNames("get_dat", known), ["get_data", "get_date", "set_date"]);
});

Deno.test("closestNames() allows a quarter of the name's length in edits, and at least two", () => {
  // 4 letters: budget 2 edits; "abcd" -> "abxy" is 2 edits, "axyz" is 3.
  assert.deepEqual(closestNames("abcd", ["abxy", "axyz"]), ["abxy"]);
  // 16 letters: budget 4 edits.
  const typed = "MaxRequestBodyBy";
  assert.deepEqual(closestNames(typed, ["MaxRequestBodyBytes", "MinRequestHeadBytes"]), [
    "MaxRequestBodyBytes",
  ]);
  assert.deepEqual(closestNames("zzzzzzzz", ["MaxPoolSize", "MinPoolSize"]), []);
});

Deno.test("closestNames() also offers a name containing the typed one, or contained in it, after the close ones", () => {
  const known = ["Get-ChildItem", "Get-Item", "Get-Itemx"];
  // "Item" is 4 letters (budget 2): none is that close, but all three contain it, shortest first.
  assert.deepEqual(closestNames("item", known), ["Get-Item", "Get-Itemx", "Get-ChildItem"]);
  // A typed name longer than a known one that it contains.
  assert.deepEqual(closestNames("McpServerExtra", ["McpServer"]), ["McpServer"]);
  // Under three letters, containment counts for nothing.
  assert.deepEqual(closestNames("it", ["Get-ChildItem"]), []);
  // A close name still comes first.
  assert.deepEqual(closestNames("Get-Itme", known), ["Get-Item", "Get-Itemx"]);
});

Deno.test("closestNames() returns at most `limit` names, three by default, and nothing from nothing", () => {
  const known = ["aa1", "aa2", "aa3", "aa4", "aa5"];
  assert.equal(closestNames("aa0", known).length, 3);
  assert.deepEqual(closestNames("aa0", known, 1), ["aa1"]);
  assert.deepEqual(closestNames("aa0", []), []);
  assert.deepEqual(closestNames("aa0", new Set(["aa9"])), ["aa9"]);
});
