/**
 * Raising svc's soft open-files limit (`RLIMIT_NOFILE`) to its hard limit at start, on Linux. Every
 * connection holds a file descriptor, and a common default is soft 1,024 / hard 1,048,576: at the
 * soft limit svc runs out of descriptors (EMFILE) at about 1,000 connections, although the system
 * would allow far more. Deno 2.9.6's `deno run` raises the limit itself; svc does it too, so that it
 * does not depend on that. Workers started afterwards inherit the raised limit.
 *
 * @module
 */

/** `RLIMIT_NOFILE` on Linux (x86_64 and aarch64). */
const RLIMIT_NOFILE = 7;
/** `RLIM_INFINITY`: no limit. */
const RLIM_INFINITY = 0xffff_ffff_ffff_ffffn;

/** The open-files limits after {@linkcode raiseOpenFilesLimit}, or why they are not known. */
export type OpenFilesLimit =
  | { soft: bigint; hard: bigint; raisedFrom: bigint | null }
  | "not Linux"
  | "no FFI permission"
  | "failed";

/**
 * Raises the soft open-files limit to the hard one through libc's `getrlimit`/`setrlimit` (needs
 * Deno's FFI permission, which `--allow-all` and the Dockerfile's `--allow-ffi` grant). Best
 * effort: a limit it cannot raise stays as it was. Never throws.
 */
export function raiseOpenFilesLimit(): OpenFilesLimit {
  if (Deno.build.os !== "linux") return "not Linux";
  if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return "no FFI permission";
  try {
    const libc = Deno.dlopen("libc.so.6", {
      getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
      setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
    });
    try {
      // struct rlimit { rlim_t rlim_cur; rlim_t rlim_max; }, both 64-bit.
      const limit = new BigUint64Array(2);
      if (libc.symbols.getrlimit(RLIMIT_NOFILE, limit) !== 0) return "failed";
      const [soft = 0n, hard = 0n] = limit;
      if (soft >= hard || hard === RLIM_INFINITY) return { soft, hard, raisedFrom: null };
      const raised = new BigUint64Array([hard, hard]);
      if (libc.symbols.setrlimit(RLIMIT_NOFILE, raised) !== 0) {
        return { soft, hard, raisedFrom: null };
      }
      return { soft: hard, hard, raisedFrom: soft };
    } finally {
      libc.close();
    }
  } catch {
    return "failed"; // no glibc (musl, say): the limit stays as it was
  }
}
