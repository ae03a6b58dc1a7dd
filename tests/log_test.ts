/** Logging redacts secret-looking fields in both formats: top-level, nested and in the message. */
import assert from "node:assert/strict";

const root = new URL("../", import.meta.url).pathname;

async function logged(format: "text" | "json"): Promise<string> {
  const script = `
    import { configureLogging, flushLogging, logger } from "${root}lib/log.ts";
    await configureLogging({ format: "${format}" });
    logger("t").info("Signed in with {Token} as {Name}.", {
      Token: "tok-s3cret-1", Name: "ann", ApiKey: "key-s3cret-2", Nested: { password: "pw-s3cret-3" },
    });
    await flushLogging();
  `;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--config", `${root}deno.json`, script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  assert.equal(new TextDecoder().decode(output.stdout), "", "nothing on stdout");
  return new TextDecoder().decode(output.stderr);
}

for (const format of ["text", "json"] as const) {
  Deno.test(`log (${format}): a secret field is redacted at the top level, nested and in the message`, async () => {
    const line = await logged(format);
    assert.doesNotMatch(line, /s3cret/, line);
    assert.match(line, /Signed in with \[redacted\] as ann\./);
    assert.match(line, /ApiKey"?[=:]"?\[redacted\]/);
    assert.match(line, /"password":"\[redacted\]"/);
  });
}
