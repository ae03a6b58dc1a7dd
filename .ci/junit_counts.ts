// Prints "passed failed skipped" counted over the leaf <testcase> elements of a Deno JUnit report.
const xml = await Deno.readTextFile(Deno.args[0]!);
let passed = 0, failed = 0, skipped = 0;
for (const testcase of xml.match(/<testcase\b[\s\S]*?(?:\/>|<\/testcase>)/g) ?? []) {
  if (/<(failure|error)\b/.test(testcase)) failed++;
  else if (/<skipped\b/.test(testcase)) skipped++;
  else passed++;
}
// deno-lint-ignore no-console
console.log(`${passed} ${failed} ${skipped}`);
