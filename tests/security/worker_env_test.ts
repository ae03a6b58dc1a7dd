/**
 * svc's configuration never reaches a worker: with API keys, OTLP headers and `SVC_*` variables in
 * svc's environment, no exposed command can read them, whether through the env: drive, .NET or a
 * native program it starts; other variables pass, and `ShellConfiguration:Environment:PassVariables`
 * and `RemoveVariables` move the line.
 */
import assert from "node:assert/strict";
import { startSvc, TEST_PWSH } from "../support/harness.ts";
import { SECURITY_FIXTURE, textOf } from "./support.ts";

const ADMIN_KEY = "admin-key-9c2f51d7e0";
const SECRETS: Record<string, string> = {
  "Authentication__Schemes__keys__Type": "ApiKey",
  "Authentication__Schemes__keys__Keys__admin__Value": ADMIN_KEY,
  "Authentication__Schemes__keys__Keys__admin__Roles__0": "admin",
  "Authentication__Schemes__keys__Keys__viewer__Value": "viewer-key-4b1e",
  // Sections match in any case, as svc reads them.
  "shellconfiguration__Environment__StartupScript": "$null = 'startup-text-8e1a'",
  "McpServer__AllowedHosts__0": "internal-host-7d3a.example",
  OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer otlp-all-61fe",
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: "authorization=Bearer otlp-traces-0a9d",
  SVC_EXTRA_SECRET: "svc-extra-3e8c",
  DENO_AUTH_TOKENS: "registry-token-5f72@example.com",
};
const PLAIN = { SECURITY_PLAIN_VARIABLE: "plain-value-visible" };

function config(environment: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ShellConfiguration: {
      Commands: ["Get-ChildItem", "Get-Content"],
      Modules: [SECURITY_FIXTURE],
      Environment: environment,
    },
  };
}

/** What each route shows a caller of the environment, with `names` read one by one from env:. */
async function environmentSeen(
  svc: Awaited<ReturnType<typeof startSvc>>,
  names: string[],
): Promise<Record<string, string>> {
  // Names only: each variable's provider object would exceed MaxResultBytes.
  const drive = await svc.callTool("get_child_item_items", { Path: ["env:"], Name: true });
  // The route: a wildcard on the drive, whole objects.
  const wildcard = await svc.callTool("get_child_item_items", { Path: ["env:*uthentication*"] });
  const values = await Promise.all(
    names.map((name) => svc.callTool("get_content_path", { Path: [`env:${name}`] })),
  );
  const dotnet = await svc.callTool("get_environment_table", {});
  const native = await svc.callTool("invoke_native_environment", {});
  for (const result of [drive, dotnet, native]) assert.ok(!result.isError, textOf(result));
  return {
    drive: textOf(drive),
    wildcard: textOf(wildcard),
    content: values.map(textOf).join("\n"),
    dotnet: textOf(dotnet),
    native: textOf(native),
  };
}

/** True when a route shows the variable: by name on the drive's listing, by value elsewhere. */
function shows(route: string, text: string, name: string, value: string): boolean {
  return route === "drive"
    ? new RegExp(`(^|\\W)${name}(\\W|$)`, "m").test(text)
    : text.includes(value);
}

const PLAIN_NAME = Object.keys(PLAIN)[0]!;

Deno.test(
  "security: no exposed command reads svc's settings, keys or credentials",
  async () => {
    const pwsh = TEST_PWSH;
    await using svc = await startSvc({ config: config(), pwsh, env: { ...SECRETS, ...PLAIN } });
    const seen = await environmentSeen(svc, [...Object.keys(SECRETS), PLAIN_NAME]);
    for (const [route, text] of Object.entries(seen)) {
      // Each route works: an ordinary variable is there.
      if (route !== "wildcard") {
        assert.ok(shows(route, text, PLAIN_NAME, PLAIN.SECURITY_PLAIN_VARIABLE), `${route} works`);
      }
      for (const [name, value] of Object.entries(SECRETS)) {
        if (!name.endsWith("__Type") && !name.endsWith("__0")) {
          assert.ok(!text.includes(value), `${route} shows ${name}`);
        }
        // Reading a missing variable by name gets an error that names it: only values count there.
        if (route !== "content") {
          assert.ok(!text.toLowerCase().includes(name.toLowerCase()), `${route} names ${name}`);
        }
      }
      if (route !== "content") {
        assert.ok(!/\bSVC_/.test(text), `${route} shows an SVC_ variable (or the worker's token)`);
      }
    }
  },
);

Deno.test(
  "security: Environment:PassVariables lets named ones through, RemoveVariables hides more",
  async () => {
    const pwsh = TEST_PWSH;
    const other = { SECURITY_OTHER_VARIABLE: "other-value-visible" };
    await using svc = await startSvc({
      config: config({ PassVariables: ["SVC_EXTRA_*"], RemoveVariables: ["SECURITY_PLAIN_*"] }),
      pwsh,
      env: { ...SECRETS, ...PLAIN, ...other },
    });
    const seen = await environmentSeen(svc, [
      "SVC_EXTRA_SECRET",
      PLAIN_NAME,
      "SECURITY_OTHER_VARIABLE",
      "Authentication__Schemes__keys__Keys__admin__Value",
    ]);
    for (const [route, text] of Object.entries(seen)) {
      if (route === "wildcard") continue;
      assert.ok(
        shows(route, text, "SECURITY_OTHER_VARIABLE", other.SECURITY_OTHER_VARIABLE),
        route,
      );
      assert.ok(shows(route, text, "SVC_EXTRA_SECRET", SECRETS.SVC_EXTRA_SECRET!), route);
      assert.ok(!shows(route, text, PLAIN_NAME, PLAIN.SECURITY_PLAIN_VARIABLE), route);
      assert.ok(!text.includes(ADMIN_KEY), `${route} shows the admin key`);
    }
  },
);

Deno.test(
  "security: PoshMcp's Section:Key variables and the OTLP endpoint do not reach a worker",
  async () => {
    // PoshMcp (.NET) reads `Authentication:Schemes:…` from the environment; svc does not, so such
    // a variable holds a key meant for the server. An OTLP endpoint may carry credentials.
    const colonKey = "colon-form-key-2d8b6a";
    const endpointSecret = "otlp-endpoint-pw-71c3";
    await using svc = await startSvc({
      config: config(),
      pwsh: TEST_PWSH,
      env: {
        ...PLAIN,
        "Authentication:Schemes:keys:Keys:admin:Value": colonKey,
        "authentication:schemes:keys:keys:ops:Value": colonKey,
        OTEL_EXPORTER_OTLP_ENDPOINT: `https://svc:${endpointSecret}@otel.example`,
      },
    });
    const seen = await environmentSeen(svc, [PLAIN_NAME]);
    // The process's own environment block, as a command reading files sees it.
    const block = await svc.callTool("get_content_path", { Path: ["/proc/self/environ"] });
    const routes = { ...seen, ...(Deno.build.os === "linux" ? { block: textOf(block) } : {}) };
    for (const [route, text] of Object.entries(routes)) {
      if (route === "drive" || route === "native" || route === "block") {
        assert.ok(text.includes(PLAIN_NAME), `${route} works`);
      }
      assert.ok(!text.includes(colonKey), `${route} shows the colon-form key`);
      assert.ok(!text.includes(endpointSecret), `${route} shows the OTLP endpoint's password`);
    }
  },
);
