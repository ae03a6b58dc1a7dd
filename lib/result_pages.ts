/**
 * Output cut at `MaxResultBytes`, kept for a while as a resource the result links to: the items
 * after those the result holds, in pages of whole items each within `MaxResultBytes`, readable
 * (`svc://results/<id>/<page>`) only by the principal whose call made them, until `Ttl` passes or
 * the room of `TotalBytes` is needed for newer output (oldest first). Ids are random: a URI names
 * nothing to anyone else, and another principal's read is answered as for a URI that never was.
 *
 * @module
 */
import type { CallToolResult, ResourceLink } from "@modelcontextprotocol/server";
import { parseTimeSpan } from "./config_reader.ts";
import { settingOf } from "./config_schema.ts";
import type { Truncation } from "./result_fit.ts";
import type { InvokeResult } from "./worker_protocol.ts";

/** Options of {@linkcode ResultPages} (`ShellConfiguration:ResultResources`). */
export interface ResultPagesOptions {
  /** Output kept of one call, in bytes of JSON; 0 keeps none. @default 98304 */
  maxBytes: number;
  /** Output kept of all calls together. @default 16777216 */
  totalBytes: number;
  /** How long output stays readable, in ms. @default 600000 */
  ttlMs: number;
  /** Most bytes of a page (a lone larger item has a page of its own). @default `MaxResultBytes` */
  pageBytes: number;
}

interface Kept {
  owner: string;
  pages: string[];
  bytes: number;
  expires: number;
  timer: ReturnType<typeof setTimeout>;
}

const PREFIX = "svc://results/";
const encoder = new TextEncoder();

/** The kept output of a process's calls (see the module documentation). */
export class ResultPages {
  readonly #options: ResultPagesOptions;
  /** By id, oldest first (a Map keeps insertion order). */
  readonly #kept = new Map<string, Kept>();
  #bytes = 0;

  /** Settings left out take their defaults (`ShellConfiguration:ResultResources`). */
  constructor(options: Partial<ResultPagesOptions> & Pick<ResultPagesOptions, "pageBytes">) {
    const setting = (key: string) => settingOf(`ShellConfiguration:ResultResources:${key}`)!;
    this.#options = {
      maxBytes: setting("MaxBytes").default as number,
      totalBytes: setting("TotalBytes").default as number,
      ttlMs: parseTimeSpan(setting("Ttl").default as string)!,
      ...options,
    };
  }

  /** Output bytes a call may send beyond `MaxResultBytes` so that the rest can be kept. */
  get maxBytes(): number {
    return Math.min(this.#options.maxBytes, this.#options.totalBytes);
  }

  /**
   * Keeps `items` (output a result could not hold, items `first`.. of the whole) for `owner`; the
   * link to their first page, or null when there is nothing to keep or no room for it.
   * `complete` is false when the worker sent only part of the output.
   */
  keep(
    owner: string,
    items: unknown[],
    context: { tool: string; first: number; complete: boolean },
  ): ResourceLink | null {
    if (items.length === 0 || this.maxBytes === 0) return null;
    const pages = this.#paginate(items);
    if (pages === null) return null;
    const bytes = pages.reduce((sum, page) => sum + encoder.encode(page.text).length, 0);
    this.#makeRoom(bytes);
    const id = crypto.randomUUID();
    const timer = setTimeout(() => this.#drop(id), this.#options.ttlMs);
    Deno.unrefTimer(timer);
    this.#kept.set(id, {
      owner,
      pages: pages.map((page) => page.text),
      bytes,
      expires: Date.now() + this.#options.ttlMs,
      timer,
    });
    this.#bytes += bytes;
    const kept = pages.reduce((sum, page) => sum + page.items, 0);
    const minutes = Math.round(this.#options.ttlMs / 60_000);
    const last = context.first + kept;
    return {
      type: "resource_link",
      uri: pageUri(id, 1),
      name: `${context.tool} output, items ${context.first + 1}-${last}`,
      mimeType: "application/json",
      description: `Items ${context.first + 1} to ${last} of the output${
        context.complete ? "" : " (svc kept no more of it)"
      }, in ${pages.length} page(s) of a JSON array each: ${pageUri(id, 1)} to ${
        pageUri(id, pages.length)
      }, readable by this caller for ${
        minutes >= 1 ? `${minutes} minute(s)` : `${Math.round(this.#options.ttlMs / 1000)} s`
      }.`,
      size: bytes,
    };
  }

  /**
   * The page a URI names, when `owner` may read it: its JSON text, its number and count, and the
   * ms it stays readable. Null for an unknown, expired or foreign page, alike.
   */
  read(
    owner: string,
    uri: string,
  ): { text: string; page: number; pages: number; ttlMs: number } | null {
    const found = /^svc:\/\/results\/([0-9a-f-]{36})\/([1-9][0-9]{0,6})$/.exec(uri);
    if (found === null) return null;
    const kept = this.#kept.get(found[1]!);
    const page = Number(found[2]);
    if (kept === undefined || kept.owner !== owner || page > kept.pages.length) return null;
    const ttlMs = kept.expires - Date.now();
    if (ttlMs <= 0) return null;
    return { text: kept.pages[page - 1]!, page, pages: kept.pages.length, ttlMs };
  }

  /** Drops everything kept and its timers. */
  close(): void {
    for (const id of [...this.#kept.keys()]) this.#drop(id);
  }

  /** Pages of whole items within `pageBytes`, up to `maxBytes` in all; null when none fits. */
  #paginate(items: unknown[]): { text: string; items: number }[] | null {
    const pages: { text: string; items: number }[] = [];
    let current: string[] = [];
    let size = 2;
    let total = 0;
    const flush = () => {
      if (current.length === 0) return;
      pages.push({ text: `[${current.join(",")}]`, items: current.length });
      current = [];
      size = 2;
    };
    for (const item of items) {
      const json = JSON.stringify(item) ?? "null";
      const bytes = encoder.encode(json).length + 1;
      if (total + bytes > this.maxBytes) break;
      if (size + bytes > this.#options.pageBytes) flush();
      current.push(json);
      size += bytes;
      total += bytes;
    }
    flush();
    return pages.length === 0 ? null : pages;
  }

  /** Drops the oldest output until `bytes` more fit within `totalBytes`. */
  #makeRoom(bytes: number): void {
    for (const id of this.#kept.keys()) {
      if (this.#bytes + bytes <= this.#options.totalBytes) return;
      this.#drop(id);
    }
  }

  #drop(id: string): void {
    const kept = this.#kept.get(id);
    if (kept === undefined) return;
    clearTimeout(kept.timer);
    this.#kept.delete(id);
    this.#bytes -= kept.bytes;
  }
}

/** The URI of page `page` (from 1) of kept output `id`. */
function pageUri(id: string, page: number): string {
  return `${PREFIX}${id}/${page}`;
}

/** Whether a URI names kept output (readable or not). */
export function isResultUri(uri: string): boolean {
  return uri.startsWith(PREFIX);
}

/**
 * Links a result whose output was cut to the rest of it, kept in `pages` for `owner`: the link
 * follows the result's content, and a note says where the rest is. Nothing changes when nothing
 * was cut, or nothing could be kept.
 */
export function linkRest(
  result: CallToolResult,
  invoked: InvokeResult,
  tool: string,
  keep: { pages: ResultPages; owner: string },
): void {
  const structured = result.structuredContent as Record<string, unknown> | undefined;
  const truncated = structured?.truncated as Truncation | undefined;
  if (truncated === undefined) return;
  // A shortened first item is kept whole, from the start.
  const first = truncated.shortenedFirst ? 0 : truncated.keptItems;
  const link = keep.pages.keep(keep.owner, invoked.output.slice(first), {
    tool,
    first,
    complete: invoked.outputCut === undefined,
  });
  if (link === null) return;
  result.content.push(link);
  const note =
    `svc kept the output past the cut for a while: read ${link.uri} (resources/read) and the pages after it; ${link.description}`;
  structured!.notes = [...(structured!.notes as string[] | undefined ?? []), note];
}
