import assert from "node:assert/strict";
import { bindArguments } from "../lib/arguments.ts";
import { buildTools, selectCommands, toolName } from "../lib/catalog.ts";
import { wildcard } from "../lib/wildcard.ts";
import { annotationsFor } from "../lib/catalog_annotations.ts";
import { cap, sanitize } from "../lib/catalog_description.ts";
import type { JsonSchema } from "../lib/tool_descriptor.ts";
import { chooseParameterSet } from "../lib/parameter_set.ts";
import { catalogStillValid, readCachedCatalog, writeCachedCatalog } from "../lib/discovery.ts";
import type { ShellSettings } from "../lib/config.ts";
import type { CommandMeta, ParamMeta } from "../lib/worker_protocol.ts";
import { cmdletMeta } from "./support/cmdlet_data.ts";
import { paramMeta as param } from "./support/descriptors.ts";

function command(
  name: string,
  sets: [string, ParamMeta[]][],
  extra: Partial<CommandMeta> = {},
): CommandMeta {
  return {
    name,
    commandType: "Function",
    module: "SvcFixture",
    moduleVersion: "1.2.0",
    verb: name.split("-")[0]!,
    noun: name.split("-")[1]!,
    defaultParameterSet: sets.length > 1 ? sets[0]![0] : null,
    supportsShouldProcess: false,
    outputTypes: [],
    parameterSets: sets.map(([setName, parameters], i) => ({
      name: setName,
      isDefault: i === 0,
      syntax: `${name} [-${parameters[0]?.name ?? "X"}]`,
      parameters,
    })),
    help: null,
    ...extra,
  };
}

const shell = (extra: Partial<ShellSettings> = {}): ShellSettings => ({
  pwshPath: null,
  commands: [],
  includePatterns: [],
  excludePatterns: [],
  promptCommands: [],
  modules: [],
  startupScript: null,
  startupScriptPath: null,
  toolCallTimeoutMs: 300_000,
  userInputTimeoutMs: 120_000,
  maxResultBytes: 1_048_576,
  serializationDepth: 4,
  requestLimits: {
    maxRequestedProperties: 64,
    maxRequestedPropertyWildcards: 8,
    maxArgumentItems: 10_000,
  },
  useDefaultDisplayProperties: true,
  toolGranularity: "ParameterSet",
  promptsAnsweredBy: "User",
  confirmPreference: "High",
  commandOverrides: {},
  cacheDirectory: null,
  hostCacheDirectory: null,
  workerStartTimeoutMs: 120_000,
  keepNativeProcesses: false,
  reloadOnChange: false,
  workerEnvironment: { pass: [], remove: [] },
  ...extra,
});

Deno.test("toolName() follows the PoshMcp naming rule for every example of REFERENCE §1.1", () => {
  assert.equal(toolName("Get-Process", "Name"), "get_process_name");
  assert.equal(toolName("Get-Process", "IdWithUserName"), "get_process_id_with_user_name");
  assert.equal(toolName("Get-PSDrive", "LiteralName"), "get_psdrive_literal_name");
  assert.equal(toolName("Split-Path", "LeafBaseSet"), "split_path_leaf_base_set");
  assert.equal(toolName("Get-Clipboard", "__AllParameterSets"), "get_clipboard");
  assert.equal(toolName("Get-Date", null), "get_date");
  assert.equal(toolName("Win32Thing", null), "win32_thing");
  assert.equal(toolName("7zip-Run", null), "_7zip_run");
  assert.match(toolName("Get-Ünïcode!", "A B"), /^[a-z0-9_]+$/);
});

Deno.test("wildcard() implements PowerShell wildcards case-insensitively, with classes and escapes", () => {
  assert.ok(wildcard("Get-*").test("get-process"));
  assert.ok(!wildcard("Get-*").test("Set-Process"));
  assert.ok(wildcard("Get-?ate").test("Get-Date"));
  assert.ok(wildcard("[GS]et-Item").test("Set-Item"));
  assert.ok(!wildcard("[GS]et-Item").test("Net-Item"));
  assert.ok(wildcard("Get-`*").test("Get-*"));
  assert.ok(!wildcard("Get-`*").test("Get-Date"));
  assert.ok(wildcard("Invoke-Expression").test("INVOKE-EXPRESSION"));
});

Deno.test("selectCommands() narrows module commands by include patterns and lets exclude always win", () => {
  const found = {
    commands: [
      {
        name: "Get-Date",
        module: null,
        commandType: "Cmdlet",
        source: "name" as const,
        via: "Get-Date",
      },
      {
        name: "Remove-Item",
        module: null,
        commandType: "Cmdlet",
        source: "name" as const,
        via: "Remove-Item",
      },
      {
        name: "Get-FixtureItem",
        module: "SvcFixture",
        commandType: "Function",
        source: "module" as const,
        via: "SvcFixture",
      },
      {
        name: "Read-FixturePrompt",
        module: "SvcFixture",
        commandType: "Function",
        source: "module" as const,
        via: "SvcFixture",
      },
      {
        name: "get-date",
        module: null,
        commandType: "Cmdlet",
        source: "pattern" as const,
        via: "Get-*",
      },
    ],
    missing: ["Get-Nothing"],
  };
  const { names, warnings } = selectCommands(
    shell({ includePatterns: ["Get-*"], excludePatterns: ["Remove-*"], modules: ["SvcFixture"] }),
    found,
  );
  assert.deepEqual(names, ["Get-Date", "Get-FixtureItem"]);
  // A command named in Commands and hidden by an exclude pattern is said, never dropped silently.
  assert.deepEqual(warnings, [
    "Command 'Get-Nothing' was not found in the worker session",
    "Command 'Remove-Item' (ShellConfiguration:Commands) is hidden by the exclude pattern 'Remove-*' and is not offered",
  ]);
});

Deno.test("buildTools() makes one tool per parameter set of Get-Process with real metadata", () => {
  const catalog = buildTools([cmdletMeta("Get-Process")], { psVersion: "7.6.9" });
  // The InputObject sets take Process objects, which no JSON client can send: not offered. Tools
  // come sorted by name, whatever order PowerShell reports the sets in.
  assert.deepEqual(catalog.tools.map((t) => t.name), [
    "get_process_id",
    "get_process_id_with_user_name",
    "get_process_name",
    "get_process_name_with_user_name",
  ]);
  // Listed for doctor, not warned at every start: Get-Process has other sets (issue 31).
  assert.deepEqual(catalog.warnings, []);
  assert.deepEqual(
    catalog.leftOut,
    ["InputObject", "InputObjectWithUserName"].map((set) =>
      `Parameter set '${set}' of 'Get-Process' is not offered: mandatory parameter 'InputObject' has type System.Diagnostics.Process[], which JSON cannot express`
    ),
  );
  const byName = catalog.tools.find((t) => t.name === "get_process_name")!;
  assert.equal(byName.command, "Get-Process");
  assert.deepEqual((byName.inputSchema.properties as Record<string, unknown>)["Name"], {
    type: "array",
    items: { type: "string" },
    minItems: 1,
  });
  const byId = catalog.tools.find((t) => t.name === "get_process_id")!;
  assert.deepEqual(byId.inputSchema.required, ["Id"]);
  assert.equal(byId.annotations.readOnlyHint, true);
  assert.equal(byId.annotations.title, "Get-Process");
  for (const tool of catalog.tools) {
    assert.equal(tool.inputSchema.additionalProperties, false);
    assert.ok(
      !("Verbose" in (tool.inputSchema.properties as object)),
      "common parameters are dropped",
    );
  }
});

Deno.test("buildTools() offers no set whose mandatory parameter JSON cannot give, and lists optional ones left out", () => {
  // As a real worker reports Get-Process: no Process can be made from a string.
  const meta = cmdletMeta("Get-Process");
  const tool = command("Get-Thing", [[
    "Default",
    [param("Name", "System.String"), param("Filter", "System.Management.Automation.ScriptBlock")],
  ]]);
  const catalog = buildTools([meta, tool], { psVersion: "7.6.5" });
  const names = catalog.tools.map((t) => t.name);
  assert.ok(!names.includes("get_process_input_object"), names.join(", "));
  assert.ok(!names.includes("get_process_input_object_with_user_name"), names.join(", "));
  assert.ok(names.includes("get_process_name"));
  assert.deepEqual(catalog.warnings, []);
  const thing = catalog.tools.find((t) => t.command === "Get-Thing")!;
  assert.ok(!("Filter" in (thing.inputSchema.properties as object)));
  // Its description names only the arguments the tool takes.
  assert.equal(thing.descriptionSource, "generated");
  assert.ok(!thing.description.includes("Filter"), thing.description);
  assert.deepEqual(catalog.leftOut, [
    "Parameter set 'InputObject' of 'Get-Process' is not offered: mandatory parameter 'InputObject' has type System.Diagnostics.Process[], which JSON cannot express",
    "Parameter set 'InputObjectWithUserName' of 'Get-Process' is not offered: mandatory parameter 'InputObject' has type System.Diagnostics.Process[], which JSON cannot express",
    "Optional parameter 'Filter' of 'Get-Thing' (set 'Default') is left out: its type System.Management.Automation.ScriptBlock cannot be given in JSON",
  ]);
});

Deno.test("buildTools() maps every parameter kind to its JSON Schema keywords", () => {
  const meta = command("Test-FixtureBinding", [["__AllParameterSets", [
    param("Text", "System.String", { position: 0, isMandatory: true }),
    param("Count", "System.Int32", { validateRange: { min: 1, max: 10 } }),
    param("Big", "System.Int64"),
    param("Ratio", "System.Double"),
    param("Flag", "System.Boolean"),
    param("Force", "System.Management.Automation.SwitchParameter"),
    param("Color", "System.ConsoleColor", { enumValues: ["Black", "Red"] }),
    param("Names", "System.String[]", { validateCount: { min: 1, max: 3 } }),
    param("Numbers", "System.Int32[]"),
    param("Options", "System.Collections.Hashtable"),
    param("Anything", "System.Object"),
    param("Code", "System.String", {
      validateLength: { min: 2, max: 5 },
      validatePattern: "^[A-Z]+$",
    }),
    param("Mode", "System.String", { validateSet: ["Fast", "Slow"] }),
    param("Credential", "System.Management.Automation.PSCredential"),
    param("Script", "System.Management.Automation.ScriptBlock"),
    param("Verbose", "System.Management.Automation.SwitchParameter"),
    param("WhatIf", "System.Management.Automation.SwitchParameter"),
  ]]], { supportsShouldProcess: true });
  const [tool] = buildTools([meta], { psVersion: "7.4.6" }).tools;
  assert.ok(tool);
  assert.equal(tool.name, "test_fixture_binding");
  const p = tool.inputSchema.properties as Record<string, Record<string, unknown>>;
  assert.deepEqual(Object.keys(p)[0], "Text", "positional parameters come first");
  assert.deepEqual(tool.inputSchema.required, ["Text"]);
  assert.deepEqual(p.Count, { type: "integer", minimum: 1, maximum: 10 });
  assert.equal(p.Big!.type, "integer");
  assert.deepEqual(p.Ratio, { type: "number" });
  assert.deepEqual(p.Flag, { type: "boolean" });
  assert.deepEqual(p.Force, { type: "boolean" });
  // An enum listing every value needs no "One of" besides it.
  assert.deepEqual(p.Color, { type: "string", enum: ["Black", "Red"] });
  assert.deepEqual(p.Names, { type: "array", items: { type: "string" }, minItems: 1, maxItems: 3 });
  assert.equal((p.Numbers!.items as Record<string, unknown>).type, "integer");
  assert.deepEqual(p.Options, { type: "object", properties: {}, additionalProperties: true });
  // Any JSON value, each branch typed, so typed-dialect clients and `--strict` accept it.
  const branches = (p.Anything!.anyOf as Record<string, unknown>[]).map((b) => b.type);
  assert.deepEqual(branches, ["string", "number", "boolean", "object", "array"]);
  assert.deepEqual(p.Code, { type: "string", minLength: 2, maxLength: 5, pattern: "^[A-Z]+$" });
  assert.deepEqual(p.Mode, { type: "string", enum: ["Fast", "Slow"] });
  assert.deepEqual((p.Credential!.properties as Record<string, unknown>).UserName, {
    type: "string",
  });
  assert.ok(!("Script" in p), "an optional ScriptBlock is dropped");
  assert.ok(!("Verbose" in p));
  assert.deepEqual(p.WhatIf, { type: "boolean" }, "WhatIf stays where ShouldProcess is supported");
  assert.deepEqual(tool.parameters.find((x) => x.name === "Credential")?.kind, "credential");
  assert.deepEqual(tool.parameters.find((x) => x.name === "Force")?.kind, "switch");
});

Deno.test("buildTools() offers a provider's dynamic parameters, marked as its, and binding names the provider", () => {
  const sets: [string, ParamMeta[]][] = [["Path", [
    param("Path", "System.String[]", { position: 0, isMandatory: true }),
    param("Raw", "System.Management.Automation.SwitchParameter", { isDynamic: true }),
    param("Encoding", "System.Text.Encoding", { isDynamic: true, completions: ["utf8", "ascii"] }),
  ]]];
  const [tool] = buildTools([command("Get-Content", sets, { provider: "FileSystem" })], {
    psVersion: "7.6.9",
  }).tools;
  const p = tool!.inputSchema.properties as Record<string, JsonSchema>;
  assert.deepEqual(p.Raw, {
    type: "boolean",
    description: "FileSystem provider parameter: only for FileSystem paths.",
  });
  assert.equal(
    p.Encoding!.description,
    "Suggested values: utf8, ascii. FileSystem provider parameter: only for FileSystem paths.",
  );
  assert.equal(p.Path!.description, undefined);
  assert.deepEqual(tool!.parameters.filter((x) => x.provider).map((x) => x.name), [
    "Encoding",
    "Raw",
  ]);
  const bound = bindArguments(tool!, { Path: ["/tmp/a"], raw: true, Encoding: "utf8" });
  assert.ok(bound.ok);
  assert.deepEqual(bound.value.provider, { name: "FileSystem", arguments: ["Raw", "Encoding"] });
  const plain = bindArguments(tool!, { Path: ["/tmp/a"] });
  assert.ok(plain.ok && !("provider" in plain.value), "no provider without a provider argument");

  // Dynamic parameters whose provider discovery could not tell (a function's dynamicparam block,
  // metadata from an older worker) are not offered.
  const [bare] = buildTools([command("Get-Content", sets)], { psVersion: "7.6.9" }).tools;
  assert.deepEqual(
    Object.keys(bare!.inputSchema.properties as object).filter((k) => !k.startsWith("_")),
    [
      "Path",
    ],
  );
});

Deno.test("buildTools() reports collisions and unbindable mandatory sets instead of overwriting", () => {
  const a = command("Get-Thing", [["Name", [param("Name", "System.String")]]]);
  const b = command("Get-Thing-Name", [["__AllParameterSets", [param("X", "System.String")]]]);
  const c = command("Invoke-Block", [["__AllParameterSets", [
    param("Script", "System.Management.Automation.ScriptBlock", { isMandatory: true }),
  ]]]);
  const catalog = buildTools([a, b, c], { psVersion: "7.4.6" });
  assert.deepEqual(catalog.tools.map((t) => t.command), ["Get-Thing"]);
  assert.ok(
    catalog.warnings.some((w) => w.includes("'get_thing_name'") && w.includes("Get-Thing-Name")),
  );
  assert.ok(catalog.warnings.some((w) => w.includes("'Invoke-Block'")));
});

Deno.test("buildTools() writes a short description from metadata: verb, noun, command and set", () => {
  const cmd = command("Get-ChildItem", [
    ["Items", [
      param("Path", "System.String[]", { isMandatory: true }),
      param("Attributes", "System.String", { validateSet: ["Hidden", "ReadOnly"] }),
      param("Verbose", "System.Management.Automation.SwitchParameter"),
    ]],
    ["LiteralItems", [param("LiteralPath", "System.String[]", { isMandatory: true })]],
  ], { module: "Microsoft.PowerShell.Management" });
  const [items] = buildTools([cmd], { psVersion: "7.6.5" }).tools;
  assert.equal(items!.descriptionSource, "generated");
  assert.equal(
    items!.description,
    "Get child item (Get-ChildItem, parameter set Items).",
  );
});

Deno.test("buildTools() takes descriptions from help, then metadata, sanitized and capped", () => {
  const helped = command("Get-FixtureGreeting", [["__AllParameterSets", [
    param("Name", "System.String"),
  ]]], {
    help: {
      synopsis: "  Returns a\ngreeting\tfor a name. ",
      description: "Long text",
      parameters: { Name: "The name\u0007 to greet." },
    },
  });
  const bare = command("Get-Bare", [["__AllParameterSets", [param("Name", "System.String")]]], {
    help: { synopsis: "Get-Bare [-Name <string>]", description: null, parameters: {} },
  });
  const [b, a] = buildTools([helped, bare], { psVersion: "7.4.6" }).tools;
  assert.equal(a!.description, "Returns a greeting for a name.");
  assert.equal(a!.descriptionSource, "synopsis");
  assert.equal(
    (a!.inputSchema.properties as Record<string, Record<string, unknown>>).Name!.description,
    "The name to greet.",
  );
  // Without help, the description is written from the metadata, never a bare syntax line.
  assert.equal(b!.descriptionSource, "generated");
  assert.equal(
    b!.description,
    "Get bare (Get-Bare).",
  );
  assert.equal(sanitize("a\n\n\n b  c"), "a\n\nb c");
  const capped = cap("word ".repeat(400), 1024);
  assert.ok(capped.length <= 1024 && capped.endsWith("…"));
});

Deno.test("annotationsFor() derives hints from the verb and never marks a tool both read-only and destructive", () => {
  assert.deepEqual(annotationsFor("Get-Date", "Get"), {
    title: "Get-Date",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: true,
  });
  assert.equal(annotationsFor("Remove-Item", "Remove").destructiveHint, true);
  assert.equal(annotationsFor("Set-Variable", "Set").idempotentHint, true);
  assert.equal(annotationsFor("New-Item", "New").destructiveHint, false);
  for (const verb of ["Get", "Remove", "Set", "New", "Frobnicate"]) {
    const a = annotationsFor(`${verb}-X`, verb);
    assert.ok(!(a.readOnlyHint && a.destructiveHint));
  }
});

Deno.test("a cached catalog is written private and not read from where other users can write", {
  ignore: Deno.build.os === "windows",
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-cache-test-" });
  const umask = Deno.umask(0o002);
  try {
    const catalog = buildTools([cmdletMeta("Get-Date")], { psVersion: "7.4.6" });
    const cache = `${dir}/cache`;
    await writeCachedCatalog("k1", catalog, { directory: cache });
    assert.equal((await Deno.stat(cache)).mode! & 0o777, 0o700);
    assert.equal((await Deno.stat(`${cache}/catalog-k1.json`)).mode! & 0o777, 0o600);
    assert.deepEqual(await readCachedCatalog("k1", { directory: cache }), catalog);
    await Deno.chmod(`${cache}/catalog-k1.json`, 0o620);
    assert.equal(await readCachedCatalog("k1", { directory: cache }), null, "group-writable file");
    await Deno.chmod(`${cache}/catalog-k1.json`, 0o600);
    await Deno.chmod(cache, 0o777);
    assert.equal(
      await readCachedCatalog("k1", { directory: cache }),
      null,
      "world-writable folder",
    );
  } finally {
    Deno.umask(umask);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the catalog cache round-trips and is invalid when PowerShell or module versions change", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-cache-test-" });
  try {
    const catalog = buildTools([cmdletMeta("Get-Date")], {
      psVersion: "7.4.6",
      modules: [{ name: "SvcFixture", found: true, version: "1.2.0", path: null, error: null }],
    });
    await writeCachedCatalog("k1", catalog, { directory: dir });
    const read = await readCachedCatalog("k1", { directory: dir });
    assert.deepEqual(read, catalog);
    assert.equal(await readCachedCatalog("other", { directory: dir }), null);
    const live = [{ name: "SvcFixture", found: true, version: "1.2.0", path: null, error: null }];
    assert.ok(catalogStillValid(read!, "7.4.6", live));
    assert.ok(!catalogStillValid(read!, "7.5.0", live));
    assert.ok(!catalogStillValid(read!, "7.4.6", [{ ...live[0]!, version: "1.3.0" }]));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("buildTools() with ToolGranularity Command makes one flat tool per command covering every set", () => {
  const catalog = buildTools([cmdletMeta("Get-Process"), cmdletMeta("Get-Date")], {
    psVersion: "7.6.9",
    granularity: "Command",
  });
  assert.deepEqual(catalog.tools.map((t) => t.name), ["get_date", "get_process"]);
  const process = catalog.tools[1]!;
  const properties = process.inputSchema.properties as Record<string, JsonSchema>;
  for (const name of ["Name", "Id", "IncludeUserName", "Module", "FileVersionInfo"]) {
    assert.ok(name in properties, `${name} is an argument of get_process`);
  }
  // No argument is required by every set, so none is required by the merged schema.
  assert.equal(process.inputSchema.required, undefined);
  const selector = properties["_ParameterSet"]!;
  assert.equal((selector.enum as string[])[0], "Name", "the default set comes first");
  assert.deepEqual(
    [...(selector.enum as string[])].sort(),
    ["Id", "IdWithUserName", "Name", "NameWithUserName"],
  );
  assert.match(String(selector.description), /IdWithUserName \(requires Id, IncludeUserName/);
  assert.match(process.description, /4 parameter sets \(Name, .*\); _ParameterSet names one\.$/);
  assert.equal(process.parameterSetTools?.length, 4);
  assert.ok(process.parameterSetTools?.every((set) => set.name === "get_process"));
  for (const tool of catalog.tools) {
    // Anthropic, OpenAI and Gemini reject these keywords at the top of an input schema.
    for (const keyword of ["oneOf", "anyOf", "allOf", "not", "if"]) {
      assert.ok(!(keyword in tool.inputSchema), `${tool.name} has no top-level ${keyword}`);
    }
    assert.equal(tool.inputSchema.type, "object");
    assert.equal(tool.inputSchema.additionalProperties, false);
  }
});

Deno.test("chooseParameterSet() picks the set the arguments fit, or the one named, and says why not", () => {
  const [tool] = buildTools([cmdletMeta("Get-Process")], {
    psVersion: "7.6.9",
    granularity: "Command",
  }).tools;
  const choose = (args: unknown) => {
    const choice = chooseParameterSet(tool!, args);
    return choice.ok ? choice.tool.parameterSet : choice.message;
  };
  assert.equal(choose(undefined), "Name", "no arguments: the default set");
  assert.equal(choose({ Name: ["pwsh"], Module: true }), "Name");
  assert.equal(choose({ id: [1] }), "Id", "names match in any letter case");
  assert.equal(choose({ Id: [1], IncludeUserName: true }), "IdWithUserName");
  assert.equal(choose({ Id: [1], Name: null }), "Id", "a null argument is not given");
  assert.equal(choose({ _ParameterSet: "nameWithUserName" }), "NameWithUserName");
  assert.equal(
    choose({ Name: ["pwsh"], Id: [1], _MaxResults: 2 }),
    "No parameter set of tool 'get_process' takes Name, Id together: Name is in Name, NameWithUserName; Id is in Id, IdWithUserName",
  );
  assert.equal(choose({ IncludeUserName: true }), "NameWithUserName");
  assert.equal(
    choose({ _ParameterSet: "Id", Name: ["pwsh"] }),
    "Argument 'Name' of tool 'get_process' is not in parameter set 'Id'; it is in Name, NameWithUserName",
  );
  assert.equal(
    choose({ _ParameterSet: "Everything" }),
    `Invalid argument '_ParameterSet' for tool 'get_process': "Everything" is not one of Name, NameWithUserName, Id, IdWithUserName`,
  );
  assert.match(
    choose({ Bogus: 1 }),
    /^Unknown argument 'Bogus' for tool 'get_process' \(accepted arguments: Name, .*_ParameterSet/,
  );
  const chosen = chooseParameterSet(tool!, { _ParameterSet: "Id", Id: [4] });
  assert.ok(chosen.ok);
  assert.deepEqual(chosen.args, { Id: [4] }, "_ParameterSet is not passed on to PowerShell");
});

Deno.test("chooseParameterSet() names what each set still requires when no set is complete", () => {
  const kind = param("Kind", "System.String");
  const [tool] = buildTools([
    command("Get-FixtureItem", [
      ["ByName", [param("Name", "System.String[]", { isMandatory: true }), kind]],
      ["ById", [param("Id", "System.Int32[]", { isMandatory: true }), kind]],
    ]),
  ], { psVersion: "7.4.6", granularity: "Command" }).tools;
  const choice = chooseParameterSet(tool!, { Kind: "File" });
  assert.deepEqual(choice, {
    ok: false,
    message:
      "Tool 'get_fixture_item' needs more arguments: parameter set 'ByName' requires Name; parameter set 'ById' requires Id (_ParameterSet names the set)",
  });
});
