/**
 * Static gate for the project's PowerShell files, run by `deno task check`. It needs nothing outside
 * the repository:
 *
 * 1. every file parses with the tree-sitter PowerShell grammar (npm `tree-sitter-powershell`);
 * 2. every `-Parameter` given to a PowerShell 7.4 built-in cmdlet exists on it (name, alias,
 *    unambiguous prefix or common parameter), per `tests/fixtures/cmdlets-7.4.json`;
 * 3. where a real pwsh is found (`SVC_TEST_PWSH`, then `pwsh` on `PATH`), PowerShell's own parser
 *    reads every file too, since the grammar is an approximation of it.
 *
 * Usage: `deno run -A scripts/ps_check.ts [file ...]` (default: lib/host.ps1, lib/host/*.ps1 and every .ps1/.psm1
 * under tests/fixtures and bench/fixtures). Exit 0 when clean, 1 on any problem.
 *
 * @module
 */
import { createRequire } from "node:module";
import { Language, type Node, Parser } from "web-tree-sitter";
import "tree-sitter-powershell/package.json" with { type: "json" };

const root = new URL("../", import.meta.url);
const COMMON = [
  "Debug",
  "ErrorAction",
  "ErrorVariable",
  "InformationAction",
  "InformationVariable",
  "OutVariable",
  "OutBuffer",
  "PipelineVariable",
  "ProgressAction",
  "Verbose",
  "WarningAction",
  "WarningVariable",
  "WhatIf",
  "Confirm",
];

interface CmdletFacts {
  parameters: { name: string; aliases: string[] }[];
}

async function defaultFiles(): Promise<string[]> {
  const files = ["lib/host.ps1"];
  for await (const entry of Deno.readDir(new URL("lib/host/", root))) {
    if (/\.ps1$/i.test(entry.name)) files.push(`lib/host/${entry.name}`);
  }
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(new URL(dir, root))) {
      const path = `${dir}${entry.name}`;
      if (entry.isDirectory) await walk(`${path}/`);
      else if (/\.ps(m?)1$/i.test(entry.name)) files.push(path);
    }
  };
  await walk("tests/fixtures/");
  await walk("bench/fixtures/");
  return files.sort();
}

function walk(node: Node, visit: (node: Node) => void): void {
  visit(node);
  for (const child of node.children) if (child) walk(child, visit);
}

/** Problems found by the grammar and the parameter check, as `file:line:col: message` lines. */
function treeSitterProblems(
  parser: Parser,
  file: string,
  source: string,
  cmdlets: Map<string, CmdletFacts & { name: string }>,
): string[] {
  const tree = parser.parse(source);
  if (!tree) return [`${file}: the grammar returned no tree`];
  const problems: string[] = [];
  walk(tree.rootNode, (node) => {
    const at = `${file}:${node.startPosition.row + 1}:${node.startPosition.column + 1}`;
    if (node.type === "ERROR" || node.isMissing) {
      const near = node.text.slice(0, 40).replace(/\s+/g, " ");
      problems.push(
        `${at}: syntax: ${node.isMissing ? `missing ${node.type}` : "cannot parse"} near '${near}'`,
      );
      return;
    }
    if (node.type !== "command") return;
    const nameNode = node.childForFieldName("command_name");
    if (!nameNode || nameNode.type !== "command_name") return;
    const cmdlet = cmdlets.get(nameNode.text.replace(/^[\w.]+\\/, "").toLowerCase());
    if (!cmdlet) return;
    const names = cmdlet.parameters.flatMap((p) => [p.name, ...p.aliases]).concat(COMMON);
    for (const element of node.childForFieldName("command_elements")?.children ?? []) {
      if (!element || element.type !== "command_parameter") continue;
      const given = element.text.replace(/^-/, "").replace(/:$/, "");
      const lower = given.toLowerCase();
      if (names.some((n) => n.toLowerCase() === lower)) continue;
      const hits = names.filter((n) => n.toLowerCase().startsWith(lower));
      if (hits.length === 1) continue;
      const why = hits.length > 0
        ? `is ambiguous (${hits.join(", ")})`
        : "is not a parameter of it";
      problems.push(
        `${file}:${element.startPosition.row + 1}:${element.startPosition.column + 1}: ` +
          `${cmdlet.name} -${given} ${why}`,
      );
    }
  });
  return problems;
}

function findPwsh(): string | null {
  const named = Deno.env.get("SVC_TEST_PWSH");
  if (named) return named;
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if (Deno.statSync(`${dir}/pwsh`).isFile) return `${dir}/pwsh`;
    } catch { /* not in this directory */ }
  }
  return null;
}

// The paths travel in an environment variable: with -Command, pwsh joins every later argument into
// the command text, so paths given as arguments would be run, not read.
const PARSE_SCRIPT = `
$failed = $false
foreach ($file in ($env:SVC_PS_CHECK_FILES -split "\n")) {
  $tokens = $null; $errors = $null
  [void][System.Management.Automation.Language.Parser]::ParseFile($file, [ref]$tokens, [ref]$errors)
  foreach ($e in $errors) {
    '{0}:{1}:{2}: {3}' -f $file, $e.Extent.StartLineNumber, $e.Extent.StartColumnNumber, $e.Message
    $failed = $true
  }
}
if ($failed) { exit 1 }`;

async function pwshProblems(pwsh: string, files: string[]): Promise<string[]> {
  const paths = files.map((f) => new URL(f, root).pathname);
  const output = await new Deno.Command(pwsh, {
    args: ["-NoLogo", "-NoProfile", "-NonInteractive", "-Command", PARSE_SCRIPT],
    env: { SVC_PS_CHECK_FILES: paths.join("\n") },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout).trim();
  if (output.success) return [];
  const lines = text.split("\n").filter(Boolean);
  return lines.length > 0 ? lines : [
    `${pwsh} failed to parse the files (exit ${output.code}): ${
      new TextDecoder().decode(output.stderr).trim()
    }`,
  ];
}

async function main(args: string[]): Promise<number> {
  const files = args.length > 0 ? args : await defaultFiles();
  const data = JSON.parse(
    await Deno.readTextFile(new URL("tests/fixtures/cmdlets-7.4.json", root)),
  ) as { cmdlets: Record<string, CmdletFacts> };
  const cmdlets = new Map(
    Object.entries(data.cmdlets).map(([name, facts]) => [name.toLowerCase(), { name, ...facts }]),
  );
  await Parser.init();
  const wasm = createRequire(import.meta.url).resolve(
    "tree-sitter-powershell/tree-sitter-powershell.wasm",
  );
  const parser = new Parser();
  parser.setLanguage(await Language.load(wasm));

  const problems: string[] = [];
  for (const file of files) {
    const source = await Deno.readTextFile(new URL(file, root));
    problems.push(...treeSitterProblems(parser, file, source, cmdlets));
  }
  const pwsh = findPwsh();
  if (pwsh) problems.push(...await pwshProblems(pwsh, files));

  const writer = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));
  for (const problem of problems) writer(problem);
  const checkers = pwsh ? `tree-sitter grammar and ${pwsh}` : "tree-sitter grammar";
  writer(
    problems.length > 0
      ? `ps-check: ${problems.length} problem(s) in ${files.length} file(s)`
      : `ps-check: ${files.length} file(s) clean (${checkers})`,
  );
  return problems.length > 0 ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
