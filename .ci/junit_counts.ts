// Prints "passed failed skipped" over the leaf test cases of a Deno JUnit report: a test with steps
// is reported as well as each of its steps ("parent > step"), so parents are not counted twice.
const xml = await Deno.readTextFile(Deno.args[0]!);
const cases = (xml.match(/<testcase\b[\s\S]*?(?:\/>|<\/testcase>)/g) ?? []).map((text) => ({
  name: /name="([^"]*)"/.exec(text)?.[1] ?? "",
  text,
}));
const names = cases.map((c) => c.name);
let passed = 0, failed = 0, skipped = 0;
for (const { name, text } of cases) {
  if (names.some((other) => other.startsWith(`${name} &gt; `))) continue;
  if (/<(failure|error)\b/.test(text)) failed++;
  else if (/<skipped\b/.test(text)) skipped++;
  else passed++;
}
// deno-lint-ignore no-console
console.log(`${passed} ${failed} ${skipped}`);
