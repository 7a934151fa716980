import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPair, SignJWT } from 'jose';
import { createHttpClients, createLogger, createMemoryCache, loadConfig } from '@app/platform';
import {
  clientAuthFor,
  createFederation,
  createGitHubProvider,
  createGoogleProvider,
  createUpstreamStateStore,
  FederationError,
  newUpstreamChecks,
  pkceChallenge,
  ssoConfig,
  type FederationProvider,
  type UpstreamChecks,
} from '@app/sso';
import { SETTLE_BUDGET_MS } from '@app/testing';
import { startGitHubServer, type GitHubAccount, type GitHubServer } from '../support/github-server.js';
import { startGoogleServer, type GoogleServer } from '../support/google-server.js';

/** Where the provider sends the browser back; never called here, only compared. */
const REDIRECT_URI = 'http://localhost:3000/api/v1/sso/federation/test/callback';
const TIMEOUT_MS = 1_000;

/** Follows the provider's authorization redirect (its login page), as the browser would, to the callback's query. */
async function authorizeAt(provider: FederationProvider, checks: UpstreamChecks): Promise<URLSearchParams> {
  const url = await provider.authorizationUrl(checks, REDIRECT_URI);
  const response = await fetch(url, { redirect: 'manual' });
  expect(response.status).toBe(302);
  const back = new URL(response.headers.get('location')!);
  expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
  return back.searchParams;
}

/** The failure a sign-in ended with (FederationError's reason), or `signed-in`; `lastDetail` says why, for the log. */
let lastDetail = '';
async function outcomeOf(work: Promise<unknown>): Promise<string> {
  lastDetail = '';
  try {
    await work;
    return 'signed-in';
  } catch (error) {
    if (!(error instanceof FederationError)) throw error;
    lastDetail = error.detail;
    return error.failure;
  }
}

/** A server that accepts connections and never answers: a hung upstream. */
async function startHungServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('Google as an upstream OpenID Provider (oauth2-mock-server)', () => {
  let google: GoogleServer;
  let provider: FederationProvider;
  const ada = { sub: 'google-ada', email: 'Ada@Example.com', email_verified: true, name: 'Ada Lovelace', picture: 'https://example.com/ada.png' };

  beforeAll(async () => {
    google = await startGoogleServer();
    provider = createGoogleProvider({ clientId: google.env.GOOGLE_CLIENT_ID, clientSecret: google.env.GOOGLE_CLIENT_SECRET, issuer: google.issuer, timeoutMs: TIMEOUT_MS });
  });
  afterAll(() => google.close());

  it('sends state, nonce, PKCE S256, the redirect_uri and the OpenID scopes to the discovered authorization endpoint', async () => {
    const checks = newUpstreamChecks();
    const url = await provider.authorizationUrl(checks, REDIRECT_URI);
    expect(`${url.origin}${url.pathname}`).toBe(`${google.issuer}/authorize`);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: google.env.GOOGLE_CLIENT_ID,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid email profile',
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: pkceChallenge(checks.codeVerifier),
      code_challenge_method: 'S256',
    });
  });

  it('signs in the account of a valid ID token, authenticating with the client secret (basic)', async () => {
    google.signInAs(ada);
    const before = google.tokenAuthorizations.length;
    const checks = newUpstreamChecks();
    const account = await provider.completeSignIn(await authorizeAt(provider, checks), checks, REDIRECT_URI);
    expect(account).toEqual({ provider: 'google', subject: 'google-ada', email: 'Ada@Example.com', name: 'Ada Lovelace', picture: 'https://example.com/ada.png' });
    const basic = `Basic ${Buffer.from(`${google.env.GOOGLE_CLIENT_ID}:${google.env.GOOGLE_CLIENT_SECRET}`).toString('base64')}`;
    expect(google.tokenAuthorizations.slice(before)).toEqual([basic]);
  });

  it('drops a picture identity would not store as an avatar (not http(s), no host name)', async () => {
    for (const picture of ['javascript:alert(1)', 'data:image/png;base64,AAAA', 'https://']) {
      google.signInAs({ ...ada, picture });
      const checks = newUpstreamChecks();
      const account = await provider.completeSignIn(await authorizeAt(provider, checks), checks, REDIRECT_URI);
      expect(account).toEqual({ provider: 'google', subject: 'google-ada', email: 'Ada@Example.com', name: 'Ada Lovelace' });
    }
  });

  it('refuses an account whose email Google did not verify', async () => {
    google.signInAs({ ...ada, email_verified: false });
    const checks = newUpstreamChecks();
    expect(await outcomeOf(provider.completeSignIn(await authorizeAt(provider, checks), checks, REDIRECT_URI))).toBe('emailUnverified');
    google.signInAs({ sub: 'no-email' });
    const again = newUpstreamChecks();
    expect(await outcomeOf(provider.completeSignIn(await authorizeAt(provider, again), again, REDIRECT_URI))).toBe('emailUnverified');
  });

  it('refuses an ID token with another nonce than the one sent', async () => {
    google.signInAs({ ...ada, nonce: 'a nonce this client never sent' });
    const checks = newUpstreamChecks();
    expect(await outcomeOf(provider.completeSignIn(await authorizeAt(provider, checks), checks, REDIRECT_URI))).toBe('upstreamFailed');
    expect(lastDetail).toMatch(/nonce/);
  });

  it('refuses a callback whose state is not the one sent', async () => {
    google.signInAs(ada);
    const checks = newUpstreamChecks();
    const params = await authorizeAt(provider, checks);
    expect(await outcomeOf(provider.completeSignIn(params, { ...checks, state: 'another state' }, REDIRECT_URI))).toBe('upstreamFailed');
    expect(lastDetail).toMatch(/state/);
  });

  it('refuses a wrong PKCE verifier (the provider checks it against the challenge sent)', async () => {
    google.signInAs(ada);
    const checks = newUpstreamChecks();
    const params = await authorizeAt(provider, checks);
    expect(await outcomeOf(provider.completeSignIn(params, { ...checks, codeVerifier: newUpstreamChecks().codeVerifier }, REDIRECT_URI))).toBe('upstreamFailed');
    expect(lastDetail).toMatch(/code_verifier/);
  });

  it('refuses an ID token whose signature is not from a key of the discovered JWKS', async () => {
    google.signInAs(ada);
    const checks = newUpstreamChecks();
    const params = await authorizeAt(provider, checks);
    // The claims a genuine token would carry, under the issuer's own kid, signed with a key of ours.
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ sub: ada.sub, email: ada.email, email_verified: true, nonce: checks.nonce })
      .setProtectedHeader({ alg: 'RS256', kid: google.keyId })
      .setIssuer(google.issuer)
      .setAudience(google.env.GOOGLE_CLIENT_ID)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    google.service.once('beforeResponse', (response) => {
      (response.body as Record<string, string>).id_token = forged;
    });
    expect(await outcomeOf(provider.completeSignIn(params, checks, REDIRECT_URI))).toBe('upstreamFailed');
    expect(lastDetail).toMatch(/signature/i);
  });

  it('ends with an upstream failure when the issuer is unreachable or hangs (by the timeout)', async () => {
    const closed = await startHungServer();
    const closedUrl = closed.url;
    await closed.close();
    const unreachable = createGoogleProvider({ clientId: 'x', clientSecret: 'y', issuer: closedUrl, timeoutMs: TIMEOUT_MS });
    expect(await outcomeOf(unreachable.authorizationUrl(newUpstreamChecks(), REDIRECT_URI))).toBe('upstreamFailed');

    const hung = await startHungServer();
    try {
      const hanging = createGoogleProvider({ clientId: 'x', clientSecret: 'y', issuer: hung.url, timeoutMs: TIMEOUT_MS });
      // The server never answers: only the timeout can end the call.
      expect(await outcomeOf(hanging.authorizationUrl(newUpstreamChecks(), REDIRECT_URI))).toBe('upstreamFailed');
    } finally {
      await hung.close();
    }
  });

  it('authenticates at the token endpoint the way discovery says: basic first, post when only post is listed', async () => {
    const methodOf = async (supported?: string[]) => {
      const headers = new Headers();
      const body = new URLSearchParams();
      void (await clientAuthFor({ token_endpoint_auth_methods_supported: supported }, 'secret'))({} as never, { client_id: 'id' } as never, body, headers);
      return headers.has('authorization') ? 'basic' : body.has('client_secret') ? 'post' : 'none';
    };
    expect(await methodOf(['client_secret_post', 'client_secret_basic'])).toBe('basic');
    expect(await methodOf(['client_secret_post'])).toBe('post');
    expect(await methodOf(undefined)).toBe('basic');
  });
});

describe('GitHub as an upstream (the GitHub-shaped test server)', () => {
  let github: GitHubServer;
  let provider: FederationProvider;
  const grace: GitHubAccount = {
    id: 4242,
    login: 'grace',
    name: 'Grace Hopper',
    email: 'grace@example.com',
    avatar_url: 'https://avatars.example.com/u/4242',
    emails: [{ email: 'grace@example.com', primary: true, verified: true }],
  };

  beforeAll(async () => {
    github = await startGitHubServer();
    provider = createGitHubProvider({
      clientId: github.env.GITHUB_CLIENT_ID,
      clientSecret: github.env.GITHUB_CLIENT_SECRET,
      authorizeUrl: github.env.GITHUB_AUTHORIZE_URL,
      tokenUrl: github.env.GITHUB_TOKEN_URL,
      apiUrl: github.env.GITHUB_API_URL,
      timeoutMs: TIMEOUT_MS,
    });
  });
  afterAll(() => github.close());
  afterEach(() => github.failWith(undefined));

  it('sends state, PKCE S256 and the redirect_uri to the authorize URL', async () => {
    const checks = newUpstreamChecks();
    const url = await provider.authorizationUrl(checks, REDIRECT_URI);
    expect(`${url.origin}${url.pathname}`).toBe(github.env.GITHUB_AUTHORIZE_URL);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: github.env.GITHUB_CLIENT_ID,
      redirect_uri: REDIRECT_URI,
      scope: 'read:user user:email',
      state: checks.state,
      code_challenge: pkceChallenge(checks.codeVerifier),
      code_challenge_method: 'S256',
    });
  });

  it('exchanges the code with the verifier and redirect_uri, and signs in the account by its numeric id', async () => {
    github.signInAs(grace);
    const checks = newUpstreamChecks();
    const params = await authorizeAt(provider, checks);
    const account = await provider.completeSignIn(params, checks, REDIRECT_URI);
    expect(account).toEqual({ provider: 'github', subject: '4242', email: 'grace@example.com', name: 'Grace Hopper', picture: 'https://avatars.example.com/u/4242' });
    expect(github.tokenRequests.at(-1)).toEqual({
      client_id: github.env.GITHUB_CLIENT_ID,
      client_secret: github.env.GITHUB_CLIENT_SECRET,
      code: params.get('code'),
      redirect_uri: REDIRECT_URI,
      code_verifier: checks.codeVerifier,
    });
  });

  it('takes the primary verified address when the profile hides its email', async () => {
    github.signInAs({
      ...grace,
      id: 4343,
      name: null,
      email: null,
      emails: [
        { email: 'old@example.com', primary: false, verified: true },
        { email: 'unverified@example.com', primary: false, verified: false },
        { email: 'primary@example.com', primary: true, verified: true },
      ],
    });
    const checks = newUpstreamChecks();
    const account = await provider.completeSignIn(await authorizeAt(provider, checks), checks, REDIRECT_URI);
    expect(account).toMatchObject({ subject: '4343', email: 'primary@example.com', name: 'grace' });
  });

  it('never uses an unverified address, public or primary', async () => {
    github.signInAs({ ...grace, id: 4444, email: 'public@example.com', emails: [{ email: 'public@example.com', primary: true, verified: false }] });
    const checks = newUpstreamChecks();
    expect(await outcomeOf(provider.completeSignIn(await authorizeAt(provider, checks), checks, REDIRECT_URI))).toBe('emailUnverified');
  });

  it('is refused by GitHub without the right PKCE verifier (so the one we send is checked)', async () => {
    github.signInAs(grace);
    const checks = newUpstreamChecks();
    const params = await authorizeAt(provider, checks);
    expect(await outcomeOf(provider.completeSignIn(params, { ...checks, codeVerifier: newUpstreamChecks().codeVerifier }, REDIRECT_URI))).toBe('upstreamFailed');
    expect(lastDetail).toMatch(/bad_verification_code/);
  });

  it('ends with an upstream failure when GitHub errs or hangs (by the timeout)', async () => {
    github.signInAs(grace);
    for (const mode of ['error', 'hang'] as const) {
      const checks = newUpstreamChecks();
      const params = await authorizeAt(provider, checks);
      github.failWith(mode);
      expect(await outcomeOf(provider.completeSignIn(params, checks, REDIRECT_URI))).toBe('upstreamFailed');
      github.failWith(undefined);
    }
  });
});

describe('upstream state store', () => {
  it('gives a round trip back once, by its state, and nothing for an unknown state', async () => {
    const store = createUpstreamStateStore(createMemoryCache({ maxEntries: 100 }));
    const pending = { ...newUpstreamChecks(), provider: 'google' as const, requestId: 'request-1' };
    await store.save(pending);
    expect(await store.take('unknown')).toBeUndefined();
    const [first, second] = await Promise.all([store.take(pending.state), store.take(pending.state)]);
    expect([first, second].filter(Boolean)).toEqual([pending]);
    expect(await store.take(pending.state)).toBeUndefined();
  });
});

describe('sso configured with half a provider', () => {
  it('refuses to start (exit 78), naming the missing variable and never echoing the secret', () => {
    const main = fileURLToPath(new URL('../../services/sso/dist/main.js', import.meta.url));
    if (!existsSync(main)) throw new Error('build first (npm run build): missing services/sso/dist/main.js');
    const secret = 'a-google-client-secret-value';
    const run = spawnSync(process.execPath, [main], { env: { PATH: process.env.PATH, GOOGLE_CLIENT_SECRET: secret, LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: SETTLE_BUDGET_MS });
    expect(run.status).toBe(78);
    expect(run.stderr + run.stdout).toContain('GOOGLE_CLIENT_ID: expected GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET together');
    expect(run.stderr + run.stdout).not.toContain(secret);
  });
});

describe('federation when identity and credentials do not answer', () => {
  it('ends the callback as unavailable (a 503 page), after the provider vouched for the account', async () => {
    const google = await startGoogleServer();
    const gone = await startHungServer();
    await gone.close();
    const peers = createHttpClients({ urls: { identity: gone.url, credentials: gone.url }, systemToken: async () => 'a system token', timeoutMs: TIMEOUT_MS });
    try {
      const config = loadConfig({ ...google.env, LOG_LEVEL: 'silent' }, [ssoConfig]);
      const federation = createFederation({
        config,
        cache: createMemoryCache({ maxEntries: 100 }),
        identities: peers.identity,
        credentials: peers.credentials,
        logger: createLogger(config),
        timeoutMs: TIMEOUT_MS,
      });
      google.signInAs({ sub: 'someone', email: 'someone@example.com', email_verified: true });
      const { location, state } = await federation.start('google', 'request-1');
      const back = new URL((await fetch(location, { redirect: 'manual' })).headers.get('location')!);
      expect(await outcomeOf(federation.finish('google', back.searchParams, state))).toBe('unavailable');
    } finally {
      await peers.close();
      await google.close();
    }
  });
});
