/**
 * Media items: a byte array a command writes becomes MCP image or audio content of the type its
 * first bytes show (or its command declares), an `svc.EmbeddedResource` object an embedded resource,
 * each in the order written among text blocks, within MaxResultBytes. End to end through the SDK
 * client on real pwsh over stdio and HTTP, plus the rules as units.
 */
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { declaredMediaType, mediaOutput, sniffMediaType } from "../lib/result_media.ts";
import { fixtureConfig, startHttpSvc, startSvc } from "./support/harness.ts";

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const bytesOf = (text: string, ...more: number[]) =>
  Uint8Array.from([...text].map((c) => c.charCodeAt(0)).concat(more));
const decoded = (base64: string) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));

Deno.test("a byte array's media type is what its first bytes show", () => {
  const cases: [Uint8Array, string | null][] = [
    [decoded(PNG), "image/png"],
    [Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]), "image/jpeg"],
    [bytesOf("GIF89a", 1, 0), "image/gif"],
    [bytesOf("GIF87a"), "image/gif"],
    [bytesOf("RIFF\x24\0\0\0WEBPVP8 "), "image/webp"],
    [bytesOf("RIFF\x24\0\0\0WAVEfmt "), "audio/wav"],
    [bytesOf("OggS\0\x02"), "audio/ogg"],
    [bytesOf("ID3\x04\0"), "audio/mpeg"],
    [Uint8Array.from([0xff, 0xfb, 0x90, 0x64]), "audio/mpeg"],
    // A reserved MPEG version, or no layer, is no frame header.
    [Uint8Array.from([0xff, 0xeb, 0x90]), null],
    [Uint8Array.from([0xff, 0xf8, 0x90]), null],
    [bytesOf("RIFF\x24\0\0\0AVI LIST"), null],
    [bytesOf("%PDF-1.7"), null],
    [Uint8Array.from([1, 2, 3, 4]), null],
    [new Uint8Array(0), null],
  ];
  for (const [bytes, type] of cases) assert.equal(sniffMediaType(bytes), type, `${bytes}`);
});

Deno.test("a command declares the media type of its byte arrays with an image or audio [OutputType]", () => {
  assert.equal(declaredMediaType(["System.String", "audio/L16"]), "audio/L16");
  assert.equal(declaredMediaType(["image/svg+xml", "image/png"]), "image/svg+xml");
  assert.equal(declaredMediaType(["System.Byte[]", "application/pdf", "text/plain"]), undefined);
  assert.equal(declaredMediaType(["image/", "audio/a b"]), undefined);
});

Deno.test("media items the worker sent that are not whole or not well formed stay output", () => {
  const text = (items: unknown[]) => JSON.stringify(items);
  const options = { firstBlock: 0, text, maxResultBytes: 1024 };
  // Shortened by svc's own fitting: not the item the worker sent.
  const sent = [{ bytes: PNG }];
  const cut = mediaOutput(["…"], { ...options, media: [0], sent });
  assert.deepEqual(cut?.output, [
    `[svc: a media item of ${
      JSON.stringify(sent[0]).length
    } bytes as JSON was left out: it alone exceeds ShellConfiguration:MaxResultBytes (1024)]`,
  ]);
  assert.equal(cut?.blocks[0]?.type, "text");
  // Not base64, a URI that does not parse, a resource without content, an index past the output.
  const odd = [{ bytes: "not base64!" }, { uri: "no uri", text: "x" }, { uri: "test://x" }];
  assert.equal(mediaOutput(odd, { ...options, media: [0, 1, 2, 7], sent: odd }), null);
});

type Block = {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  resource?: Record<string, string>;
};
type Result = { content: Block[]; structuredContent?: Record<string, unknown>; isError?: boolean };

/** The blocks and output a mixed call must give, through any transport. */
function assertMixed(result: Result): void {
  assert.deepEqual(result.content.map((b) => b.type), ["text", "image", "text", "resource"]);
  assert.deepEqual(JSON.parse(result.content[0]!.text!), ["before the image"]);
  assert.deepEqual(result.content[1], { type: "image", data: PNG, mimeType: "image/png" });
  // Unrecognised bytes stay output, as base64 with their size.
  assert.deepEqual(JSON.parse(result.content[2]!.text!), [
    { Name: "between", Count: 2 },
    { base64: "AQIDBA==", bytes: 4 },
  ]);
  assert.deepEqual(result.content[3]!.resource, {
    uri: "file:///fixture/pixel.png",
    mimeType: "image/png",
    blob: PNG,
  });
  assert.deepEqual(result.structuredContent?.output, [
    "before the image",
    { content: 1, type: "image", mimeType: "image/png", bytes: 70 },
    { Name: "between", Count: 2 },
    { base64: "AQIDBA==", bytes: 4 },
    {
      content: 3,
      type: "resource",
      uri: "file:///fixture/pixel.png",
      mimeType: "image/png",
      bytes: 70,
    },
  ]);
  assert.notEqual(result.isError, true);
}

Deno.test("stdio: images, audio and resources a command writes are content of their own, in order, within MaxResultBytes", async (t) => {
  await using svc = await startSvc({ config: fixtureConfig({ MaxResultBytes: 4096 }) });
  const call = async (name: string, args: Record<string, unknown> = {}) =>
    await svc.callTool(name, args) as unknown as Result;

  await t.step("a PNG by its signature; a WAV its command declares as well", async () => {
    const image = await call("test_image_content");
    assert.deepEqual(image.content, [{ type: "image", data: PNG, mimeType: "image/png" }]);
    assert.deepEqual(image.structuredContent, {
      output: [{ content: 0, type: "image", mimeType: "image/png", bytes: 70 }],
    });
    const audio = await call("test_audio_content");
    assert.equal(audio.content.length, 1);
    assert.equal(audio.content[0]!.type, "audio");
    assert.equal(audio.content[0]!.mimeType, "audio/wav");
    const wav = decoded(audio.content[0]!.data!);
    assert.equal(wav.length, 52);
    assert.equal(new TextDecoder().decode(wav.slice(8, 12)), "WAVE");
  });

  await t.step("bytes no signature names take the type their command declares", async () => {
    const pcm = await call("get_fixture_pcm");
    assert.deepEqual(pcm.content, [
      { type: "audio", data: "AAAAAAAAAAAAAAAAAAAAAA==", mimeType: "audio/L16" },
    ]);
  });

  await t.step("an svc.EmbeddedResource object is an embedded resource", async () => {
    const resource = await call("test_embedded_resource");
    assert.deepEqual(resource.content, [{
      type: "resource",
      resource: {
        uri: "test://embedded-resource",
        mimeType: "text/plain",
        text: "This is an embedded resource content.",
      },
    }]);
  });

  await t.step("mixed output keeps its order: text runs between media blocks", async () => {
    assertMixed(await call("get_fixture_media"));
  });

  await t.step("media count against MaxResultBytes like text", async () => {
    // 2000 bytes of padding: 2.8k of base64, within the 4096-byte cap.
    const fits = await call("get_fixture_media", { Size: 2000 });
    assert.equal(fits.content.length, 1);
    assert.equal(fits.content[0]!.type, "image");
    assert.equal(decoded(fits.content[0]!.data!).length, 2070);
    // 3000: 4.1k, which the worker sends (its bound is 1.25 times the cap) and svc leaves out.
    for (const size of [3000, 5000]) {
      const over = await call("get_fixture_media", { Size: size });
      // Left out of the result, and kept whole past the cut (a link to it ends the result).
      assert.ok(
        over.content.every((b) => b.type === "text" || b.type === "resource_link"),
        `${size}: no media block`,
      );
      assert.equal(over.content.at(-1)!.type, "resource_link");
      const [item] = over.structuredContent?.output as string[];
      assert.match(item!, /^\[svc: a media item of \d+ bytes as JSON was left out/);
      assert.match(over.content.at(-2)!.text!, /exceed ShellConfiguration:MaxResultBytes \(4096\)/);
      const truncated = over.structuredContent?.truncated as { shortenedFirst: boolean };
      assert.equal(truncated.shortenedFirst, true);
      assert.ok(JSON.stringify(over).length < 4096, `${size}: the result stays within the cap`);
    }
  });
});

Deno.test("http: a 2026-07-28 client gets the same content blocks", async () => {
  await using svc = await startHttpSvc({ config: fixtureConfig() });
  const client = new Client({ name: "media", version: "1" }, {
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)));
  try {
    assertMixed(await client.callTool({ name: "get_fixture_media", arguments: {} }) as Result);
    const mixed = await client.callTool({ name: "test_multiple_content_types", arguments: {} });
    assert.deepEqual((mixed as Result).content.map((b) => b.type), ["text", "image", "resource"]);
  } finally {
    await client.close();
  }
});
