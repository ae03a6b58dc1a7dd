/**
 * Keeps svc's own process out of its workers' reach. A worker runs as the svc user, and on Linux a
 * process of the same user may read another's `/proc/<pid>/environ` (the environment it was started
 * with: API keys given as variables, whatever svc later removes) and, where ptrace allows, its
 * memory. A process that is not "dumpable" has those files owned by root instead
 * (`prctl(PR_SET_DUMPABLE, 0)`); its children, the workers, start dumpable again, so their own
 * diagnostics are unchanged. Root bypasses this, as it bypasses every file permission: run svc as a
 * user of its own.
 *
 * @module
 */

const PR_SET_DUMPABLE = 4;

/** What {@linkcode hardenProcess} did: `done`, or why not. */
export type Hardening = "done" | "not Linux" | "no FFI permission" | "failed";

/**
 * Marks svc's process not dumpable on Linux, through libc's `prctl` (needs Deno's FFI permission,
 * which `--allow-all` and the Dockerfile's `--allow-ffi` grant). Never throws.
 */
export function hardenProcess(): Hardening {
  if (Deno.build.os !== "linux") return "not Linux";
  if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return "no FFI permission";
  try {
    const libc = Deno.dlopen("libc.so.6", {
      prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" },
    });
    try {
      return libc.symbols.prctl(PR_SET_DUMPABLE, 0n, 0n, 0n, 0n) === 0 ? "done" : "failed";
    } finally {
      libc.close();
    }
  } catch {
    return "failed"; // no glibc (musl, say): the process stays as it was
  }
}
