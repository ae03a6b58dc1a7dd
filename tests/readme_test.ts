/**
 * The README's HTTP cookbook works as written: each curl line runs against a live svc (the address
 * replaced by the test server's) and gets a 2xx JSON answer; the Sha256 recipe gives the digest svc
 * computes for the same key.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { outputWithin } from "./support/deadline.ts";
import { startHttpSvc } from "./support/harness.ts";

const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));

function block(marker: string): string {
  const match = new RegExp(`<!-- ${marker} -->\\s*\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(readme);
  assert.ok(match, `README has no sh block after '<!-- ${marker} -->'`);
  return match[1]!;
}

/** The block's commands: comments dropped, backslash-continued lines joined. */
function commands(text: string): string[] {
  return text.replace(/\\\n\s*/g, "").split("\n").filter((l) => l.trim() && !l.startsWith("#"));
}

Deno.test("every curl line of the README cookbook gets a 2xx JSON answer from a live svc", async () => {
  // The cookbook is written for the embedded default configuration, as the README says.
  const embedded = JSON.parse(
    await Deno.readTextFile(new URL("../appsettings.json", import.meta.url)),
  );
  await using svc = await startHttpSvc({ config: embedded });
  const lines = commands(block("cookbook"));
  assert.ok(lines.length >= 5, `found ${lines.length} commands`);
  for (const line of lines) {
    const command = line.replaceAll("http://127.0.0.1:8080", svc.url)
      .replace(/^curl -s /, "curl -s -w '\\n%{http_code}' ");
    const run = await outputWithin("bash", {
      args: ["-c", command],
      stdout: "piped",
      stderr: "piped",
    }, line);
    const out = new TextDecoder().decode(run.stdout).trim();
    const status = Number(out.slice(out.lastIndexOf("\n") + 1));
    const body = out.slice(0, out.lastIndexOf("\n"));
    assert.ok(status >= 200 && status < 300, `${line}\n=> ${status} ${body.slice(0, 300)}`);
    const parsed = JSON.parse(body);
    assert.ok(parsed.error === undefined && !parsed.isError, `${line}\n=> ${body.slice(0, 300)}`);
  }
});

Deno.test("the README's Sha256 recipe gives the digest svc computes for an API key", async () => {
  const [line] = commands(block("cookbook-sha256"));
  const run = await outputWithin("bash", { args: ["-c", line!], stdout: "piped" }, line!);
  const digest = new TextDecoder().decode(run.stdout).trim();
  assert.equal(digest, createHash("sha256").update("my-secret-key").digest("hex"));
});
