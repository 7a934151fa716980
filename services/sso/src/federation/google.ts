import type * as Oidc from 'openid-client';
import { FederationError, usablePicture, type FederationProvider, type UpstreamAccount } from './provider.js';

export interface GoogleOptions {
  clientId: string;
  clientSecret: string;
  /** GOOGLE_ISSUER: its `/.well-known/openid-configuration` is discovered. */
  issuer: string;
  timeoutMs: number;
}

/**
 * How long a discovered configuration is used before it is read again. Google's endpoints
 * and keys change rarely; openid-client refetches the JWKS itself when a token names a new `kid`.
 */
const DISCOVERY_TTL_MS = 3_600_000;

/** What we ask Google for: an ID token with the account's email and profile. */
const SCOPE = 'openid email profile';

/**
 * openid-client, loaded with the first Google sign-in: every process imports this module (sso's
 * entry re-exports it), and one without Google configured would carry the library (~7 MB
 * resident) for nothing.
 */
let library: Promise<typeof Oidc> | undefined;
const openidClient = () => (library ??= import('openid-client'));

/**
 * The client authentication the issuer's metadata names, basic preferred. An issuer that names
 * neither (or no method at all) gets basic: OpenID Connect Core §9 makes it the default.
 */
export async function clientAuthFor(metadata: Pick<Oidc.ServerMetadata, 'token_endpoint_auth_methods_supported'>, secret: string): Promise<Oidc.ClientAuth> {
  const oidc = await openidClient();
  const supported = metadata.token_endpoint_auth_methods_supported ?? [];
  if (!supported.includes('client_secret_basic') && supported.includes('client_secret_post')) return oidc.ClientSecretPost(secret);
  return oidc.ClientSecretBasic(secret);
}

/**
 * Google as an OpenID Provider, through openid-client: discovery (cached), the authorization
 * URL, and the code exchange, which checks state, PKCE, the ID token's signature against the
 * discovered JWKS, `iss`, `aud`, `exp` and `nonce`. The email must be verified.
 */
export function createGoogleProvider(options: GoogleOptions): FederationProvider {
  // http is accepted on loopback only (config refuses it elsewhere): a provider on this machine.
  const insecure = new URL(options.issuer).protocol === 'http:';
  let discovered: { configuration: Promise<Oidc.Configuration>; at: number } | undefined;

  const discover = async (): Promise<Oidc.Configuration> => {
    const oidc = await openidClient();
    const timeout = options.timeoutMs / 1000;
    const execute = insecure ? [oidc.allowInsecureRequests] : [];
    const found = await oidc.discovery(new URL(options.issuer), options.clientId, undefined, undefined, { timeout, execute });
    const metadata = found.serverMetadata();
    // Built again with the authentication the issuer supports, which discovery could not know beforehand.
    const configuration = new oidc.Configuration(metadata, options.clientId, options.clientSecret, await clientAuthFor(metadata, options.clientSecret));
    configuration.timeout = timeout;
    for (const apply of execute) apply(configuration);
    // The ID token comes over TLS from the token endpoint, which OpenID Connect lets a client
    // trust unsigned; we check its signature against the JWKS anyway (the brief of issue 14).
    oidc.enableNonRepudiationChecks(configuration);
    return configuration;
  };

  /** The configuration, discovered at most once per DISCOVERY_TTL_MS; a failed discovery is retried at the next sign-in. */
  const configuration = (): Promise<Oidc.Configuration> => {
    if (!discovered || Date.now() - discovered.at > DISCOVERY_TTL_MS) {
      const attempt = discover();
      discovered = { configuration: attempt, at: Date.now() };
      attempt.catch(() => {
        if (discovered?.configuration === attempt) discovered = undefined;
      });
    }
    return discovered.configuration.catch((error: unknown) => {
      if (error instanceof FederationError) throw error;
      throw new FederationError('upstreamFailed', `discovery at ${options.issuer} failed: ${describe(error)}`);
    });
  };

  return {
    id: 'google',
    label: 'Google',
    async authorizationUrl(checks, redirectUri) {
      const oidc = await openidClient();
      return oidc.buildAuthorizationUrl(await configuration(), {
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: SCOPE,
        state: checks.state,
        nonce: checks.nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
        code_challenge_method: 'S256',
      });
    },

    async completeSignIn(callbackParams, checks, redirectUri): Promise<UpstreamAccount> {
      const oidc = await openidClient();
      const config = await configuration();
      // openid-client takes redirect_uri from this URL (without its query): the registered one, not the Host header's.
      const callback = new URL(redirectUri);
      callback.search = callbackParams.toString();
      let claims: Oidc.IDToken | undefined;
      try {
        const tokens = await oidc.authorizationCodeGrant(config, callback, {
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          pkceCodeVerifier: checks.codeVerifier,
          idTokenExpected: true,
        });
        claims = tokens.claims();
      } catch (error) {
        throw new FederationError('upstreamFailed', `code exchange at ${options.issuer} failed: ${describe(error)}`);
      }
      if (!claims) throw new FederationError('upstreamFailed', 'the token response had no ID token');
      const email = typeof claims.email === 'string' ? claims.email : undefined;
      // Only an address Google verified may name (or create) an account here.
      if (!email || claims.email_verified !== true) throw new FederationError('emailUnverified', 'the ID token has no verified email', { provider: 'Google' });
      const picture = usablePicture(claims.picture);
      return {
        provider: 'google',
        subject: claims.sub,
        email,
        ...(typeof claims.name === 'string' && claims.name.trim() !== '' ? { name: claims.name } : {}),
        ...(picture ? { picture } : {}),
      };
    },
  };
}

/** An openid-client error, in a line for the log (its code says which check failed). */
const describe = (error: unknown) => {
  const { name, message, code, cause, error: oauthError, error_description: description } = error as {
    name?: string;
    message?: string;
    code?: string;
    cause?: { message?: string };
    error?: unknown;
    error_description?: unknown;
  };
  // openid-client's own message is generic: the cause (oauth4webapi's) names the claim or
  // check, and a token endpoint's refusal carries its RFC 6749 error.
  const detail = typeof cause?.message === 'string' && cause.message !== message ? ` (${cause.message})` : '';
  const refusal = typeof oauthError === 'string' ? ` error=${oauthError}${typeof description === 'string' ? `: ${description.slice(0, 200)}` : ''}` : '';
  return `${name ?? 'Error'}${code ? ` ${code}` : ''}: ${message ?? String(error)}${detail}${refusal}`;
};
