import { UpstreamError, type CredentialsClient, type IdentityClient } from '@app/contracts';
import type { Cache, Logger } from '@app/platform';
import type { SsoConfig } from '../config.js';
import { createAccountResolver } from './accounts.js';
import { createGitHubProvider } from './github.js';
import { createGoogleProvider } from './google.js';
import { FederationError, newUpstreamChecks, UPSTREAM_TIMEOUT_MS, type FederationProvider, type ProviderId } from './provider.js';
import { createUpstreamStateStore } from './state-store.js';

/** The variables upstream sign-in reads. */
export type FederationConfig = Pick<
  SsoConfig,
  | 'JWT_ISSUER'
  | 'GOOGLE_CLIENT_ID'
  | 'GOOGLE_CLIENT_SECRET'
  | 'GOOGLE_ISSUER'
  | 'GITHUB_CLIENT_ID'
  | 'GITHUB_CLIENT_SECRET'
  | 'GITHUB_AUTHORIZE_URL'
  | 'GITHUB_TOKEN_URL'
  | 'GITHUB_API_URL'
>;

export interface FederationDeps {
  config: FederationConfig;
  cache: Cache;
  identities: IdentityClient;
  credentials: CredentialsClient;
  logger: Logger;
  /** How long each upstream call may take (default UPSTREAM_TIMEOUT_MS). */
  timeoutMs?: number;
}

/** Where each provider's callback is: the redirect URI registered there, on the public issuer. */
export const federationPath = (provider: string, step: 'start' | 'callback') => `/api/v1/sso/federation/${provider}/${step}`;

/** A pending authorization request's id as the start accepts it: URL-safe characters only. */
const REQUEST_ID = /^[A-Za-z0-9._~-]{1,256}$/;
/** Longest state we look up: ours are 43 characters; anything much longer is not one of ours. */
const STATE_MAX = 256;

/** The providers whose client id and secret are both configured (config refuses one without the other). */
function configuredProviders(config: FederationConfig, timeoutMs: number): FederationProvider[] {
  const providers: FederationProvider[] = [];
  if (config.GOOGLE_CLIENT_ID && config.GOOGLE_CLIENT_SECRET) {
    providers.push(createGoogleProvider({ clientId: config.GOOGLE_CLIENT_ID, clientSecret: config.GOOGLE_CLIENT_SECRET, issuer: config.GOOGLE_ISSUER, timeoutMs }));
  }
  if (config.GITHUB_CLIENT_ID && config.GITHUB_CLIENT_SECRET) {
    providers.push(
      createGitHubProvider({
        clientId: config.GITHUB_CLIENT_ID,
        clientSecret: config.GITHUB_CLIENT_SECRET,
        authorizeUrl: config.GITHUB_AUTHORIZE_URL,
        tokenUrl: config.GITHUB_TOKEN_URL,
        apiUrl: config.GITHUB_API_URL,
        timeoutMs,
      }),
    );
  }
  return providers;
}

/** A completed upstream sign-in: who, and the pending authorization request it continues. */
export interface FederatedSignIn {
  requestId: string;
  identityId: string;
  credentialId: string;
}

/**
 * Sign-in through Google and GitHub: the start sends the browser upstream with a fresh state,
 * nonce and PKCE verifier kept here; the callback checks them, lets the provider prove who
 * signed in, and finds or creates the identity (accounts.ts). Every failure is a
 * FederationError, carrying the pending request's id once the state named it.
 */
export function createFederation(deps: FederationDeps) {
  const providers = configuredProviders(deps.config, deps.timeoutMs ?? UPSTREAM_TIMEOUT_MS);
  const states = createUpstreamStateStore(deps.cache);
  const accounts = createAccountResolver({ identities: deps.identities, credentials: deps.credentials });
  const issuer = deps.config.JWT_ISSUER.replace(/\/+$/, '');

  const providerOf = (id: string): FederationProvider => {
    const provider = providers.find((candidate) => candidate.id === id);
    if (!provider) throw new FederationError('unknownProvider', `no configured provider is called ${JSON.stringify(id.slice(0, 32))}`);
    return provider;
  };
  const redirectUri = (id: ProviderId) => `${issuer}${federationPath(id, 'callback')}`;

  /** Our own peers (identity, credentials) or the cache not answering is not the provider's fault. */
  const asFederationError = (error: unknown): FederationError => {
    if (error instanceof FederationError) return error;
    if (error instanceof UpstreamError) return new FederationError('unavailable', error.message);
    return new FederationError('unavailable', `unexpected: ${(error as Error).message}`);
  };

  return {
    /** JWT_ISSUER without a trailing slash: the callbacks are under it. */
    issuer,
    /** The configured providers, for the login page's buttons. */
    providers: providers.map(({ id, label }) => ({ id, label })),
    /** The label of a configured provider (for messages), or the id as given. */
    labelOf: (id: string) => providers.find((candidate) => candidate.id === id)?.label ?? id,
    redirectUri,

    /**
     * Where to send the browser for `requestId`'s sign-in at `providerId`, and the state the
     * browser must bring back (the routes bind it to the browser with a cookie). `isPending`,
     * when given, says whether the request still waits for a sign-in.
     */
    async start(providerId: string, requestId: string | undefined, isPending?: (requestId: string) => Promise<boolean>): Promise<{ location: URL; state: string }> {
      const provider = providerOf(providerId);
      if (!requestId || !REQUEST_ID.test(requestId)) throw new FederationError('invalidRequest', 'the start has no valid request id');
      try {
        if (isPending && !(await isPending(requestId))) throw new FederationError('invalidState', 'the authorization request is unknown, expired or answered');
        const checks = newUpstreamChecks();
        const location = await provider.authorizationUrl(checks, redirectUri(provider.id));
        await states.save({ ...checks, provider: provider.id, requestId });
        return { location, state: checks.state };
      } catch (error) {
        const failure = asFederationError(error);
        failure.requestId = requestId;
        throw failure;
      }
    },

    /**
     * The callback: `params` is its query, `browserState` the state the start bound to this
     * browser. The state is used up whatever happens next.
     */
    async finish(providerId: string, params: URLSearchParams, browserState: string | undefined): Promise<FederatedSignIn> {
      const provider = providerOf(providerId);
      const state = params.get('state');
      if (!state || state.length > STATE_MAX) throw new FederationError('invalidState', 'the callback has no state');
      let pending: Awaited<ReturnType<typeof states.take>>;
      try {
        pending = await states.take(state);
      } catch (error) {
        throw asFederationError(error);
      }
      if (!pending || pending.provider !== provider.id) throw new FederationError('invalidState', 'the state is unknown, expired, used or for another provider');
      const requestId = pending.requestId;
      try {
        // Login CSRF: a callback URL made in another browser (someone else's account) must not sign this one in.
        if (browserState !== state) throw new FederationError('invalidState', 'the state was not started in this browser');
        const error = params.get('error');
        if (error === 'access_denied') throw new FederationError('accessDenied', 'the person declined at the provider');
        if (error !== null) throw new FederationError('upstreamFailed', `the provider answered error=${error.slice(0, 64)}`);
        const account = await provider.completeSignIn(params, pending, redirectUri(provider.id));
        const resolved = await accounts.resolve(account);
        return { requestId, ...resolved };
      } catch (error) {
        const failure = asFederationError(error);
        failure.requestId = requestId;
        throw failure;
      }
    },
  };
}

export type Federation = ReturnType<typeof createFederation>;
