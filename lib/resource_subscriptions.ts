/**
 * Resource subscriptions. In the 2025 era (`resources/subscribe`, `resources/unsubscribe`) each MCP
 * server instance (a stdio connection, a Stateful HTTP session) keeps the URIs its client
 * subscribed to, and after a reload tells it `notifications/resources/updated` for each one a
 * reload may have changed. In the 2026-07-28 era a client names its URIs in a
 * `subscriptions/listen` request's `resourceSubscriptions`, which the SDK serves; svc bounds them
 * ({@linkcode ListenedUris}) and publishes an update of each one a reload may have changed, which
 * the SDK delivers to the listens that named it. A subscription is accepted for any URI within the
 * bounds, whether or not the caller may read it, so that subscribing tells nothing a read would
 * not: what a URI names is decided when it is read, and which URIs are told of a reload depends on
 * the URI alone, never on the caller's tools.
 *
 * @module
 */
import { ProtocolError, ProtocolErrorCode, type Server } from "@modelcontextprotocol/server";
import type { ResourceSetting } from "./config_resources.ts";
import { helpToolOf } from "./resource_help.ts";
import { MAX_URI_LENGTH } from "./resource_template.ts";

/** How many URIs one server instance keeps subscribed; one more is refused. */
const MAX_SUBSCRIPTIONS = 100;

/** How many distinct URIs the listens of one HTTP front or stdio connection keep together. */
const MAX_LISTENED = 10_000;

interface Subscriptions {
  uris: Set<string>;
  resources: ResourceSetting[];
}

const subscriptions = new WeakMap<Server, Subscriptions>();

/**
 * Serves `resources/subscribe` and `resources/unsubscribe` on `server` (whose capabilities must say
 * `resources.subscribe`), both answering `{}`. `resources` are the configured resources, which
 * decide with the help URIs which subscribed URIs a reload may change.
 *
 * @throws {ProtocolError} from a subscribe request (-32602): a URI over
 * `MAX_URI_LENGTH` (2048) characters, or one more than `MAX_SUBSCRIPTIONS` (100).
 */
export function registerSubscriptions(server: Server, resources: ResourceSetting[]): void {
  const uris = new Set<string>();
  subscriptions.set(server, { uris, resources });
  server.setRequestHandler("resources/subscribe", (request) => {
    const { uri } = request.params;
    if (uri.length > MAX_URI_LENGTH) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Cannot subscribe to '${
          uri.slice(0, 199)
        }…': a URI of ${uri.length} characters is over the ${MAX_URI_LENGTH} a subscription takes`,
      );
    }
    if (!uris.has(uri) && uris.size >= MAX_SUBSCRIPTIONS) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Cannot subscribe to '${
          uri.slice(0, 200)
        }': this connection has ${MAX_SUBSCRIPTIONS} subscriptions, the most svc keeps; unsubscribe from one first`,
      );
    }
    uris.add(uri);
    return {};
  });
  server.setRequestHandler("resources/unsubscribe", (request) => {
    uris.delete(request.params.uri);
    return {};
  });
}

/**
 * Tells `server`'s client `notifications/resources/updated` for each URI it subscribed to that a
 * reload may have changed: a tool's help (`svc://help/<tool>`, whether or not the tool is there:
 * a reload may add it) and any URI a configured resource or template matches (its command's code
 * may have changed). Kept output (`svc://results/...`) never changes, nor does a URI that names
 * nothing svc serves.
 */
export function sendResourcesUpdated(server: Server): void {
  const subscribed = subscriptions.get(server);
  if (subscribed === undefined) return;
  for (const uri of subscribed.uris) {
    if (mayChange(uri, subscribed.resources)) server.sendResourceUpdated({ uri }).catch(() => {});
  }
}

/** Whether a reload may change what `uri` reads: a help URI, or one a configured resource matches. */
function mayChange(uri: string, resources: ResourceSetting[]): boolean {
  return helpToolOf(uri) !== null || resources.some((setting) => setting.uri.match(uri) !== null);
}

/**
 * The URIs that open 2026-07-28 listens (`subscriptions/listen`) name, counted per listen, so that
 * a reload publishes an update of each one it may have changed.
 */
export class ListenedUris {
  readonly #resources: ResourceSetting[];
  readonly #counts = new Map<string, number>();

  /** `resources` are the configured resources, as for {@linkcode registerSubscriptions}. */
  constructor(resources: ResourceSetting[]) {
    this.#resources = resources;
  }

  /**
   * Bounds the `resourceSubscriptions` of `message` when it is a `subscriptions/listen` request,
   * in place: the first 100 distinct URIs of at most 2048 characters, while all listens together
   * name at most 10000 distinct URIs; the rest are dropped, so the SDK's acknowledgement says which
   * it honors. Returns what ends the listen's count (call it once the listen ends), or null for
   * any other message, and for a list the SDK will refuse (one that is not all strings).
   */
  admit(message: unknown): (() => void) | null {
    const request = message as
      | { method?: unknown; params?: { notifications?: { resourceSubscriptions?: unknown } } }
      | null;
    if (request === null || typeof request !== "object") return null;
    const notifications = request.params?.notifications;
    const list = notifications?.resourceSubscriptions;
    if (request.method !== "subscriptions/listen" || !Array.isArray(list)) return null;
    if (!list.every((uri) => typeof uri === "string")) return null;
    const kept: string[] = [];
    for (const uri of list as string[]) {
      if (kept.length >= MAX_SUBSCRIPTIONS) break;
      if (uri.length > MAX_URI_LENGTH || kept.includes(uri)) continue;
      if (!this.#counts.has(uri) && this.#counts.size >= MAX_LISTENED) continue;
      kept.push(uri);
      this.#counts.set(uri, (this.#counts.get(uri) ?? 0) + 1);
    }
    notifications!.resourceSubscriptions = kept;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const uri of kept) {
        const left = this.#counts.get(uri)! - 1;
        if (left > 0) this.#counts.set(uri, left);
        else this.#counts.delete(uri);
      }
    };
  }

  /** The URIs open listens name that a reload may have changed (as {@linkcode sendResourcesUpdated}). */
  updatable(): string[] {
    return [...this.#counts.keys()].filter((uri) => mayChange(uri, this.#resources));
  }
}
