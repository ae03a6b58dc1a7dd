/**
 * Media items: output items a call's result carries as MCP image, audio or embedded-resource
 * content rather than as JSON text. The worker sends each byte array as base64 and each object
 * typed `svc.EmbeddedResource` as the resource it describes (docs/worker-protocol.md §4.4,
 * `media`); here a byte array gets its media type, the one its first bytes show or else the one its
 * command declares with `[OutputType('audio/L16')]`, and the output becomes content
 * blocks in the order the command wrote it (docs/results.md, "Images, audio and resources").
 *
 * @module
 */
import type { CallToolResult } from "@modelcontextprotocol/server";

/** One block of a result's `content`. */
export type ContentBlock = CallToolResult["content"][number];

/** Media types whose byte arrays become image or audio content. */
const CONTENT_KIND = /^(image|audio)\/[a-z0-9][a-z0-9.+-]*$/i;

/**
 * The media type a command declares for the byte arrays it writes: the first of its
 * `[OutputType]` names that is an image or audio media type (`image/png`, `audio/wav`), else
 * undefined.
 */
export function declaredMediaType(outputTypes: readonly string[]): string | undefined {
  return outputTypes.find((name) => CONTENT_KIND.test(name));
}

/** Bytes {@linkcode sniffMediaType} reads at most. */
const SNIFF_BYTES = 12;

/**
 * The media type the first bytes of `bytes` show, or null: PNG, JPEG, GIF, WebP, WAV, MP3 (an ID3
 * tag or an MPEG audio frame header) and Ogg, by the signatures their formats begin with.
 */
export function sniffMediaType(bytes: Uint8Array): string | null {
  const ascii = (from: number, text: string) =>
    [...text].every((c, i) => bytes[from + i] === c.charCodeAt(0));
  const [b0, b1] = bytes;
  if (ascii(0, "\x89PNG\r\n\x1a\n")) return "image/png";
  if (b0 === 0xff && b1 === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  if (ascii(0, "GIF87a") || ascii(0, "GIF89a")) return "image/gif";
  if (ascii(0, "RIFF") && ascii(8, "WEBP")) return "image/webp";
  if (ascii(0, "RIFF") && ascii(8, "WAVE")) return "audio/wav";
  if (ascii(0, "OggS")) return "audio/ogg";
  if (ascii(0, "ID3")) return "audio/mpeg";
  // An MPEG audio frame: 11 sync bits, then a version other than "reserved" and a layer.
  if (b0 === 0xff && b1 !== undefined && (b1 & 0xe0) === 0xe0 && (b1 & 0x18) !== 0x08) {
    if ((b1 & 0x06) !== 0) return "audio/mpeg";
  }
  return null;
}

/** A media item as the worker sends it. */
interface WireMedia {
  /** The byte array's, or the resource's binary content, as base64. */
  bytes?: string;
  /** The resource's URI: present only for an embedded resource. */
  uri?: string;
  /** The resource's media type, as its command gave it. */
  mimeType?: string | null;
  /** The resource's text content. */
  text?: string;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The worker's media item, checked; null for a value that is not one. */
function wireMedia(value: unknown): WireMedia | null {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const item = value as Record<string, unknown>;
  if (item.bytes !== undefined && (typeof item.bytes !== "string" || !BASE64.test(item.bytes))) {
    return null;
  }
  if (item.uri === undefined) return typeof item.bytes === "string" ? item as WireMedia : null;
  if (typeof item.uri !== "string" || !URL.canParse(item.uri)) return null;
  if (item.mimeType !== undefined && item.mimeType !== null && typeof item.mimeType !== "string") {
    return null;
  }
  if (typeof item.text !== "string" && typeof item.bytes !== "string") return null;
  return item as WireMedia;
}

/** Bytes of binary data `base64` carries. */
function decodedSize(base64: string): number {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return (base64.length / 4) * 3 - padding;
}

/** The first bytes of `base64`'s data, enough for {@linkcode sniffMediaType}. */
function head(base64: string): Uint8Array {
  const text = atob(base64.slice(0, Math.ceil(SNIFF_BYTES / 3) * 4));
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

/** Options of {@linkcode mediaOutput}. */
export interface MediaOutputOptions {
  /** The indices of the items the worker sent as media items (`media`). */
  media: readonly number[];
  /** The output as the worker sent it, to tell an item kept whole from one svc shortened. */
  sent: readonly unknown[];
  /** `MaxResultBytes`, named where a media item alone exceeded it. */
  maxResultBytes: number;
  /**
   * The media type the tool's command declares (`declaredMediaType`), for byte arrays whose first
   * bytes show none. @default none
   */
  declared?: string | undefined;
  /** The index in `content` the first output block will have. */
  firstBlock: number;
  /** The text block of a run of ordinary items. */
  text: (items: unknown[]) => string;
}

/** The output of a call with media items, as content blocks and as `structuredContent.output`. */
export interface MediaOutput {
  /** The output's content blocks in order: each run of ordinary items as one text block, each media item as its own. */
  blocks: ContentBlock[];
  /**
   * The output as `structuredContent.output` carries it: an image, audio or resource item as a
   * reference to its block (`content`, its index in `content`), a byte array of no media type svc
   * knows as `{base64, bytes}`.
   */
  output: unknown[];
}

/**
 * The output `kept` with its media items (of `options.media`) as blocks of their own, or null when
 * none of them is one (then the output is shaped as text alone).
 */
export function mediaOutput(
  kept: readonly unknown[],
  options: MediaOutputOptions,
): MediaOutput | null {
  const wire = new Map<number, WireMedia>();
  let shortened: number | null = null;
  for (const index of options.media) {
    if (!Number.isInteger(index) || index >= kept.length) continue;
    // A first item that alone exceeds the cap is shortened by svc: a cut of its data is no use.
    if (kept[index] !== options.sent[index]) shortened = index;
    const item = wireMedia(options.sent[index]);
    if (item && shortened !== index) wire.set(index, item);
  }
  if (wire.size === 0 && shortened === null) return null;
  const blocks: ContentBlock[] = [];
  const output: unknown[] = [];
  let run: unknown[] = [];
  const flush = () => {
    if (run.length > 0) blocks.push({ type: "text", text: options.text(run) });
    run = [];
  };
  kept.forEach((value, index) => {
    if (index === shortened) {
      const sentence = `[svc: a media item of ${
        JSON.stringify(options.sent[index]).length
      } bytes as JSON was left out: it alone exceeds ShellConfiguration:MaxResultBytes (${options.maxResultBytes})]`;
      output.push(sentence);
      run.push(sentence);
      return;
    }
    const item = wire.get(index);
    const block = item ? blockOf(item, options.declared) : null;
    if (item && !block) {
      const described = { base64: item.bytes, bytes: decodedSize(item.bytes!) };
      output.push(described);
      run.push(described);
      return;
    }
    if (!block) {
      output.push(value);
      run.push(value);
      return;
    }
    flush();
    output.push({ content: options.firstBlock + blocks.length, ...referenceOf(block, item!) });
    blocks.push(block);
  });
  flush();
  return { blocks, output };
}

/** The content block of a media item; null for a byte array of no image or audio type. */
function blockOf(item: WireMedia, declared: string | undefined): ContentBlock | null {
  if (item.uri !== undefined) {
    const mimeType = item.mimeType ||
      (item.text !== undefined
        ? "text/plain"
        : sniffMediaType(head(item.bytes!)) ?? "application/octet-stream");
    return {
      type: "resource",
      resource: item.text !== undefined
        ? { uri: item.uri, mimeType, text: item.text }
        : { uri: item.uri, mimeType, blob: item.bytes! },
    };
  }
  const mimeType = sniffMediaType(head(item.bytes!)) ?? declared ?? null;
  if (mimeType === null) return null;
  const type = mimeType.startsWith("audio/") ? "audio" : "image";
  return { type, data: item.bytes!, mimeType };
}

/** What `structuredContent.output` says of a media item in place of its data. */
function referenceOf(block: ContentBlock, item: WireMedia): Record<string, unknown> {
  if (block.type === "resource") {
    const { uri, mimeType } = block.resource;
    return item.text !== undefined
      ? { type: "resource", uri, mimeType }
      : { type: "resource", uri, mimeType, bytes: decodedSize(item.bytes!) };
  }
  if (block.type === "image" || block.type === "audio") {
    return { type: block.type, mimeType: block.mimeType, bytes: decodedSize(item.bytes!) };
  }
  return {};
}
