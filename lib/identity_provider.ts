/**
 * What svc fetches from an identity provider (OIDC discovery and the JWKS), fetched at most once per
 * interval whatever callers send: a success is cached, and so is a failure (negative caching), with
 * a back-off that starts at {@linkcode RETRY_MIN_MS} and doubles up to {@linkcode RETRY_MAX_MS}.
 * Concurrent requests share one fetch. A token naming an unknown `kid` refetches the key set at most
 * once per {@linkcode RETRY_MIN_MS}, so forged tokens cannot make svc hammer the provider.
 *
 * @module
 */
import type { FlattenedJWSInput, JSONWebKeySet, JWTHeaderParameters, JWTVerifyGetKey } from "jose";
import type { JwtSchemeSettings } from "./config_auth.ts";

/**
 * The JOSE library, loaded on the first bearer token: only JWT schemes use it, and loading it costs
 * svc about 2.5 MB and 10 ms of start for nothing otherwise.
 */
export function jose(): Promise<typeof import("jose")> {
  return import("jose");
}

/** Shortest wait before a failed fetch is tried again, and between key-set refetches (5 s). */
const RETRY_MIN_MS = 5_000;
/** Longest wait before a fetch that keeps failing is tried again (60 s). */
const RETRY_MAX_MS = 60_000;
/** A key set older than this is refetched (10 min); the old one serves while the new one fails. */
const KEYS_MAX_AGE_MS = 600_000;
const FETCH_TIMEOUT_MS = 10_000;

/** One value fetched on demand: cached once fetched, and its failure cached for the back-off. */
class Backoff<T> {
  readonly #load: () => Promise<T>;
  #inflight: Promise<T> | null = null;
  #failure: { error: unknown; retryAt: number } | null = null;
  #waitMs = RETRY_MIN_MS;

  constructor(load: () => Promise<T>) {
    this.#load = load;
  }

  /** Whether a fetch may start now (none in flight and no failure still in its back-off). */
  get mayFetch(): boolean {
    return this.#inflight === null &&
      (this.#failure === null || Date.now() >= this.#failure.retryAt);
  }

  /** Fetches unless a fetch is running (then shares it) or the last failure is recent (then rethrows it). */
  fetch(): Promise<T> {
    if (this.#inflight) return this.#inflight;
    if (this.#failure && Date.now() < this.#failure.retryAt) {
      return Promise.reject(this.#failure.error);
    }
    this.#inflight = this.#load().then((value) => {
      this.#failure = null;
      this.#waitMs = RETRY_MIN_MS;
      return value;
    }, (error) => {
      this.#failure = { error, retryAt: Date.now() + this.#waitMs };
      this.#waitMs = Math.min(this.#waitMs * 2, RETRY_MAX_MS);
      throw error;
    }).finally(() => (this.#inflight = null));
    return this.#inflight;
  }
}

/** The issuer and key set of one JwtBearer scheme. */
export interface Discovery {
  /** The issuer discovery reported (or the first ValidIssuer without discovery). */
  issuer: string;
  /** Resolves the verification key of a token. */
  jwks: JWTVerifyGetKey;
}

/** A JwtBearer scheme's provider: discovery once (then cached), the key set as described above. */
export class IdentityProvider {
  readonly #scheme: JwtSchemeSettings;
  #discovered: Discovery | null = null;
  readonly #discovery: Backoff<Discovery>;

  /** Nothing is fetched until the first token arrives. */
  constructor(scheme: JwtSchemeSettings) {
    this.#scheme = scheme;
    this.#discovery = new Backoff(() => this.#discover());
  }

  /** The issuer and key set; a failed discovery is retried only after its back-off. */
  async discovery(): Promise<Discovery> {
    this.#discovered ??= await this.#discovery.fetch();
    return this.#discovered;
  }

  #check(url: string, key: string): void {
    if (this.#scheme.requireHttpsMetadata && !url.startsWith("https://")) {
      throw new Error(`${key} '${url}' must use https (RequireHttpsMetadata)`);
    }
  }

  async #discover(): Promise<Discovery> {
    const scheme = this.#scheme;
    let jwksUri = scheme.jwksUri;
    let issuer = scheme.issuers[0] ?? "";
    if (scheme.authority) {
      this.#check(scheme.authority, "Authority");
      const url = `${scheme.authority.replace(/\/+$/, "")}/.well-known/openid-configuration`;
      const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      if (!response.ok) {
        await response.body?.cancel();
        throw new Error(`OIDC discovery at ${url} answered ${response.status}`);
      }
      const document = await response.json() as { issuer?: string; jwks_uri?: string };
      if (!document.issuer || !document.jwks_uri) {
        throw new Error(`OIDC discovery at ${url} lacks issuer or jwks_uri`);
      }
      issuer = document.issuer;
      jwksUri ??= document.jwks_uri;
    }
    this.#check(jwksUri!, "JwksUri");
    return { issuer, jwks: keySet(new URL(jwksUri!)) };
  }
}

/** A key-set resolver for `url` with the caching and back-off described in the module documentation. */
function keySet(url: URL): JWTVerifyGetKey {
  let keys: { resolve: JWTVerifyGetKey; fetchedAt: number } | null = null;
  let lastFetch = -Infinity;
  const backoff = new Backoff(async () => {
    lastFetch = Date.now();
    const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`The JWKS at ${url} answered ${response.status}`);
    }
    const { createLocalJWKSet } = await jose();
    const resolve = createLocalJWKSet(await response.json() as JSONWebKeySet);
    keys = { resolve, fetchedAt: Date.now() };
    return resolve;
  });
  const refresh = async () => {
    try {
      await backoff.fetch();
    } catch (error) {
      // A stale key set keeps serving while the provider fails; without one there is nothing to use.
      if (!keys) throw error;
    }
  };
  return async (header: JWTHeaderParameters, token: FlattenedJWSInput) => {
    if (!keys || (Date.now() - keys.fetchedAt > KEYS_MAX_AGE_MS && backoff.mayFetch)) {
      await refresh();
    }
    try {
      return await keys!.resolve(header, token);
    } catch (error) {
      // A rotated key: refetch, but no more often than RETRY_MIN_MS whatever kids tokens name.
      const unknownKid = error instanceof (await jose()).errors.JWKSNoMatchingKey;
      if (!unknownKid || Date.now() - lastFetch < RETRY_MIN_MS || !backoff.mayFetch) throw error;
      await refresh();
      return await keys!.resolve(header, token);
    }
  };
}
