/**
 * A real OpenID Connect provider for the SSO tests: `oidc-provider` (the certified Node
 * implementation) in this process, over https with a certificate made here by `openssl`, on a
 * free port. Its development login form accepts any login and password; the login names the
 * account, whose claims (email, name, groups) the test sets and changes in `accounts`.
 *
 * Consent is granted without asking (a first-party client), so a sign-in is: the console's
 * redirect, the provider's login form, and the redirect back.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import Provider from "oidc-provider";

export interface TestAccount {
  email: string;
  email_verified: boolean;
  name: string;
  groups: string[];
}

export interface TestOidcProvider {
  readonly issuer: string;
  /** PEM of the provider's self-signed certificate (its own CA): OIDC_CA_FILE. */
  readonly caFile: string;
  readonly caPem: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** The claims of each login; change them between sign-ins. */
  readonly accounts: Map<string, TestAccount>;
  /** Revokes every grant (and so every refresh token) the login holds, as an admin would there. */
  revokeGrants(login: string): Promise<number>;
  stop(): Promise<void>;
}

/** A self-signed certificate for 127.0.0.1 and localhost, in a temp dir. */
function makeCertificate(): { keyFile: string; certFile: string } {
  const dir = mkdtempSync(path.join(tmpdir(), `lp-oidc-${randomBytes(3).toString("hex")}-`));
  const keyFile = path.join(dir, "provider.key");
  const certFile = path.join(dir, "provider.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ],
    { stdio: "pipe" },
  );
  return { keyFile, certFile };
}

export async function startTestOidcProvider(options: {
  /** Where the console's callback is (`<console origin>/auth/oidc/callback`). */
  readonly redirectUris: readonly string[];
  /** Where the provider posts logout tokens when an identity signs out there. */
  readonly backchannelLogoutUri?: string;
  /** Where the provider may send the browser after signing out there (RP-initiated logout). */
  readonly postLogoutRedirectUris?: readonly string[];
}): Promise<TestOidcProvider> {
  const { keyFile, certFile } = makeCertificate();
  const clientId = "limitplane-console";
  const clientSecret = `secret-${randomBytes(16).toString("hex")}`;
  const accounts = new Map<string, TestAccount>();
  const grantsByLogin = new Map<string, string[]>();
  // The port is chosen by the OS first; the provider must know its issuer before it serves.
  let handler: Parameters<typeof createServer>[1] = (_request, response) => response.end();
  const server: Server = createServer(
    { key: readFileSync(keyFile), cert: readFileSync(certFile) },
    (request, response) => handler?.(request, response),
  );
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const issuer = `https://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [...options.redirectUris],
        grant_types: ["authorization_code", "refresh_token"],
        post_logout_redirect_uris: [...(options.postLogoutRedirectUris ?? [])],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
        ...(options.backchannelLogoutUri === undefined
          ? {}
          : { backchannel_logout_uri: options.backchannelLogoutUri }),
      },
    ],
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      profile: ["name"],
      groups: ["groups"],
    },
    scopes: ["openid", "email", "profile", "groups"],
    pkce: { required: () => true },
    cookies: { keys: [randomBytes(16).toString("hex")] },
    features: {
      devInteractions: { enabled: true },
      backchannelLogout: { enabled: true },
      rpInitiatedLogout: { enabled: true },
    },
    // The console here is on 127.0.0.1, which the provider's SSRF guard (a dispatcher it adds to
    // each outgoing request) refuses; this test provider posts logout tokens without it.
    fetch: (url: string, init: RequestInit & { dispatcher?: unknown }) => {
      const { dispatcher: _guard, ...rest } = init;
      return globalThis.fetch(url, rest);
    },
    // A refresh token with every sign-in, as Keycloak, Okta and Entra ID give one (the console
    // re-checks roles with it); it dies with the provider's session, unlike offline_access.
    issueRefreshToken: async () => true,
    ttl: {
      AccessToken: 600,
      RefreshToken: 3_600,
      Grant: 3_600,
      IdToken: 600,
      Interaction: 600,
      Session: 3_600,
    },
    async findAccount(_ctx: unknown, id: string) {
      const account = accounts.get(id);
      if (account === undefined) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...account }) };
    },
    async loadExistingGrant(ctx: GrantContext) {
      const { client, session } = ctx.oidc;
      const grantId = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(client.clientId);
      if (grantId !== undefined) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: client.clientId,
        accountId: session.accountId,
      });
      grant.addOIDCScope("openid email profile groups");
      const id = await grant.save();
      grantsByLogin.set(session.accountId, [...(grantsByLogin.get(session.accountId) ?? []), id]);
      return grant;
    },
  });
  handler = provider.callback();
  return {
    issuer,
    caFile: certFile,
    caPem: readFileSync(certFile, "utf8"),
    clientId,
    clientSecret,
    accounts,
    async revokeGrants(login) {
      let revoked = 0;
      for (const id of grantsByLogin.get(login) ?? []) {
        const grant = await (provider as unknown as GrantContext["oidc"]["provider"]).Grant.find(
          id,
        );
        if (grant !== undefined) {
          await grant.destroy();
          revoked++;
        }
      }
      grantsByLogin.delete(login);
      return revoked;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface GrantLike {
  addOIDCScope(scope: string): void;
  save(): Promise<string>;
  destroy(): Promise<void>;
}

interface GrantContext {
  readonly oidc: {
    readonly client: { readonly clientId: string };
    readonly session: {
      readonly accountId: string;
      grantIdFor(clientId: string): string | undefined;
    };
    readonly result?: { readonly consent?: { readonly grantId?: string } };
    readonly provider: {
      readonly Grant: {
        new (init: { clientId: string; accountId: string }): GrantLike;
        find(id: string): Promise<GrantLike | undefined>;
      };
    };
  };
}
