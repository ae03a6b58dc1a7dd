/**
 * Ending a worker with everything it started: a command's native programs run as the worker's
 * descendants, and a killed worker must not leave them behind.
 *
 * @module
 */

const IS_WINDOWS = Deno.build.os === "windows";

/** Kills a process and all its descendants with SIGKILL (taskkill /T on Windows). */
export async function killTree(child: Deno.ChildProcess): Promise<void> {
  const pid = child.pid;
  if (IS_WINDOWS) {
    await new Deno.Command("taskkill", {
      args: ["/PID", String(pid), "/T", "/F"],
      stdout: "null",
      stderr: "null",
    })
      .output()
      .catch(() => {});
  } else {
    const descendants = await descendantsOf(pid);
    try {
      Deno.kill(-pid, "SIGKILL");
    } catch { /* group already gone */ }
    for (const p of descendants) {
      try {
        Deno.kill(p, "SIGKILL");
      } catch { /* already gone */ }
    }
  }
  try {
    child.kill("SIGKILL");
  } catch { /* already exited */ }
}

/** Every descendant pid of `root`, from one `ps` listing (Linux and macOS). */
async function descendantsOf(root: number): Promise<number[]> {
  try {
    const { stdout } = await new Deno.Command("ps", {
      args: ["-A", "-o", "pid=", "-o", "ppid="],
      stdout: "piped",
      stderr: "null",
    }).output();
    const children = new Map<number, number[]>();
    for (const line of new TextDecoder().decode(stdout).split("\n")) {
      const [pid, ppid] = line.trim().split(/\s+/).map(Number);
      if (!pid || ppid === undefined || Number.isNaN(ppid)) continue;
      children.set(ppid, [...(children.get(ppid) ?? []), pid]);
    }
    const found: number[] = [];
    const stack = [root];
    while (stack.length > 0) {
      for (const child of children.get(stack.pop()!) ?? []) {
        found.push(child);
        stack.push(child);
      }
    }
    return found;
  } catch {
    return [];
  }
}
