/**
 * A local authorization server for the OAuth tests: OIDC and RFC 8414 discovery, a JWKS with keys
 * that can be rotated, token signing, and a `client_credentials` token endpoint, over HTTP on
 * loopback.
 *
 * @module
 */
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";

/** A running {@linkcode startIssuer}. */
export interface Issuer extends AsyncDisposable {
  url: string;
  /** The `resource` and `scope` of each token request its token endpoint answered. */
  tokenRequests: { resource: string | null; scope: string | null }[];
  sign(
    claims: Record<string, unknown>,
    options?: { kid?: string; expiresIn?: string | number; issuer?: string; audience?: string },
  ): Promise<string>;
  rotate(): Promise<void>;
}

/**
 * A local authorization server: OIDC and RFC 8414 discovery documents, JWKS, token signing with
 * rotatable keys, and a `client_credentials` token endpoint for client `svc-robot`, which (like
 * Entra) issues tokens for `api://svc` whatever `resource` URL is asked for.
 */
export async function startIssuer(): Promise<Issuer> {
  const keys = new Map<string, { privateKey: CryptoKey; jwk: JWK }>();
  const published = new Set<string>();
  const addKey = async (kid: string) => {
    const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
    keys.set(kid, {
      privateKey,
      jwk: { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" },
    });
  };
  await addKey("k1");
  await addKey("k2");
  published.add("k1");
  let url = "";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/.well-known/openid-configuration") {
      return Response.json({ issuer: url, jwks_uri: `${url}/jwks` });
    }
    if (path === "/.well-known/oauth-authorization-server") {
      return Response.json({
        issuer: url,
        "authorization_endpoint": `${url}/authorize`,
        "token_endpoint": `${url}/token`,
        "jwks_uri": `${url}/jwks`,
        "response_types_supported": ["code"],
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
      });
    }
    if (path === "/jwks") {
      return Response.json({ keys: [...published].map((kid) => keys.get(kid)!.jwk) });
    }
    if (path === "/token" && req.method === "POST") return token(req);
    return new Response("not found", { status: 404 });
  });
  const tokenRequests: Issuer["tokenRequests"] = [];
  const token = async (req: Request) => {
    const form = new URLSearchParams(await req.text());
    if (req.headers.get("authorization") !== `Basic ${btoa("svc-robot:robot-secret-4c1d")}`) {
      return Response.json({ error: "invalid_client" }, { status: 401 });
    }
    if (form.get("grant_type") !== "client_credentials") {
      return Response.json({ error: "unsupported_grant_type" }, { status: 400 });
    }
    tokenRequests.push({ resource: form.get("resource"), scope: form.get("scope") });
    const accessToken = await new SignJWT({
      "preferred_username": "robot@example.com",
      scp: form.get("scope") ?? "",
    })
      .setProtectedHeader({ alg: "RS256", kid: "k1" })
      .setIssuer(url)
      .setAudience("api://svc")
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(keys.get("k1")!.privateKey);
    return Response.json({
      "access_token": accessToken,
      "token_type": "Bearer",
      "expires_in": 300,
    });
  };
  url = `http://127.0.0.1:${server.addr.port}`;
  return {
    url,
    tokenRequests,
    sign: (claims, options = {}) => {
      const kid = options.kid ?? "k1";
      return new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid })
        .setIssuer(options.issuer ?? url)
        .setAudience(options.audience ?? "api://svc")
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? "5m")
        .sign(keys.get(kid)!.privateKey);
    },
    rotate: () => {
      published.add("k2");
      return Promise.resolve();
    },
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}
