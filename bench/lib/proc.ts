/**
 * Process inspection for the benchmark harness: the process table (`ps -A -o pid=,ppid=,args=`),
 * descendants of a process, RSS (Linux `/proc/<pid>/status` VmRSS, else `ps -o rss=`), threads, open
 * file descriptors and CPU ticks, and a tracker that remembers every worker pid seen so that a run can
 * prove it left no orphans behind.
 *
 * @module
 */

const decoder = new TextDecoder();

/** One row of the process table. */
export interface ProcessRow {
  pid: number;
  ppid: number;
  args: string;
}

/** The rows of `ps -A -o pid=,ppid=,args=`'s output. */
function parseProcessTable(stdout: Uint8Array): ProcessRow[] {
  const rows: ProcessRow[] = [];
  for (const line of decoder.decode(stdout).split("\n")) {
    const match = /^\s*(\d+)\s+(\d+)\s?(.*)$/.exec(line);
    if (match) rows.push({ pid: Number(match[1]), ppid: Number(match[2]), args: match[3] ?? "" });
  }
  return rows;
}

/** The live process table (without zombies' args distinction; `ps` lists them too). */
export function processTable(): ProcessRow[] {
  const out = new Deno.Command("ps", {
    args: ["-A", "-o", "pid=,ppid=,args="],
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  return parseProcessTable(out.stdout);
}

/** Pids of every descendant of `pid` (children, grandchildren, ...), from one table snapshot. */
export function descendants(pid: number, table: ProcessRow[] = processTable()): number[] {
  const children = new Map<number, number[]>();
  for (const row of table) {
    const list = children.get(row.ppid) ?? [];
    list.push(row.pid);
    children.set(row.ppid, list);
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      if (child === pid || found.includes(child)) continue;
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** Direct children of `pid`. */
export function childrenOf(pid: number, table: ProcessRow[] = processTable()): ProcessRow[] {
  return table.filter((row) => row.ppid === pid);
}

function statusField(pid: number, field: string): string | null {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/status`);
    const match = new RegExp(`^${field}:\\s*(.+)$`, "m").exec(text);
    return match ? match[1]!.trim() : null;
  } catch {
    return null;
  }
}

/** Resident set size of one process in bytes (0 when it is gone). */
export function rssOf(pid: number): number {
  if (Deno.build.os === "linux") {
    const value = statusField(pid, "VmRSS");
    return value ? Number.parseInt(value, 10) * 1024 : 0;
  }
  const out = new Deno.Command("ps", { args: ["-o", "rss=", "-p", String(pid)], stdout: "piped" })
    .outputSync();
  const kb = Number.parseInt(decoder.decode(out.stdout).trim(), 10);
  return Number.isNaN(kb) ? 0 : kb * 1024;
}

/** Number of threads of a process (Linux; NaN elsewhere or when gone). */
export function threadsOf(pid: number): number {
  const value = statusField(pid, "Threads");
  return value ? Number.parseInt(value, 10) : Number.NaN;
}

/** Number of open file descriptors of a process (Linux; NaN elsewhere or when gone). */
export function fdsOf(pid: number): number {
  try {
    let count = 0;
    for (const _ of Deno.readDirSync(`/proc/${pid}/fd`)) count++;
    return count;
  } catch {
    return Number.NaN;
  }
}

/** User + system CPU clock ticks consumed by a process so far (Linux; NaN when unknown). */
export function cpuTicks(pid: number): number {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The command name is in parentheses and may contain spaces: split after the last ')'.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return Number.NaN;
  }
}

/** Microseconds in one CPU clock tick of {@linkcode cpuTicks} (USER_HZ is 100 on Linux). */
export const TICK_US = 10_000;

/** CPU clock ticks of `pid` and every descendant now (those that ended are not counted). */
export function treeCpuTicks(pid: number): number {
  return [pid, ...descendants(pid)].map(cpuTicks).filter(Number.isFinite).reduce(
    (a, b) => a + b,
    0,
  );
}

/** The 1, 5 and 15 minute load averages, as /proc/loadavg gives them. */
export function loadAverage(): string {
  return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
}

/** True while the process exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  if (Deno.build.os === "linux") {
    try {
      const text = Deno.readTextFileSync(`/proc/${pid}/stat`);
      return text.slice(text.lastIndexOf(")") + 2, text.lastIndexOf(")") + 3) !== "Z";
    } catch {
      return false;
    }
  }
  const out = new Deno.Command("ps", { args: ["-o", "stat=", "-p", String(pid)], stdout: "piped" })
    .outputSync();
  const stat = decoder.decode(out.stdout).trim();
  return stat !== "" && !stat.startsWith("Z");
}

/** The command line of a live process ("" when gone). */
export function commandLine(pid: number): string {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ").trim();
  } catch {
    return processTable().find((row) => row.pid === pid)?.args ?? "";
  }
}

/** Sends a signal to one process by pid; false when it is already gone. */
export function signal(pid: number, sig: Deno.Signal = "SIGKILL"): boolean {
  try {
    Deno.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/** RSS of a process and all its descendants. */
export interface TreeMemory {
  /** Sum over the process and its descendants, bytes. */
  total: number;
  /** The process itself, bytes. */
  server: number;
  /** Each descendant with its RSS. */
  children: { pid: number; rss: number; args: string }[];
}

/** Samples RSS of `pid` and every descendant (one `ps` snapshot, then `/proc` per pid). */
export function treeMemory(pid: number): TreeMemory {
  return treeMemoryIn(pid, processTable());
}

/** RSS of `pid` and of its descendants in `table`. */
function treeMemoryIn(pid: number, table: ProcessRow[]): TreeMemory {
  const server = rssOf(pid);
  const children = descendants(pid, table).map((child) => ({
    pid: child,
    rss: rssOf(child),
    args: table.find((row) => row.pid === child)?.args ?? "",
  }));
  return { total: server + children.reduce((s, c) => s + c.rss, 0), server, children };
}

/** Markers of worker processes: pwsh running svc's host script carries its argument. */
export const WORKER_MARKERS = ["host.ps1 -Endpoint"];

/** True when a command line looks like an svc worker. */
export function isWorkerCommand(args: string): boolean {
  return WORKER_MARKERS.some((marker) => args.includes(marker));
}

/**
 * Remembers every process the harness started or saw below a server it started, so the end of a run
 * can report (and then end) any that outlived their server. Only pids recorded here are ever killed.
 */
export class ProcessTracker {
  readonly #seen = new Map<number, string>();

  /** Records a pid with its command line (the line guards against pid reuse later). */
  add(pid: number, args = commandLine(pid)): void {
    if (!this.#seen.has(pid)) this.#seen.set(pid, args);
  }

  /** Records `pid` and every current descendant. */
  addTree(pid: number): void {
    const table = processTable();
    const args = table.find((row) => row.pid === pid)?.args;
    if (args !== undefined) this.add(pid, args);
    for (const child of descendants(pid, table)) {
      this.add(child, table.find((row) => row.pid === child)?.args ?? "");
    }
  }

  /** Recorded processes still alive with the same command line. */
  survivors(): { pid: number; args: string }[] {
    const table = processTable();
    const out: { pid: number; args: string }[] = [];
    for (const [pid, args] of this.#seen) {
      const row = table.find((r) => r.pid === pid);
      if (row && row.args === args && isAlive(pid)) out.push({ pid, args });
    }
    return out;
  }

  /** Kills (SIGKILL) the given survivors one by one, by pid. */
  killAll(survivors: { pid: number }[]): void {
    for (const { pid } of survivors) signal(pid, "SIGKILL");
  }
}

/** Waits until `check` is true, polling every `everyMs`, for at most `ms`; returns the final check. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  ms: number,
  everyMs = 25,
): Promise<boolean> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return await check();
}

/** Sleeps `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The process table, read without blocking the event loop (the load drivers keep running). */
async function processTableAsync(): Promise<ProcessRow[]> {
  const out = await new Deno.Command("ps", {
    args: ["-A", "-o", "pid=,ppid=,args="],
    stdout: "piped",
    stderr: "null",
  }).output();
  return parseProcessTable(out.stdout);
}

/** {@linkcode treeMemory} with the `ps` snapshot taken asynchronously. */
export async function treeMemoryAsync(pid: number): Promise<TreeMemory> {
  return treeMemoryIn(pid, await processTableAsync());
}

/** The largest tree RSS seen while sampling, with the number of processes at that moment. */
export interface PeakMemory {
  /** Largest sum of VmRSS over the tree, bytes (0 when no sample was taken). */
  peak: number;
  /** Processes in the tree (the root included) at the peak. */
  processes: number;
  /** The root's own RSS at the peak, bytes. */
  server: number;
  /** Samples taken. */
  samples: number;
}

/**
 * Samples the RSS of `pid`'s process tree every `everyMs` (default 250) until `stop()` resolves with
 * the peak. Sampling is asynchronous so that a closed loop running meanwhile is not held up by `ps`.
 */
export function samplePeakMemory(pid: number, everyMs = 250): { stop(): Promise<PeakMemory> } {
  const found: PeakMemory = { peak: 0, processes: 0, server: 0, samples: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      const tree = await treeMemoryAsync(pid);
      found.samples++;
      if (tree.total > found.peak) {
        found.peak = tree.total;
        found.server = tree.server;
        found.processes = 1 + tree.children.filter((c) => c.rss > 0).length;
      }
      await sleep(everyMs);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return found;
    },
  };
}

/**
 * Stops a process tree the harness started: SIGTERM to `pid`, then, if it has not exited within
 * `graceMs` (default 10 s), SIGKILL to it and to every descendant seen before or after the SIGTERM
 * that is still alive. A server that ends its own children on SIGTERM (svc, PoshMcp) is left to do
 * so; the snapshot catches the ones a launcher script would leave behind.
 */
export async function stopTree(
  pid: number,
  exited: Promise<unknown>,
  graceMs = 10_000,
): Promise<void> {
  const before = descendants(pid);
  signal(pid, "SIGTERM");
  const done = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
  if (!done) signal(pid, "SIGKILL");
  await exited;
  // Children that outlived the root are re-parented and no longer below it: use the snapshot.
  if (!(await waitFor(() => before.every((child) => !isAlive(child)), done ? 2_000 : 0))) {
    for (const child of before) if (isAlive(child)) signal(child, "SIGKILL");
  }
}
