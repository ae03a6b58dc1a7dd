/**
 * nginx (Debian's `nginx-light`, which CI installs) on loopback for the tests that put a reverse
 * proxy in front of svc: one process per test, run in the foreground from a temporary directory
 * with the `http` block's contents a test gives.
 *
 * @module
 */
import { answersOk, eventually } from "./harness.ts";

/** The nginx binary, or null where none is installed (the tests that need it then say so). */
export const NGINX: string | null =
  ["/usr/sbin/nginx", ...(Deno.env.get("PATH") ?? "").split(":").map((d) => `${d}/nginx`)]
    .find((path) => {
      try {
        return Deno.statSync(path).isFile;
      } catch {
        return false;
      }
    }) ?? null;

/** A loopback TCP port that was free a moment ago. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** A running nginx. */
export interface Nginx extends AsyncDisposable {
  /** Its temporary directory: configuration, logs, temp files. */
  dir: string;
  /** What nginx wrote to its error log so far. */
  errors(): string;
}

/**
 * Starts nginx with `http` as the contents of its `http` block (no access log unless it names one),
 * and waits until `ready` (a URL through it that answers 200, or a check) says it serves. `{dir}` in
 * `http` stands for nginx's temporary directory.
 */
export async function startNginx(
  http: string,
  ready: string | (() => Promise<boolean>),
): Promise<Nginx> {
  if (NGINX === null) throw new Error("no nginx binary; apt install nginx-light");
  const dir = await Deno.makeTempDir({ prefix: "svc-nginx-" });
  const conf = `
${Deno.uid() === 0 ? "user root;" : ""}
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
${/\baccess_log\b/.test(http) ? "" : "  access_log off;"}
${http.replaceAll("{dir}", dir)}
}
`;
  await Deno.writeTextFile(`${dir}/nginx.conf`, conf);
  const child = new Deno.Command(NGINX, {
    args: ["-p", dir, "-c", `${dir}/nginx.conf`],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const errors = () => {
    try {
      return Deno.readTextFileSync(`${dir}/error.log`);
    } catch {
      return "";
    }
  };
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await child.stderr.cancel();
    await Deno.remove(dir, { recursive: true });
  };
  const check = typeof ready === "string" ? () => answersOk(ready) : ready;
  if (!await eventually(check, 10_000)) {
    const said = errors();
    await stop();
    throw new Error(`nginx did not answer ${ready}: ${said}`);
  }
  return { dir, errors, [Symbol.asyncDispose]: stop };
}
