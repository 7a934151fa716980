import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as client from 'openid-client';
import { startGitHubServer, type GitHubAccount, type GitHubServer } from '../support/github-server.js';
import { startGoogleServer, type GoogleServer } from '../support/google-server.js';
import { authorizationRequest, Browser, ISSUER, REDIRECT_URI } from './browser-support.js';
import { CASES, claimsOf, startSsoPlatform, type SsoPlatform } from './harness.js';

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

interface Page {
  status: number;
  body: string;
  headers: Headers;
}

describe.each(CASES)('sign-in through Google and GitHub (%s, %s)', (topology, mode) => {
  let env: SsoPlatform;
  let admin: string;
  let google: GoogleServer;
  let github: GitHubServer;
  /** A public client registered for these tests: every sign-in continues one of its authorization requests. */
  let clientId: string;

  beforeAll(async () => {
    google = await startGoogleServer();
    github = await startGitHubServer();
    env = await startSsoPlatform(mode, topology, { ...google.env, ...github.env });
    admin = await env.adminToken();
    const registered = await env.call('POST', '/api/v1/sso/clients', admin, { name: 'Federation App', type: 'public', redirect_uris: [REDIRECT_URI] });
    expect(registered.status).toBe(201);
    clientId = (registered.body as { id: string }[])[0]!.id;
  });
  afterAll(async () => {
    await env?.close();
    await google?.close();
    await github?.close();
  });

  const unique = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

  /** The page an HTML answer is, with its status. */
  const pageOf = async (response: Response): Promise<Page> => ({ status: response.status, body: await response.text(), headers: response.headers });

  /**
   * A browser at the client's authorization request with `idp_hint`: the authorization endpoint
   * sends it to the federation start, which sends it upstream. Answers the browser, the start's
   * answer and the PKCE verifier of the client's request.
   */
  const startAt = async (provider: 'google' | 'github', language = 'en') => {
    const browser = new Browser(env.gateway);
    const { url: authorize, verifier } = authorizationRequest(ISSUER, clientId, { state: 'client-state', idp_hint: provider });
    const toStart = await browser.get(authorize, { 'accept-language': language });
    expect(toStart.status).toBe(303);
    const start = await browser.get(new URL(toStart.headers.get('location')!, ISSUER), { 'accept-language': language });
    return { browser, start, verifier };
  };

  /** A whole sign-in: the client's request, the provider's login (which redirects straight back), and the callback. */
  const signIn = async (provider: 'google' | 'github', language = 'en') => {
    const { browser, start, verifier } = await startAt(provider, language);
    expect(start.status).toBe(302);
    const upstream = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    expect(upstream.status).toBe(302);
    const callback = upstream.headers.get('location')!;
    expect(new URL(callback).origin).toBe(ISSUER);
    const response = await browser.get(callback, { 'accept-language': language });
    return { response, callback, browser, verifier };
  };

  /** The identity a sign-in that went back to the client signed in: its code, redeemed at the token endpoint. */
  const signedInIdentity = async ({ response, verifier }: { response: Response; verifier: string }): Promise<string> => {
    expect(response.status).toBe(303);
    const back = new URL(response.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
    expect(back.searchParams.get('state')).toBe('client-state');
    const tokens = await env.token({ grant_type: 'authorization_code', client_id: clientId, redirect_uri: REDIRECT_URI, code: back.searchParams.get('code')!, code_verifier: verifier });
    expect(tokens.status).toBe(200);
    return String(claimsOf(String(tokens.body.access_token)).sub);
  };

  const identitiesWith = async (email: string) => {
    const found = await env.call('GET', `/api/v1/identity?email=${encodeURIComponent(email.toLowerCase())}`, admin);
    return found.body as { id: string; name: string; email: string; avatar: string | null; activated: boolean }[];
  };
  const credentialsWith = async (provider: 'GOOGLE' | 'GITHUB', subject: string) => {
    const found = await env.call('GET', `/api/v1/credentials?provider=${provider}&subject=${encodeURIComponent(subject)}`, admin);
    return found.body as { id: string; identity_id: string; lastUsedAt: string | null }[];
  };
  const createIdentity = async (email: string) => {
    const created = await env.call('POST', '/api/v1/identity', admin, { name: 'Existing Person', email });
    expect(created.status).toBe(201);
    return (created.body as { id: string }[])[0]!.id;
  };
  const googleAccount = (email: string, extra: Record<string, unknown> = {}) => ({ sub: unique('google-sub'), email, email_verified: true, name: 'Ada Lovelace', picture: 'https://example.com/ada.png', ...extra });

  it('sends the browser upstream with state, nonce, PKCE S256 and the registered redirect_uri, and binds the state to it with a cookie', async () => {
    const { start } = await startAt('google');
    expect(start.status).toBe(302);
    const location = new URL(start.headers.get('location')!);
    expect(location.searchParams.get('redirect_uri')).toBe(`${ISSUER}/api/v1/sso/federation/google/callback`);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(location.searchParams.get('nonce')).toMatch(/^[\w-]{43}$/);
    const state = location.searchParams.get('state');
    expect(state).toMatch(/^[\w-]{43}$/);
    expect(start.headers.getSetCookie()).toContain(`sso_federation_state=${state}; Path=/api/v1/sso/federation/; Max-Age=600; HttpOnly; SameSite=Lax`);
  });

  it('offers the configured providers on the login page', async () => {
    const browser = new Browser(env.gateway);
    const authorize = new URL('/api/v1/sso/authorize', ISSUER);
    authorize.search = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, scope: 'openid', code_challenge: s256('x'.repeat(43)), code_challenge_method: 'S256' }).toString();
    const form = await browser.openLoginForm(authorize);
    expect(form.html).toContain(`/api/v1/sso/federation/google/start?request=${form.request}`);
    expect(form.html).toContain(`/api/v1/sso/federation/github/start?request=${form.request}`);
  });

  it('answers an HTML 404 for a provider that is not configured or does not exist, and a 400 without a pending request', async () => {
    for (const provider of ['facebook', 'GOOGLE', 'g'.repeat(90)]) {
      const page = await pageOf(await fetch(`${env.gateway}/api/v1/sso/federation/${provider}/start?request=${randomUUID()}`, { redirect: 'manual' }));
      expect(page.status).toBe(404);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.body).toContain('This sign-in option is not available.');
    }
    const missing = await pageOf(await fetch(`${env.gateway}/api/v1/sso/federation/google/start`, { redirect: 'manual' }));
    expect(missing.status).toBe(400);
    expect(missing.body).toContain('This sign-in link is incomplete.');
    // A HEAD records nothing: the routes answer GET only.
    for (const step of ['start', 'callback']) {
      expect((await fetch(`${env.gateway}/api/v1/sso/federation/google/${step}?request=${randomUUID()}`, { method: 'HEAD' })).status).toBeGreaterThanOrEqual(400);
    }
    // A request id that names no pending authorization request ends here, before the provider.
    const unknown = await pageOf(await fetch(`${env.gateway}/api/v1/sso/federation/google/start?request=${randomUUID()}`, { redirect: 'manual' }));
    expect(unknown.status).toBe(400);
    expect(unknown.body).toContain('This sign-in attempt has expired');
  });

  it('creates the identity and its GOOGLE credential for a new subject with a new verified email, and signs it in', async () => {
    const email = `${unique('ada')}@Example.com`;
    const account = googleAccount(email);
    google.signInAs(account);
    const subject = await signedInIdentity(await signIn('google'));
    const [identity, ...others] = await identitiesWith(email);
    expect(others).toEqual([]);
    expect(identity).toMatchObject({ id: subject, email: email.toLowerCase(), name: 'Ada Lovelace', avatar: 'https://example.com/ada.png', activated: true });
    const credentials = await credentialsWith('GOOGLE', account.sub);
    expect(credentials.map((credential) => credential.identity_id)).toEqual([identity!.id]);
    // The second time, the same identity: nothing new is created.
    expect(await signedInIdentity(await signIn('google'))).toBe(subject);
    expect(await identitiesWith(email)).toHaveLength(1);
  });

  it('signs a known subject in as the identity of its credential, whatever email the provider says now', async () => {
    const email = `${unique('known')}@example.com`;
    const identityId = await createIdentity(email);
    const subject = unique('google-sub');
    const linked = await env.call('POST', '/api/v1/credentials', admin, { identity_id: identityId, provider: 'GOOGLE', subject });
    expect(linked.status).toBe(201);
    const newEmail = `${unique('renamed')}@example.com`;
    google.signInAs(googleAccount(newEmail, { sub: subject }));
    expect(await signedInIdentity(await signIn('google'))).toBe(identityId);
    expect(await identitiesWith(newEmail)).toEqual([]);
  });

  it('never links a new subject to the identity that has its email: an error page says to sign in with the password, and nothing is created', async () => {
    const email = `${unique('taken')}@example.com`;
    await createIdentity(email);
    const account = googleAccount(email.toUpperCase());
    google.signInAs(account);
    const page = await pageOf((await signIn('google')).response);
    expect(page.status).toBe(409);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.body).toContain(`An account with the email ${email} already exists. Sign in with its email and password instead.`);
    expect(await credentialsWith('GOOGLE', account.sub)).toEqual([]);
    expect(await identitiesWith(email)).toHaveLength(1);
  });

  it('refuses an unverified email: an error page, and nothing created', async () => {
    const email = `${unique('unverified')}@example.com`;
    const account = googleAccount(email, { email_verified: false });
    google.signInAs(account);
    const page = await pageOf((await signIn('google', 'de')).response);
    expect(page.status).toBe(403);
    expect(page.body).toContain('Ihr Google-Konto hat keine bestätigte E-Mail-Adresse');
    expect(await identitiesWith(email)).toEqual([]);
    expect(await credentialsWith('GOOGLE', account.sub)).toEqual([]);
  });

  it('refuses an ID token with a nonce other than the one sent: an error page, and nothing created', async () => {
    const email = `${unique('nonce')}@example.com`;
    google.signInAs(googleAccount(email, { nonce: 'not the nonce sso sent' }));
    const page = await pageOf((await signIn('google')).response);
    expect(page.status).toBe(502);
    expect(page.body).toContain('Google could not complete the sign-in.');
    expect(await identitiesWith(email)).toEqual([]);
  });

  it('refuses a deactivated credential or identity with an error page', async () => {
    const account = googleAccount(`${unique('inactive')}@example.com`);
    google.signInAs(account);
    await signedInIdentity(await signIn('google'));
    const [credential] = await credentialsWith('GOOGLE', account.sub);
    expect((await env.call('PUT', `/api/v1/credentials/${credential!.id}`, admin, { activated: false })).status).toBe(200);
    const refused = await pageOf((await signIn('google')).response);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('This account is deactivated.');

    const other = googleAccount(`${unique('inactive-identity')}@example.com`);
    google.signInAs(other);
    const identityId = await signedInIdentity(await signIn('google'));
    expect((await env.call('PUT', `/api/v1/identity/${identityId}`, admin, { activated: false })).status).toBe(200);
    expect((await signIn('google')).response.status).toBe(403);
  });

  it('takes the primary verified address from /user/emails when GitHub hides the email, and creates a GITHUB credential', async () => {
    const primary = `${unique('grace')}@example.com`;
    const account: GitHubAccount = {
      id: Math.floor(Math.random() * 1e9),
      login: 'grace',
      name: null,
      email: null,
      emails: [
        { email: `${unique('other')}@example.com`, primary: false, verified: true },
        { email: primary, primary: true, verified: true },
      ],
    };
    github.signInAs(account);
    const subject = await signedInIdentity(await signIn('github'));
    const [identity] = await identitiesWith(primary);
    expect(identity).toMatchObject({ id: subject, name: 'grace', email: primary });
    expect((await credentialsWith('GITHUB', String(account.id))).map((credential) => credential.identity_id)).toEqual([subject]);
    // PKCE: the server issued the token only because the verifier matched the challenge.
    expect(github.tokenRequests.at(-1)?.code_verifier).toMatch(/^[\w-]{43}$/);
  });

  it('refuses a GitHub account without a verified address: an error page, and nothing created', async () => {
    const email = `${unique('unverified-gh')}@example.com`;
    const account: GitHubAccount = { id: Math.floor(Math.random() * 1e9), login: 'nobody', name: null, email, emails: [{ email, primary: true, verified: false }] };
    github.signInAs(account);
    const page = await pageOf((await signIn('github')).response);
    expect(page.status).toBe(403);
    expect(await identitiesWith(email)).toEqual([]);
    expect(await credentialsWith('GITHUB', String(account.id))).toEqual([]);
  });

  it('answers an error page for a missing, unknown or reused state, and for a callback from another browser', async () => {
    google.signInAs(googleAccount(`${unique('state')}@example.com`));
    const first = await signIn('google');
    await signedInIdentity(first);
    const reused = await pageOf(await first.browser.get(first.callback));
    expect(reused.status).toBe(400);
    expect(reused.body).toContain('This sign-in attempt has expired, was already used, or was started in another browser.');

    const forged = 'x'.repeat(43);
    const unknown = await pageOf(await fetch(`${env.gateway}/api/v1/sso/federation/google/callback?code=abc&state=${forged}`, { headers: { cookie: `sso_federation_state=${forged}` } }));
    expect(unknown.status).toBe(400);
    const missing = await pageOf(await fetch(`${env.gateway}/api/v1/sso/federation/google/callback?code=abc`));
    expect(missing.status).toBe(400);

    // Login CSRF: the callback URL of someone else's sign-in, opened in a browser without its cookie.
    const email = `${unique('csrf')}@example.com`;
    google.signInAs(googleAccount(email));
    const { start } = await startAt('google');
    const upstream = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const elsewhere = await new Browser(env.gateway).get(upstream.headers.get('location')!);
    expect(elsewhere.status).toBe(400);
    expect(await identitiesWith(email)).toEqual([]);
  });

  it('answers an error page when the person declines at the provider', async () => {
    github.declineNext();
    const page = await pageOf((await signIn('github', 'fr')).response);
    expect(page.status).toBe(403);
    expect(page.body).toContain('La connexion avec GitHub a été annulée.');
  });

  it('answers an error page, never a 500, when the provider errs or hangs', async () => {
    github.signInAs({ id: 1, login: 'x', name: null, email: null, emails: [] });
    for (const failure of ['error', 'hang'] as const) {
      const { browser, start } = await startAt('github');
      const upstream = await fetch(start.headers.get('location')!, { redirect: 'manual' });
      github.failWith(failure);
      try {
        const page = await pageOf(await browser.get(upstream.headers.get('location')!));
        expect(page.status).toBe(502);
        expect(page.body).toContain('GitHub could not complete the sign-in.');
      } finally {
        github.failWith(undefined);
      }
    }
  });

  it('signs in end to end as openid-client sees it: authorize with idp_hint=google, the provider, the callback, the code, the tokens and userinfo', async () => {
    const email = `${unique('e2e')}@example.com`;
    google.signInAs(googleAccount(email, { name: 'End To End' }));
    const rp = await client.discovery(new URL(ISSUER), clientId, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
      [client.customFetch]: (url, options) => fetch(url.replace(ISSUER, env.gateway), options as RequestInit),
    });
    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const state = client.randomState();
    const authorize = client.buildAuthorizationUrl(rp, {
      redirect_uri: REDIRECT_URI,
      scope: 'openid email profile',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      idp_hint: 'google',
    });
    const browser = new Browser(env.gateway);
    let response = await browser.get(authorize);
    // authorize -> federation start -> the provider -> the callback -> the client.
    for (let hop = 0; hop < 4 && !response.headers.get('location')?.startsWith(REDIRECT_URI); hop++) {
      const next = new URL(response.headers.get('location')!, ISSUER);
      response = next.origin === ISSUER ? await browser.get(next) : await fetch(next, { redirect: 'manual' });
    }
    const back = new URL(response.headers.get('location')!);
    const tokens = await client.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedNonce: nonce, expectedState: state, idTokenExpected: true });
    const [identity] = await identitiesWith(email);
    expect(tokens.claims()).toMatchObject({ iss: ISSUER, sub: identity!.id, aud: clientId, nonce });
    const info = await client.fetchUserInfo(rp, tokens.access_token, identity!.id);
    expect(info).toMatchObject({ sub: identity!.id, email, name: 'End To End' });
  });
});
