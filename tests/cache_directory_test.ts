import assert from "node:assert/strict";
import {
  catalogCacheDirectory,
  defaultCacheDirectory,
  hostCacheDirectory,
} from "../lib/cache_directory.ts";

Deno.test("defaultCacheDirectory() prefers XDG_CACHE_HOME, then the home directory, else none", () => {
  assert.equal(
    defaultCacheDirectory({ XDG_CACHE_HOME: "/x/cache", HOME: "/home/u" }),
    "/x/cache/svc",
  );
  if (Deno.build.os !== "windows") {
    assert.equal(defaultCacheDirectory({ HOME: "/home/u" }), "/home/u/.cache/svc");
    assert.equal(
      defaultCacheDirectory({ XDG_CACHE_HOME: "", HOME: "/home/u" }),
      "/home/u/.cache/svc",
    );
    assert.equal(defaultCacheDirectory({ LOCALAPPDATA: "C:\\L" }), null);
  }
  assert.equal(defaultCacheDirectory({}), null);
});

Deno.test("hostCacheDirectory() takes HostCacheDirectory, then CacheDirectory, else the user cache directory", () => {
  assert.equal(hostCacheDirectory({ hostCacheDirectory: "/h", cacheDirectory: "/c" }), "/h");
  assert.equal(hostCacheDirectory({ hostCacheDirectory: null, cacheDirectory: "/c" }), "/c");
  assert.equal(
    hostCacheDirectory({ hostCacheDirectory: null, cacheDirectory: null }),
    defaultCacheDirectory(),
  );
});

Deno.test("catalogCacheDirectory() takes CacheDirectory, else the user cache directory", () => {
  assert.equal(catalogCacheDirectory({ cacheDirectory: "/c" }), "/c");
  assert.equal(catalogCacheDirectory({ cacheDirectory: null }), defaultCacheDirectory());
});
