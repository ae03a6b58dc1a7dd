/**
 * Resource subscriptions of the 2025 era (`resources/subscribe`, `resources/unsubscribe`): each
 * MCP server instance (a stdio connection, a Stateful HTTP session) keeps the URIs its client
 * subscribed to, and after a reload tells it `notifications/resources/updated` for each one a
 * reload may have changed. A subscription is accepted for any URI within the bounds, whether or not
 * the caller may read it, so that subscribing tells nothing a read would not: what a URI names is
 * decided when it is read, and which URIs are told of a reload depends on the URI alone, never on
 * the caller's tools.
 *
 * @module
 */
import { ProtocolError, ProtocolErrorCode, type Server } from "@modelcontextprotocol/server";
import type { ResourceSetting } from "./config_resources.ts";
import { helpToolOf } from "./resource_help.ts";
import { MAX_URI_LENGTH } from "./resource_template.ts";

/** How many URIs one server instance keeps subscribed; one more is refused. */
const MAX_SUBSCRIPTIONS = 100;

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
    const mayChange = helpToolOf(uri) !== null ||
      subscribed.resources.some((setting) => setting.uri.match(uri) !== null);
    if (mayChange) server.sendResourceUpdated({ uri }).catch(() => {});
  }
}
