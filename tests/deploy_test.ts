/**
 * What ships beside the code (issue 14), checked statically because no Docker engine, Kubernetes
 * cluster or GitHub runner is available here: the Dockerfile, the manifests in deploy/kubernetes
 * and the release workflow agree with each other and with svc. The manifests' appsettings.json and
 * API-key Secret are then served for real: probes answer and the key opens a tool call.
 */
import assert from "node:assert/strict";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import { parseConfigText } from "../lib/config_source.ts";
import { settingOf } from "../lib/config_schema.ts";
import { parseTimeSpan } from "../lib/config_reader.ts";
import { PERMISSIONS } from "../scripts/compile.ts";
import { BIN_PWSH_VERSION } from "../lib/pwsh_path.ts";
import { missingSecurityFixes } from "../lib/worker_hello.ts";
import { post, startHttpSvc } from "./support/harness.ts";

const root = new URL("../", import.meta.url).pathname;
const read = (path: string) => Deno.readTextFileSync(`${root}${path}`);

// deno-lint-ignore no-explicit-any
type Manifest = Record<string, any>;

function manifests(): Map<string, Manifest> {
  const byKind = new Map<string, Manifest>();
  for (const entry of Deno.readDirSync(`${root}deploy/kubernetes`)) {
    if (entry.name === "kustomization.yaml") continue;
    for (const doc of parseAllDocuments(read(`deploy/kubernetes/${entry.name}`))) {
      assert.deepEqual(doc.errors, [], entry.name);
      const manifest = doc.toJS() as Manifest;
      byKind.set(manifest.kind, manifest);
    }
  }
  return byKind;
}

/** The final stage of the Dockerfile: instructions after the last FROM, continuation lines joined. */
function finalStage(): { instruction: string; rest: string }[] {
  const lines = read("Dockerfile").replace(/\\\n\s*/g, " ").split("\n")
    .filter((line) => line.trim() !== "" && !line.trimStart().startsWith("#"));
  const last = lines.findLastIndex((line) => line.startsWith("FROM "));
  return lines.slice(last).map((line) => {
    const [instruction, ...rest] = line.trim().split(" ");
    return { instruction: instruction!, rest: rest.join(" ") };
  });
}

Deno.test("Dockerfile: non-root, HTTP on all interfaces, EXPOSE and HEALTHCHECK on /health, narrow permissions", () => {
  const stage = finalStage();
  const get = (name: string) => stage.filter((s) => s.instruction === name).map((s) => s.rest);
  const user = get("USER").at(-1) ?? "";
  assert.match(user, /^[1-9]\d*(:[1-9]\d*)?$/, "runs as a numeric non-root user");
  const env = get("ENV").join(" ");
  assert.match(env, /SVC_TRANSPORT=http/);
  assert.match(env, /SVC_HOST=0\.0\.0\.0/);
  // The embedded default has no authentication; on 0.0.0.0 that must be said explicitly (issue 27).
  const embedded = JSON.parse(read("appsettings.json"));
  assert.notEqual(embedded.Authentication?.Enabled, true);
  assert.match(env, /SVC_ALLOW_ANONYMOUS=true/);
  const port = env.match(/SVC_PORT=(\d+)/)?.[1];
  assert.deepEqual(get("EXPOSE"), [port]);
  assert.match(get("HEALTHCHECK")[0] ?? "", new RegExp(`127\\.0\\.0\\.1:${port}/health'`));
  const entrypoint = JSON.parse(get("ENTRYPOINT")[0]!) as string[];
  assert.ok(!entrypoint.includes("-A") && !entrypoint.includes("--allow-all"));
  assert.deepEqual(entrypoint.filter((a) => a.startsWith("--allow")), PERMISSIONS);
  // Everything copied from the build context exists, and the bundle is built like `deno task bundle`.
  const text = read("Dockerfile");
  for (const [, sources] of text.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
    for (const source of sources!.split(" ")) assert.ok(Deno.statSync(`${root}${source}`), source);
  }
  // Built ahead as the user that serves, with the entrypoint's permissions (network aside), on the
  // bundle the entrypoint runs: doctor fills the caches the first start reads (bundle_test).
  const doctor = JSON.parse(get("RUN").find((run) => run.includes('"doctor"')) ?? "[]") as string[];
  assert.deepEqual(doctor, [
    ...entrypoint.filter((a) => a !== "--allow-net"),
    "doctor",
  ]);
  // ...into a directory of the image that no volume of the manifests hides.
  const hostCache = env.match(/SVC_HOST_CACHE_DIR=(\S+)/)?.[1];
  assert.ok(hostCache?.startsWith("/opt/svc/"), String(hostCache));
  assert.doesNotMatch(
    read("deploy/kubernetes/deployment.yaml"),
    /SVC_HOST_CACHE_DIR|mountPath: \/opt/,
  );
  assert.ok(
    stage.findIndex((s) => s.instruction === "USER") <
      stage.findIndex((s) => s.rest === get("RUN").find((run) => run.includes('"doctor"'))),
  );
  const task = (JSON.parse(read("deno.json")).tasks.bundle as string).split(" -o ")[0]!;
  assert.ok(text.includes(`RUN ${task} -o `), `the bundle stage runs '${task}'`);
});

Deno.test("Dockerfile: PowerShell pinned to the release bin/pwsh installs, with every known security fix, run as SVC_PWSH", () => {
  const text = read("Dockerfile");
  const version = /^ARG POWERSHELL_VERSION=(\S+)$/m.exec(text)?.[1];
  assert.equal(version, BIN_PWSH_VERSION);
  assert.equal(missingSecurityFixes(version!), null);
  // Installed by that version, not taken from whatever a floating PowerShell image tag holds.
  assert.match(text, /dotnet tool install PowerShell --version "\$\{POWERSHELL_VERSION\}"/);
  assert.doesNotMatch(text, /^FROM mcr\.microsoft\.com\/powershell/m);
  assert.doesNotMatch(text, /^ARG \w+=mcr\.microsoft\.com\/powershell/m);
  const env = finalStage().filter((s) => s.instruction === "ENV").map((s) => s.rest).join(" ");
  const pwsh = env.match(/SVC_PWSH=(\S+)/)?.[1];
  assert.ok(pwsh && text.includes(`> ${pwsh}`), `the image writes ${pwsh}`);
});

Deno.test("Kubernetes manifests agree with each other and with the image", () => {
  const kinds = manifests();
  const names = [...kinds.keys()].sort();
  assert.deepEqual(names, [
    "ConfigMap",
    "Deployment",
    "HorizontalPodAutoscaler",
    "Ingress",
    "Secret",
    "Service",
  ]);
  const kustomization = parseYaml(read("deploy/kubernetes/kustomization.yaml"));
  const files = [...Deno.readDirSync(`${root}deploy/kubernetes`)].map((e) => e.name)
    .filter((n) => n !== "kustomization.yaml").sort();
  assert.deepEqual([...kustomization.resources].sort(), files);

  const deployment = kinds.get("Deployment")!;
  const pod = deployment.spec.template;
  assert.deepEqual(deployment.spec.selector.matchLabels, pod.metadata.labels);
  const [container] = pod.spec.containers;
  const port = container.ports.find((p: Manifest) => p.name === "http").containerPort;
  assert.equal(String(port), finalStage().find((s) => s.instruction === "EXPOSE")!.rest);
  assert.equal(container.readinessProbe.httpGet.path, "/health/ready");
  assert.equal(container.livenessProbe.httpGet.path, "/health");
  assert.equal(pod.spec.securityContext.runAsNonRoot, true);
  // svc's whole drain takes ShutdownDrainTimeout at most (tests/pool_test.ts times it): the grace
  // period covers it and the killing and reaping of what is left, and is not much longer, since a
  // pod whose svc is stuck waits it out.
  const drain = parseTimeSpan(
    String(settingOf("McpServer:RunspacePool:ShutdownDrainTimeout")!.default),
  )! / 1000;
  const grace = pod.spec.terminationGracePeriodSeconds;
  assert.ok(grace >= drain + 5 && grace <= drain + 15, `grace ${grace} s for a ${drain} s drain`);
  const env = Object.fromEntries(container.env.map((e: Manifest) => [e.name, e]));
  const configVolume = pod.spec.volumes.find((v: Manifest) => v.configMap);
  const mount = container.volumeMounts.find((m: Manifest) => m.name === configVolume.name);
  assert.equal(env.SVC_CONFIG.value, `${mount.mountPath}/appsettings.json`);
  assert.equal(configVolume.configMap.name, kinds.get("ConfigMap")!.metadata.name);
  const secretRef = env["Authentication__Schemes__keys__Keys__ops__Value"].valueFrom.secretKeyRef;
  assert.equal(secretRef.name, kinds.get("Secret")!.metadata.name);
  assert.ok(secretRef.key in kinds.get("Secret")!.stringData);

  const service = kinds.get("Service")!;
  assert.deepEqual(service.spec.selector, pod.metadata.labels);
  assert.equal(service.spec.ports[0].targetPort, "http");
  const hpa = kinds.get("HorizontalPodAutoscaler")!;
  assert.equal(hpa.spec.scaleTargetRef.name, deployment.metadata.name);
  const ingress = kinds.get("Ingress")!;
  assert.equal(
    ingress.metadata.annotations["nginx.ingress.kubernetes.io/upstream-hash-by"],
    /hash (\S+) consistent;/.exec(
      Deno.readTextFileSync(`${root}/docs/scaling-out.md`),
    )![1],
    "the hash of docs/scaling-out.md: a session's requests, and a held call's retries, go to one replica",
  );
  assert.equal(
    ingress.spec.rules[0].http.paths[0].backend.service.name,
    service.metadata.name,
  );
  // svc checks Host on every bind (issue 27): the names clients use must be allowed.
  const settings = JSON.parse(
    (kinds.get("ConfigMap")!.data["appsettings.json"] as string).replace(/^\s*\/\/.*$/gm, ""),
  );
  const allowed = settings.McpServer.AllowedHosts as string[];
  assert.ok(allowed.includes(ingress.spec.rules[0].host), "the ingress host is an AllowedHost");
  // TLS ends at the ingress, for the host it routes; svc reads the scheme it forwards.
  assert.deepEqual(ingress.spec.tls[0].hosts, [ingress.spec.rules[0].host]);
  assert.match(ingress.spec.tls[0].secretName, /\S/);
  assert.equal(ingress.metadata.annotations["nginx.ingress.kubernetes.io/ssl-redirect"], "true");
  assert.equal(settings.McpServer.TrustForwardedProto, true);
  assert.ok(allowed.includes(service.metadata.name), "the Service's name is an AllowedHost");
  assert.equal(settings.Authentication.Enabled, true, "no --allow-anonymous needed");
});

Deno.test("the manifests' appsettings.json and API key serve: probes answer and the key opens a call", async () => {
  const kinds = manifests();
  const text = kinds.get("ConfigMap")!.data["appsettings.json"] as string;
  const key = kinds.get("Secret")!.stringData.ops as string;
  await using svc = await startHttpSvc({
    config: await parseConfigText(text, "configmap.yaml") as Record<string, unknown>,
    env: { "Authentication__Schemes__keys__Keys__ops__Value": key },
  });
  for (const path of ["/health", "/health/ready"]) {
    const response = await fetch(`${svc.url}${path}`);
    assert.equal(response.status, 200, path);
    await response.body?.cancel();
  }
  const denied = await post(`${svc.url}/call`, { tool: "get_date", arguments: {} });
  assert.equal(denied.status, 401);
  const tools = await fetch(`${svc.url}/tools`, { headers: { "x-api-key": key } });
  const names = ((await tools.json()).tools as { name: string }[]).map((t) => t.name);
  const date = names.find((n) => n.startsWith("get_date"))!;
  const call = await post(`${svc.url}/call`, { tool: date, arguments: {} }, { "x-api-key": key });
  assert.equal(call.status, 200);
  assert.ok(!svc.stderr().includes(key), "the key never reaches the logs");
});

Deno.test("release workflow: on a version tag, tests, bundle, five binaries, checksums, a release", () => {
  const workflow = parseYaml(read(".github/workflows/release.yml"));
  assert.deepEqual(workflow.on.push.tags, ["v*"]);
  const run = (workflow.jobs.release.steps as Manifest[]).map((s) => s.run ?? "").join("\n");
  for (const command of ["bin/deno task test", "bin/deno task bundle", "bin/deno task compile"]) {
    assert.ok(run.includes(command), command);
    const task = command.split(" ").at(-1)!;
    assert.ok(task in JSON.parse(read("deno.json")).tasks, `deno task ${task} exists`);
  }
  assert.match(run, /sha256sum svc-\* svc\.js > SHA256SUMS/);
  assert.match(run, /gh release create "\$GITHUB_REF_NAME" dist\/release\/\*/);
  // compile with no --target builds all five release targets.
  assert.doesNotMatch(run, /task compile --target/);
});
