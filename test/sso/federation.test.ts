import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { startGitHubServer, type GitHubAccount, type GitHubServer } from '../support/github-server.js';
import { startGoogleServer, type GoogleServer } from '../support/google-server.js';
import { CASES, startSsoPlatform, type SsoPlatform } from './harness.js';

// Starts the whole platform; jest's projects mode ignores the preset's testTimeout.
jest.setTimeout(90_000);

/** The issuer the platform names (JWT_ISSUER's default): the providers send the browser back under it. */
const ISSUER = 'http://localhost:3000';

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

  beforeAll(async () => {
    google = await startGoogleServer();
    github = await startGitHubServer();
    env = await startSsoPlatform(mode, topology, { ...google.env, ...github.env });
    admin = await env.adminToken();
  });
  afterAll(async () => {
    await env?.close();
    await google?.close();
    await github?.close();
  });

  const unique = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

  /** A browser's visit to the start: the redirect upstream and the cookie that binds the state to this browser. */
  const start = async (provider: string, requestId = unique('request')) => {
    const response = await fetch(`${env.gateway}/api/v1/sso/federation/${provider}/start?request=${requestId}`, { redirect: 'manual' });
    return { response, location: response.headers.get('location'), cookie: response.headers.get('set-cookie')?.split(';')[0] };
  };

  /** The page an HTML answer is, with its status. */
  const pageOf = async (response: Response): Promise<Page> => ({ status: response.status, body: await response.text(), headers: response.headers });

  /** Visits a callback URL (under the issuer) where the platform listens, as the browser that holds `cookie`. */
  const visitCallback = async (callback: string, cookie: string | undefined, language = 'en'): Promise<Page> => {
    const url = new URL(callback);
    expect(url.origin).toBe(ISSUER);
    return pageOf(await fetch(`${env.gateway}${url.pathname}${url.search}`, { redirect: 'manual', headers: { 'accept-language': language, ...(cookie ? { cookie } : {}) } }));
  };

  /** A whole sign-in: start, the provider's login (which redirects straight back), and the callback. */
  const signIn = async (provider: 'google' | 'github', language = 'en') => {
    const started = await start(provider);
    expect(started.response.status).toBe(302);
    const upstream = await fetch(started.location!, { redirect: 'manual' });
    expect(upstream.status).toBe(302);
    const callback = upstream.headers.get('location')!;
    return { page: await visitCallback(callback, started.cookie, language), callback, cookie: started.cookie };
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
    const started = await start('google');
    expect(started.response.status).toBe(302);
    const location = new URL(started.location!);
    expect(location.searchParams.get('redirect_uri')).toBe(`${ISSUER}/api/v1/sso/federation/google/callback`);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('nonce')).toMatch(/^[\w-]{43}$/);
    const state = location.searchParams.get('state');
    expect(state).toMatch(/^[\w-]{43}$/);
    expect(started.response.headers.get('set-cookie')).toBe(`sso_federation_state=${state}; Path=/api/v1/sso/federation/; Max-Age=600; HttpOnly; SameSite=Lax`);
  });

  it('answers an HTML 404 for a provider that is not configured or does not exist, and a 400 without a request', async () => {
    for (const provider of ['facebook', 'GOOGLE']) {
      const page = await pageOf((await start(provider)).response);
      expect(page.status).toBe(404);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.body).toContain('This sign-in option is not available.');
    }
    const missing = await pageOf(await fetch(`${env.gateway}/api/v1/sso/federation/google/start`, { redirect: 'manual' }));
    expect(missing.status).toBe(400);
    expect(missing.body).toContain('This sign-in link is incomplete.');
  });

  it('creates the identity and its GOOGLE credential for a new subject with a new verified email', async () => {
    const email = `${unique('ada')}@Example.com`;
    const account = googleAccount(email);
    google.signInAs(account);
    const { page } = await signIn('google');
    expect(page.status).toBe(200);
    const [identity, ...others] = await identitiesWith(email);
    expect(others).toEqual([]);
    expect(identity).toMatchObject({ email: email.toLowerCase(), name: 'Ada Lovelace', avatar: 'https://example.com/ada.png', activated: true });
    const credentials = await credentialsWith('GOOGLE', account.sub);
    expect(credentials.map((credential) => credential.identity_id)).toEqual([identity!.id]);
  });

  it('signs a known subject in as the identity of its credential, whatever email the provider says now', async () => {
    const email = `${unique('known')}@example.com`;
    const identityId = await createIdentity(email);
    const subject = unique('google-sub');
    const linked = await env.call('POST', '/api/v1/credentials', admin, { identity_id: identityId, provider: 'GOOGLE', subject });
    expect(linked.status).toBe(201);
    const newEmail = `${unique('renamed')}@example.com`;
    google.signInAs(googleAccount(newEmail, { sub: subject }));
    const { page } = await signIn('google');
    expect(page.status).toBe(200);
    expect(await identitiesWith(newEmail)).toEqual([]);
    const [credential] = await credentialsWith('GOOGLE', subject);
    expect(credential).toMatchObject({ identity_id: identityId });
    expect(credential!.lastUsedAt).not.toBeNull();
  });

  it('never links a new subject to the identity that has its email: an error page says to sign in with the password, and nothing is created', async () => {
    const email = `${unique('taken')}@example.com`;
    await createIdentity(email);
    const account = googleAccount(email.toUpperCase());
    google.signInAs(account);
    const { page } = await signIn('google');
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
    const { page } = await signIn('google', 'de');
    expect(page.status).toBe(403);
    expect(page.body).toContain('Ihr Google-Konto hat keine bestätigte E-Mail-Adresse');
    expect(await identitiesWith(email)).toEqual([]);
    expect(await credentialsWith('GOOGLE', account.sub)).toEqual([]);
  });

  it('refuses an ID token with a nonce other than the one sent: an error page, and nothing created', async () => {
    const email = `${unique('nonce')}@example.com`;
    const account = googleAccount(email, { nonce: 'not the nonce sso sent' });
    google.signInAs(account);
    const { page } = await signIn('google');
    expect(page.status).toBe(502);
    expect(page.body).toContain('Google could not complete the sign-in.');
    expect(await identitiesWith(email)).toEqual([]);
  });

  it('refuses a deactivated credential or identity with an error page', async () => {
    const email = `${unique('inactive')}@example.com`;
    const account = googleAccount(email);
    google.signInAs(account);
    expect((await signIn('google')).page.status).toBe(200);
    const [credential] = await credentialsWith('GOOGLE', account.sub);
    expect((await env.call('PUT', `/api/v1/credentials/${credential!.id}`, admin, { activated: false })).status).toBe(200);
    const refused = await signIn('google');
    expect(refused.page.status).toBe(403);
    expect(refused.page.body).toContain('This account is deactivated.');

    const other = googleAccount(`${unique('inactive-identity')}@example.com`);
    google.signInAs(other);
    expect((await signIn('google')).page.status).toBe(200);
    const [identity] = await identitiesWith(other.email);
    expect((await env.call('PUT', `/api/v1/identity/${identity!.id}`, admin, { activated: false })).status).toBe(200);
    expect((await signIn('google')).page.status).toBe(403);
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
    const { page } = await signIn('github');
    expect(page.status).toBe(200);
    const [identity] = await identitiesWith(primary);
    expect(identity).toMatchObject({ name: 'grace', email: primary });
    expect((await credentialsWith('GITHUB', String(account.id))).map((credential) => credential.identity_id)).toEqual([identity!.id]);
    // PKCE: the server issued the token only because the verifier matched the challenge.
    expect(github.tokenRequests.at(-1)?.code_verifier).toMatch(/^[\w-]{43}$/);
  });

  it('refuses a GitHub account without a verified address: an error page, and nothing created', async () => {
    const email = `${unique('unverified-gh')}@example.com`;
    const account: GitHubAccount = { id: Math.floor(Math.random() * 1e9), login: 'nobody', name: null, email, emails: [{ email, primary: true, verified: false }] };
    github.signInAs(account);
    const { page } = await signIn('github');
    expect(page.status).toBe(403);
    expect(await identitiesWith(email)).toEqual([]);
    expect(await credentialsWith('GITHUB', String(account.id))).toEqual([]);
  });

  it('answers an error page for a missing, unknown or reused state, and for a callback from another browser', async () => {
    google.signInAs(googleAccount(`${unique('state')}@example.com`));
    const { page, callback, cookie } = await signIn('google');
    expect(page.status).toBe(200);
    const reused = await visitCallback(callback, cookie);
    expect(reused.status).toBe(400);
    expect(reused.body).toContain('This sign-in attempt has expired, was already used, or was started in another browser.');

    const unknown = await visitCallback(`${ISSUER}/api/v1/sso/federation/google/callback?code=abc&state=${'x'.repeat(43)}`, `sso_federation_state=${'x'.repeat(43)}`);
    expect(unknown.status).toBe(400);
    const missing = await visitCallback(`${ISSUER}/api/v1/sso/federation/google/callback?code=abc`, cookie);
    expect(missing.status).toBe(400);

    // Login CSRF: the callback URL of someone else's sign-in, opened in a browser without its cookie.
    const email = `${unique('csrf')}@example.com`;
    google.signInAs(googleAccount(email));
    const started = await start('google');
    const upstream = await fetch(started.location!, { redirect: 'manual' });
    const elsewhere = await visitCallback(upstream.headers.get('location')!, undefined);
    expect(elsewhere.status).toBe(400);
    expect(await identitiesWith(email)).toEqual([]);
  });

  it('answers an error page when the person declines at the provider', async () => {
    github.declineNext();
    const { page } = await signIn('github', 'fr');
    expect(page.status).toBe(403);
    expect(page.body).toContain('La connexion avec GitHub a été annulée.');
  });

  it('answers an error page, never a 500, when the provider errs or hangs', async () => {
    github.signInAs({ id: 1, login: 'x', name: null, email: null, emails: [] });
    for (const failure of ['error', 'hang'] as const) {
      const started = await start('github');
      const upstream = await fetch(started.location!, { redirect: 'manual' });
      github.failWith(failure);
      try {
        const page = await visitCallback(upstream.headers.get('location')!, started.cookie);
        expect(page.status).toBe(502);
        expect(page.body).toContain('GitHub could not complete the sign-in.');
      } finally {
        github.failWith(undefined);
      }
    }
  });
});
