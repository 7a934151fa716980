// Browser sign-in end to end: openid-client as the relying party (discovery, PKCE, the code
// exchange, ID token validation, userinfo, refresh, logout) against the hosted login page,
// and every rule of the flow attacked on its own.
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as client from 'openid-client';
import { FIRST_PARTY_CLIENT_ID } from '@app/sso';
import { eventually } from '@app/testing';
import { CASES, claimsOf, startSsoPlatform, type SsoPlatform } from './harness.js';
import { authorizationRequest, Browser, ISSUER, POST_LOGOUT_URI, REDIRECT_URI, hiddenField } from './browser-support.js';

const CLIENTS = '/api/v1/sso/clients';
const PASSWORD = 'a browser user password';
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

interface Registered {
  id: string;
  secret?: string;
}

describe.each(CASES)('browser sign-in (%s, %s)', (topology, mode) => {
  let env: SsoPlatform;
  let admin: string;
  let user: { id: string; email: string; token: string };
  let confidential: Registered;
  let publicClient: Registered;

  const register = async (body: Record<string, unknown>, token = admin) => env.call('POST', CLIENTS, token, body);
  const authorizeUrl = (clientId: string, params: Record<string, string> = {}) =>
    authorizationRequest(env.gateway, clientId, { scope: 'openid email profile offline_access', nonce: 'the-nonce', ...params });
  const exchange = (params: Record<string, string>, headers: Record<string, string> = {}) => env.token({ grant_type: 'authorization_code', redirect_uri: REDIRECT_URI, ...params }, headers);
  /** A fresh code for the public client, by signing in in a new browser. */
  const freshCode = async (params: Record<string, string> = {}) => {
    const { url, verifier } = authorizeUrl(publicClient.id, params);
    const browser = new Browser(env.gateway);
    const back = await browser.signIn(url, user.email, PASSWORD);
    return { code: back.searchParams.get('code')!, verifier, browser, back };
  };
  const userinfo = (token: string) => env.call('GET', '/api/v1/sso/userinfo', token);

  /** openid-client configured for a registered client, reaching the issuer's URLs where the platform listens. */
  const relyingParty = (registered: Registered) =>
    client.discovery(new URL(ISSUER), registered.id, registered.secret, registered.secret ? client.ClientSecretBasic(registered.secret) : client.None(), {
      execute: [client.allowInsecureRequests],
      [client.customFetch]: (url, options) => fetch(url.replace(ISSUER, env.gateway), options as RequestInit),
    });

  beforeAll(async () => {
    env = await startSsoPlatform(mode, topology);
    admin = await env.adminToken();
    const email = `browser-${randomUUID().slice(0, 8)}@example.com`;
    const created = await env.call('POST', '/api/v1/identity', undefined, { name: 'Browser User', email, avatar: 'https://example.com/me.png' });
    const id = (created.body as { id: string }[])[0]!.id;
    expect((await env.call('POST', '/api/v1/credentials', admin, { identity_id: id, provider: 'LOCAL', secret: PASSWORD })).status).toBe(201);
    const token = String((await env.token({ grant_type: 'password', username: email, password: PASSWORD })).body.access_token);
    user = { id, email, token };
    const uris = { redirect_uris: [REDIRECT_URI], post_logout_redirect_uris: [POST_LOGOUT_URI] };
    const made = await register({ name: 'Confidential App', type: 'confidential', ...uris });
    expect(made.status).toBe(201);
    const record = (made.body as { id: string; client_secret: string }[])[0]!;
    confidential = { id: record.id, secret: record.client_secret };
    publicClient = { id: ((await register({ name: 'Public App', type: 'public', ...uris })).body as { id: string }[])[0]!.id };
  });
  afterAll(() => env?.close());

  describe('registered clients', () => {
    it('shows a confidential secret once (256 bits), never on a read, and lets an admin read, list, update and delete', async () => {
      expect(Buffer.from(confidential.secret!, 'base64url')).toHaveLength(32);
      const read = await env.call('GET', `${CLIENTS}/${confidential.id}`, admin);
      expect(read.status).toBe(200);
      expect((read.body as Record<string, unknown>[])[0]).toMatchObject({ id: confidential.id, type: 'confidential', redirect_uris: [REDIRECT_URI], grant_types: ['authorization_code', 'refresh_token'] });
      expect(JSON.stringify(read.body)).not.toContain(confidential.secret);
      expect(JSON.stringify((await env.call('GET', CLIENTS, admin)).body)).not.toContain(confidential.secret);

      const extra = (await register({ name: 'Short-lived', type: 'public', redirect_uris: ['https://app.example.com/cb'] })).body as { id: string; client_secret?: string }[];
      expect(extra[0]!.client_secret).toBeUndefined();
      const updated = await env.call('PUT', `${CLIENTS}/${extra[0]!.id}`, admin, {
        name: 'Renamed', redirect_uris: ['https://app.example.com/other'], post_logout_redirect_uris: [], grant_types: ['authorization_code'], scopes: ['openid'],
      });
      expect(updated.status).toBe(200);
      expect((updated.body as Record<string, unknown>[])[0]).toMatchObject({ name: 'Renamed', redirect_uris: ['https://app.example.com/other'], scopes: ['openid'] });
      expect((await env.call('DELETE', `${CLIENTS}/${extra[0]!.id}`, admin)).status).toBe(204);
      expect((await env.call('GET', `${CLIENTS}/${extra[0]!.id}`, admin)).status).toBe(404);
      // A deleted client signs nobody in: its authorize is the error page.
      const gone = await new Browser(env.gateway).get(authorizeUrl(extra[0]!.id).url);
      expect([gone.status, gone.headers.get('location')]).toEqual([400, null]);
    });

    it('pages the list as every list pages: by cursor through the Link header, each client once; 400 naming cursor for a bad one', async () => {
      const names = ['Paged A', 'Paged B', 'Paged C'].map((name) => `${name} ${randomUUID()}`);
      for (const name of names) expect((await register({ name, type: 'public', redirect_uris: ['https://app.example.com/cb'] })).status).toBe(201);
      const seen: string[] = [];
      let path: string | undefined = `${CLIENTS}?sort=name&limit=2`;
      for (let pages = 0; path !== undefined && pages < 50; pages++) {
        const page = await env.call('GET', path, admin);
        expect(page.status).toBe(200);
        seen.push(...(page.body as { name: string }[]).map((client) => client.name));
        path = /<([^>]+)>; rel="next"/.exec(page.headers.get('link') ?? '')?.[1];
      }
      expect(path).toBeUndefined();
      expect(new Set(seen).size).toBe(seen.length);
      // In name order (the database's collation decides the rest of the list's order).
      expect(names.map((name) => seen.indexOf(name))).toEqual(names.map((name) => seen.indexOf(name)).sort((a, b) => a - b));
      for (const name of names) expect(seen).toContain(name);
      const bad = await env.call('GET', `${CLIENTS}?cursor=not-a-cursor`, admin);
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain('cursor');
    });

    it('answers 403 to a signed-in non-admin and 401 without a token, on every operation', async () => {
      const some = `${CLIENTS}/${confidential.id}`;
      const body = { name: 'x', type: 'public', redirect_uris: [REDIRECT_URI] };
      for (const [method, path] of [['GET', CLIENTS], ['POST', CLIENTS], ['GET', some], ['PUT', some], ['DELETE', some]] as const) {
        const sent = method === 'POST' || method === 'PUT' ? body : undefined;
        expect([method, path, (await env.call(method, path, user.token, sent)).status]).toEqual([method, path, 403]);
        expect([method, path, (await env.call(method, path, undefined, sent)).status]).toEqual([method, path, 401]);
      }
      expect((await env.call('GET', some, admin)).status).toBe(200);
    });

    it.each([
      ['plain http off loopback', 'http://app.example.com/cb'],
      ['plain http on a name that only starts like loopback', 'http://127.0.0.1.example.com/cb'],
      ['a fragment', 'https://app.example.com/cb#frag'],
      ['a relative URI', '/callback'],
      ['a custom scheme', 'myapp://callback'],
      ['javascript:', 'javascript:alert(1)'],
      ['credentials', 'https://user:pw@app.example.com/cb'],
    ])('refuses a redirect URI with %s (400 problem)', async (_what, uri) => {
      for (const field of ['redirect_uris', 'post_logout_redirect_uris']) {
        const refused = await register({ name: 'Bad', type: 'public', redirect_uris: [REDIRECT_URI], [field]: [uri] });
        expect(refused.status).toBe(400);
        expect(refused.body).toMatchObject({ code: 'PLATFORM_VALIDATION_FAILED' });
      }
    });

    it('accepts https anywhere and http on localhost, 127.0.0.0/8 and [::1]', async () => {
      const uris = ['https://app.example.com/cb', 'http://localhost/cb', 'http://127.0.0.1:9000/cb', 'http://127.1.2.3/cb', 'http://[::1]:9000/cb'];
      expect((await register({ name: 'Good', type: 'public', redirect_uris: uris })).status).toBe(201);
    });
  });

  describe('the whole flow with openid-client', () => {
    it.each([
      ['confidential (client_secret_basic)', () => confidential],
      ['public (PKCE alone)', () => publicClient],
    ])('signs in a %s client: discovery, PKCE, code, ID token, userinfo, refresh, logout', async (_kind, which) => {
      const registered = which();
      const config = await relyingParty(registered);
      const metadata = config.serverMetadata();
      expect(metadata.authorization_endpoint).toBe(`${ISSUER}/api/v1/sso/authorize`);
      expect(metadata.code_challenge_methods_supported).toEqual(['S256']);

      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const nonce = client.randomNonce();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT_URI,
        scope: 'openid email profile offline_access',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      const browser = new Browser(env.gateway);
      const back = await browser.signIn(url, user.email, PASSWORD);
      expect(back.origin + back.pathname).toBe(REDIRECT_URI);
      expect(back.searchParams.get('iss')).toBe(ISSUER);
      expect(back.searchParams.get('state')).toBe(state);

      const tokens = await client.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
      const idClaims = tokens.claims()!;
      expect(idClaims).toMatchObject({ iss: ISSUER, sub: user.id, aud: registered.id, nonce });
      expect(typeof idClaims.auth_time).toBe('number');
      expect(typeof idClaims.at_hash).toBe('string');
      expect(typeof idClaims.sid).toBe('string');
      expect(JSON.parse(Buffer.from(tokens.id_token!.split('.')[0]!, 'base64url').toString())).toMatchObject({ alg: 'ES256', typ: 'JWT' });
      const access = claimsOf(tokens.access_token);
      expect(access).toMatchObject({ sub: user.id, client_id: registered.id, scope: 'openid email profile offline_access' });
      expect(JSON.parse(Buffer.from(tokens.access_token.split('.')[0]!, 'base64url').toString()).typ).toBe('at+jwt');
      expect(tokens.refresh_token).toEqual(expect.any(String));

      const info = await client.fetchUserInfo(config, tokens.access_token, user.id);
      expect(info).toMatchObject({ sub: user.id, email: user.email, name: 'Browser User', picture: 'https://example.com/me.png' });

      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
      expect(claimsOf(refreshed.access_token)).toMatchObject({ sub: user.id, client_id: registered.id, scope: 'openid email profile offline_access' });

      // A second authorize in the same browser answers at once, without the form.
      const again = await browser.get(authorizeUrl(registered.id).url);
      expect(again.status).toBe(303);
      expect(new URL(again.headers.get('location')!).searchParams.get('code')).toEqual(expect.any(String));

      const logoutUrl = client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: POST_LOGOUT_URI, state: 'bye' });
      const logout = await browser.get(logoutUrl);
      expect(logout.status).toBe(303);
      expect(logout.headers.get('location')).toBe(`${POST_LOGOUT_URI}?state=bye`);
      // Its tokens are refused everywhere within a second, and the session answers no more.
      expect(await eventually(async () => (await userinfo(refreshed.access_token)).status === 401)).toBe(true);
      await expect(client.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
      const none = await browser.get(authorizeUrl(registered.id, { prompt: 'none' }).url);
      expect(new URL(none.headers.get('location')!).searchParams.get('error')).toBe('login_required');
    });
  });

  describe('the authorization endpoint', () => {
    it.each([
      ['an unknown client', () => authorizeUrl(randomUUID()).url],
      ['a malformed client_id', () => authorizeUrl('not-a-client').url],
      ['no client_id', () => authorizeUrl('', {}).url],
      ['an unregistered redirect_uri', () => authorizeUrl(publicClient.id, { redirect_uri: 'http://localhost:8080/elsewhere' }).url],
      ['a redirect_uri differing by a trailing slash', () => authorizeUrl(publicClient.id, { redirect_uri: `${REDIRECT_URI}/` }).url],
      ['no redirect_uri', () => authorizeUrl(publicClient.id, { redirect_uri: '' }).url],
    ])('shows an error page for %s and never redirects', async (_what, url) => {
      const response = await new Browser(env.gateway).get(url());
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await response.text()).toContain('role="alert"');
    });

    it.each([
      ['plain PKCE', { code_challenge_method: 'plain', code_challenge: 'a'.repeat(43) }, 'invalid_request'],
      ['no PKCE', { code_challenge: '', code_challenge_method: '' }, 'invalid_request'],
      ['a challenge without its method', { code_challenge_method: '' }, 'invalid_request'],
      ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
      ['response_mode=fragment', { response_mode: 'fragment' }, 'invalid_request'],
      ['an unknown scope', { scope: 'openid admin' }, 'invalid_scope'],
      ['prompt=none without a session', { prompt: 'none' }, 'login_required'],
      ['a request object', { request: 'eyJ...' }, 'request_not_supported'],
      ['a request_uri (OIDC Core §6.2; only PAR would make one)', { request_uri: 'https://attacker.example/request.jwt' }, 'request_uri_not_supported'],
      ['prompt=none beside another value (OIDC Core §3.1.2.1)', { prompt: 'none login' }, 'invalid_request'],
      ['a prompt value nobody defined', { prompt: 'login sudo' }, 'invalid_request'],
    ])('redirects %s back with the error, state and iss (RFC 6749 §4.1.2.1, RFC 9207)', async (_what, params, error) => {
      const response = await new Browser(env.gateway).get(authorizeUrl(publicClient.id, params).url);
      expect(response.status).toBe(303);
      const location = new URL(response.headers.get('location')!);
      expect(location.origin + location.pathname).toBe(REDIRECT_URI);
      expect(Object.fromEntries(location.searchParams)).toMatchObject({ error, state: 'the-state', iss: ISSUER });
      expect(location.searchParams.has('code')).toBe(false);
    });

    it('refuses a scope the client was not registered for', async () => {
      const narrow = ((await register({ name: 'Narrow', type: 'public', redirect_uris: [REDIRECT_URI], scopes: ['openid'] })).body as { id: string }[])[0]!;
      const response = await new Browser(env.gateway).get(authorizeUrl(narrow.id, { scope: 'openid email' }).url);
      expect(new URL(response.headers.get('location')!).searchParams.get('error')).toBe('invalid_scope');
    });

    it('serves the form localized, labelled, without script, under a strict CSP', async () => {
      const response = await new Browser(env.gateway).get(authorizeUrl(publicClient.id).url, { 'accept-language': 'de-CH, en;q=0.5' });
      const html = await response.text();
      expect(response.headers.get('content-language')).toBe('de');
      expect(html).toContain('<html lang="de">');
      expect(html).toContain('<label for="password">Passwort</label>');
      expect(html).toContain('Public App');
      expect(html).not.toMatch(/<script/i);
      const csp = response.headers.get('content-security-policy')!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(response.headers.get('cache-control')).toBe('no-store');
    });

    it('shows the form again for max_age=0, and prompt=none then says login_required', async () => {
      const { browser } = await freshCode();
      expect((await browser.get(authorizeUrl(publicClient.id, { max_age: '0' }).url)).status).toBe(200);
      const none = await browser.get(authorizeUrl(publicClient.id, { max_age: '0', prompt: 'none' }).url);
      expect(new URL(none.headers.get('location')!).searchParams.get('error')).toBe('login_required');
      const recent = await browser.get(authorizeUrl(publicClient.id, { max_age: '3600', prompt: 'none' }).url);
      expect(new URL(recent.headers.get('location')!).searchParams.get('code')).toEqual(expect.any(String));
    });

    it('OIDC Core §3.1.2.1: prompt=consent (every client first-party: no page yet) answers at once with a live session, and prompt="login consent" shows the form', async () => {
      const { browser } = await freshCode();
      const consent = await browser.get(authorizeUrl(publicClient.id, { prompt: 'consent' }).url);
      expect(consent.status).toBe(303);
      expect(new URL(consent.headers.get('location')!).searchParams.get('code')).toEqual(expect.any(String));
      const both = await browser.get(authorizeUrl(publicClient.id, { prompt: 'login consent' }).url);
      expect(both.status).toBe(200);
      expect(hiddenField(await both.text(), 'csrf')).toEqual(expect.any(String));
    });

    it('shows the form again for prompt=login despite a live session', async () => {
      const { browser } = await freshCode();
      const response = await browser.get(authorizeUrl(publicClient.id, { prompt: 'login' }).url);
      expect(response.status).toBe(200);
      expect(hiddenField(await response.text(), 'csrf')).toEqual(expect.any(String));
    });
  });

  describe('the login form', () => {
    it('sets an HttpOnly, SameSite=Lax session cookie scoped to sso', async () => {
      const browser = new Browser(env.gateway);
      const form = await browser.openLoginForm(authorizeUrl(publicClient.id).url);
      const response = await browser.submit(form, user.email, PASSWORD);
      const session = response.headers.getSetCookie().find((line) => line.startsWith('sso_session='))!;
      expect(session).toMatch(/HttpOnly/);
      expect(session).toMatch(/SameSite=Lax/);
      expect(session).toMatch(/Path=\/api\/v1\/sso/);
      // The issuer is http here: Secure would keep the cookie from ever coming back.
      expect(session).not.toMatch(/Secure/);
    });

    it('shows the form again with a message on a wrong password, without a redirect', async () => {
      const browser = new Browser(env.gateway);
      const form = await browser.openLoginForm(authorizeUrl(publicClient.id).url, { 'accept-language': 'fr' });
      const response = await browser.submit(form, user.email, 'not the password', { 'accept-language': 'fr' });
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
      const html = await response.text();
      expect(html).toContain("L&#39;e-mail ou le mot de passe est incorrect.");
      expect(html).toContain(`value="${user.email}"`);
      // The form shown again works.
      const retry = { request: hiddenField(html, 'request')!, csrf: hiddenField(html, 'csrf')!, html };
      expect((await browser.submit(retry, user.email, PASSWORD)).status).toBe(303);
    });

    it.each([
      ['no anti-forgery value', (form: { csrf: string }) => ({ ...form, csrf: '' }), true],
      ['a wrong anti-forgery value', (form: { csrf: string }) => ({ ...form, csrf: 'x'.repeat(43) }), true],
      ['no form cookie (a cross-site post)', (form: { csrf: string }) => form, false],
    ])('refuses a post with %s (403 page, no sign-in)', async (_what, tamper, keepCookies) => {
      const browser = new Browser(env.gateway);
      const form = await browser.openLoginForm(authorizeUrl(publicClient.id).url);
      const poster = keepCookies ? browser : new Browser(env.gateway);
      const response = await poster.submit({ ...form, ...tamper(form) }, user.email, PASSWORD);
      expect(response.status).toBe(403);
      expect(response.headers.get('location')).toBeNull();
      expect(response.headers.getSetCookie().some((line) => line.startsWith('sso_session='))).toBe(false);
    });

    it("refuses another request's anti-forgery value", async () => {
      const browser = new Browser(env.gateway);
      const first = await browser.openLoginForm(authorizeUrl(publicClient.id).url);
      const second = await browser.openLoginForm(authorizeUrl(publicClient.id).url);
      expect((await browser.submit({ ...first, csrf: second.csrf }, user.email, PASSWORD)).status).toBe(403);
    });

    it('shows the start-again page for an unknown or answered request', async () => {
      const browser = new Browser(env.gateway);
      const form = await browser.openLoginForm(authorizeUrl(publicClient.id).url);
      expect((await browser.submit({ ...form, request: randomUUID() }, user.email, PASSWORD)).status).toBe(400);
      expect((await browser.submit(form, user.email, PASSWORD)).status).toBe(303);
      const replay = await browser.submit(form, user.email, PASSWORD);
      expect([replay.status, replay.headers.get('location')]).toEqual([400, null]);
    });

    it('throttles failed passwords like the token endpoint (429 with Retry-After, still the form)', async () => {
      const email = `throttled-${randomUUID().slice(0, 8)}@example.com`;
      const browser = new Browser(env.gateway);
      const form = await browser.openLoginForm(authorizeUrl(publicClient.id).url);
      let current = form;
      let last: Response | undefined;
      for (let attempt = 0; attempt < 6; attempt++) {
        last = await browser.submit(current, email, 'wrong password');
        const html = await last.text();
        current = { request: hiddenField(html, 'request')!, csrf: hiddenField(html, 'csrf')!, html };
      }
      expect(last!.status).toBe(429);
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(current.csrf).toEqual(expect.any(String));
    });
  });

  describe('codes at the token endpoint', () => {
    it('refuses a wrong code_verifier, and the right one still works after', async () => {
      const { code, verifier } = await freshCode();
      const wrong = await exchange({ code, client_id: publicClient.id, code_verifier: client.randomPKCECodeVerifier() });
      expect([wrong.status, wrong.body.error]).toEqual([400, 'invalid_grant']);
      expect((await exchange({ code, client_id: publicClient.id, code_verifier: verifier })).status).toBe(200);
    });

    it('refuses a wrong redirect_uri and another client', async () => {
      const { code, verifier } = await freshCode();
      const otherUri = await exchange({ code, client_id: publicClient.id, code_verifier: verifier, redirect_uri: 'http://localhost:8080/elsewhere' });
      expect([otherUri.status, otherUri.body.error]).toEqual([400, 'invalid_grant']);
      const otherClient = await exchange({ code, code_verifier: verifier }, { authorization: basic(confidential.id, confidential.secret!) });
      expect([otherClient.status, otherClient.body.error]).toEqual([400, 'invalid_grant']);
    });

    it('authenticates confidential clients: a wrong, missing or public-style secret is invalid_client', async () => {
      const { url, verifier } = authorizeUrl(confidential.id);
      const back = await new Browser(env.gateway).signIn(url, user.email, PASSWORD);
      const code = back.searchParams.get('code')!;
      for (const attempt of [
        () => exchange({ code, code_verifier: verifier }, { authorization: basic(confidential.id, 'wrong') }),
        () => exchange({ code, code_verifier: verifier, client_id: confidential.id }),
        () => exchange({ code, code_verifier: verifier, client_id: confidential.id, client_secret: `${confidential.secret}x` }),
      ]) {
        const refused = await attempt();
        expect([refused.status, refused.body.error]).toEqual([401, 'invalid_client']);
      }
      const granted = await exchange({ code, code_verifier: verifier, client_id: confidential.id, client_secret: confidential.secret! });
      expect(granted.status).toBe(200);
      // A public client may not present a secret it does not have.
      const other = await freshCode();
      const withSecret = await exchange({ code: other.code, code_verifier: other.verifier, client_id: publicClient.id, client_secret: 'anything' });
      expect(withSecret.body.error).toBe('invalid_client');
    });

    it('refuses a reused code and revokes every token issued from it within a second', async () => {
      const { code, verifier } = await freshCode();
      const first = await exchange({ code, client_id: publicClient.id, code_verifier: verifier });
      expect(first.status).toBe(200);
      const access = String(first.body.access_token);
      expect((await userinfo(access)).status).toBe(200);
      const reused = await exchange({ code, client_id: publicClient.id, code_verifier: verifier });
      expect([reused.status, reused.body.error]).toEqual([400, 'invalid_grant']);
      expect(await eventually(async () => (await userinfo(access)).status === 401)).toBe(true);
      const refresh = await env.token({ grant_type: 'refresh_token', refresh_token: String(first.body.refresh_token) });
      expect(refresh.body.error).toBe('invalid_grant');
    });

    it("refreshes a registered client's token only for that client: shown without its proof, the sign-in ends", async () => {
      const { url, verifier } = authorizeUrl(confidential.id);
      const back = await new Browser(env.gateway).signIn(url, user.email, PASSWORD);
      const granted = await exchange({ code: back.searchParams.get('code')!, code_verifier: verifier }, { authorization: basic(confidential.id, confidential.secret!) });
      const asClient = { authorization: basic(confidential.id, confidential.secret!) };
      const refreshed = await env.token({ grant_type: 'refresh_token', refresh_token: String(granted.body.refresh_token) }, asClient);
      expect(refreshed.status).toBe(200);
      // The next one shown by someone without the secret (or as the public client): refused, and the family revoked.
      const stolen = await env.token({ grant_type: 'refresh_token', refresh_token: String(refreshed.body.refresh_token), client_id: publicClient.id });
      expect([stolen.status, stolen.body.error]).toEqual([401, 'invalid_client']);
      expect(await eventually(async () => (await userinfo(String(refreshed.body.access_token))).status === 401)).toBe(true);
      const after = await env.token({ grant_type: 'refresh_token', refresh_token: String(refreshed.body.refresh_token) }, asClient);
      expect(after.body.error).toBe('invalid_grant');
    });

    it('refuses a code past its 60 seconds', async () => {
      const { code, verifier } = await freshCode();
      // Sixty seconds pass (the code's expiry moved back rather than the test waiting).
      await env.deps.database.query(`update "sso"."authorization_request" set "code_expires_at" = now() - interval '1 second' where "code_hash" = $1`, [createHash('sha256').update(code).digest('hex')]);
      const late = await exchange({ code, client_id: publicClient.id, code_verifier: verifier });
      expect([late.status, late.body.error]).toEqual([400, 'invalid_grant']);
    });

    it('gives a refresh token only with offline_access, and an ID token only with openid', async () => {
      const bare = await freshCode({ scope: 'openid' });
      const tokens = await exchange({ code: bare.code, client_id: publicClient.id, code_verifier: bare.verifier });
      expect(tokens.body).toMatchObject({ id_token: expect.any(String), scope: 'openid' });
      expect(tokens.body.refresh_token).toBeUndefined();
      // userinfo without email or profile: the subject alone.
      const info = await userinfo(String(tokens.body.access_token));
      expect(info.body).not.toHaveProperty('email');
      const oauth = await freshCode({ scope: 'email' });
      const plain = await exchange({ code: oauth.code, client_id: publicClient.id, code_verifier: oauth.verifier });
      expect(plain.body.id_token).toBeUndefined();
      expect((await userinfo(String(plain.body.access_token))).body).toMatchObject({ sub: user.id, email: user.email });
    });

    it('OIDC Core §5.3.1: answers userinfo by POST as by GET, with or without a form; the token comes in the header only', async () => {
      const { code, verifier } = await freshCode({ scope: 'openid email' });
      const access = String((await exchange({ code, client_id: publicClient.id, code_verifier: verifier })).body.access_token);
      const post = (headers: Record<string, string>, body?: string) =>
        fetch(`${env.gateway}/api/v1/sso/userinfo`, { method: 'POST', headers, ...(body !== undefined && { body }) });
      const byGet = (await userinfo(access)).body;
      expect(byGet).toMatchObject({ sub: user.id, email: user.email });
      for (const response of [
        await post({ authorization: `Bearer ${access}` }),
        await post({ authorization: `Bearer ${access}`, 'content-type': 'application/x-www-form-urlencoded' }, 'claims=ignored'),
      ]) {
        expect(response.status).toBe(200);
        expect(response.headers.get('cache-control')).toBe('no-store');
        expect(await response.json()).toEqual(byGet);
      }
      // RFC 6750 §2.2's form token is not taken: a token in a body ends up in logs.
      const inBody = await post({ 'content-type': 'application/x-www-form-urlencoded' }, new URLSearchParams({ access_token: access }).toString());
      expect(inBody.status).toBe(401);
      expect((await post({ authorization: `Bearer ${access}x` })).status).toBe(401);
    });
  });

  describe('sessions and logout', () => {
    it('refuses an unregistered post_logout_redirect_uri with a page, and ends nothing', async () => {
      const { code, verifier, browser } = await freshCode();
      const tokens = await exchange({ code, client_id: publicClient.id, code_verifier: verifier });
      const url = new URL('/api/v1/sso/logout', env.gateway);
      url.searchParams.set('id_token_hint', String(tokens.body.id_token));
      url.searchParams.set('post_logout_redirect_uri', 'https://evil.example.com/');
      const response = await browser.get(url);
      expect([response.status, response.headers.get('location')]).toEqual([400, null]);
      expect((await userinfo(String(tokens.body.access_token))).status).toBe(200);
    });

    it('refuses an id_token_hint that is not our ID token (an access token included)', async () => {
      const url = new URL('/api/v1/sso/logout', env.gateway);
      url.searchParams.set('id_token_hint', user.token);
      const response = await new Browser(env.gateway).get(url);
      expect(response.status).toBe(400);
    });

    it('asks for confirmation without id_token_hint, and a forged confirmation ends nothing', async () => {
      const { browser } = await freshCode();
      const url = new URL('/api/v1/sso/logout', env.gateway);
      url.searchParams.set('client_id', publicClient.id);
      url.searchParams.set('post_logout_redirect_uri', POST_LOGOUT_URI);
      const page = await browser.get(url);
      expect(page.status).toBe(200);
      const html = await page.text();
      const confirmation = hiddenField(html, 'confirmation')!;
      const forged = await browser.post('/api/v1/sso/logout', { confirmation: 'x'.repeat(64), client_id: publicClient.id });
      expect(forged.status).toBe(403);
      expect((await browser.get(authorizeUrl(publicClient.id, { prompt: 'none' }).url)).headers.get('location')).toContain('code=');
      const confirmed = await browser.post('/api/v1/sso/logout', { confirmation, client_id: publicClient.id, post_logout_redirect_uri: POST_LOGOUT_URI, state: 's' });
      expect([confirmed.status, confirmed.headers.get('location')]).toEqual([303, `${POST_LOGOUT_URI}?state=s`]);
      expect((await browser.get(authorizeUrl(publicClient.id, { prompt: 'none' }).url)).headers.get('location')).toContain('error=login_required');
    });
  });

  it('publishes the OpenID Provider metadata, only what works', async () => {
    const metadata = (await (await fetch(`${env.gateway}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      authorization_endpoint: `${ISSUER}/api/v1/sso/authorize`,
      userinfo_endpoint: `${ISSUER}/api/v1/sso/userinfo`,
      end_session_endpoint: `${ISSUER}/api/v1/sso/logout`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      id_token_signing_alg_values_supported: ['ES256'],
      scopes_supported: ['openid', 'email', 'profile', 'offline_access'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      authorization_response_iss_parameter_supported: true,
    });
    expect(metadata.grant_types_supported).toContain('authorization_code');
  });
  describe('the password grant with a registered client', () => {
    const uris = { redirect_uris: [REDIRECT_URI] };
    const login = (extra: Record<string, string> = {}, headers: Record<string, string> = {}) =>
      env.token({ grant_type: 'password', username: user.email, password: PASSWORD, ...extra }, headers);

    it('names the client in its tokens (RFC 9068 client_id) with the scope asked, and refreshes only with the client', async () => {
      const made = await register({ name: 'First-party CLI', type: 'public', grant_types: ['password', 'refresh_token'], scopes: ['email', 'profile'], ...uris });
      expect(made.status).toBe(201);
      const id = (made.body as { id: string }[])[0]!.id;
      const reply = await login({ client_id: id, scope: 'email' });
      expect(reply.status).toBe(200);
      expect(claimsOf(String(reply.body.access_token))).toMatchObject({ sub: user.id, client_id: id, scope: 'email' });
      // Refreshing keeps the client and scope; shown without the client, the sign-in ends.
      const refreshed = await env.token({ grant_type: 'refresh_token', refresh_token: String(reply.body.refresh_token), client_id: id });
      expect(refreshed.status).toBe(200);
      expect(claimsOf(String(refreshed.body.access_token))).toMatchObject({ client_id: id, scope: 'email' });
      const stolen = await env.token({ grant_type: 'refresh_token', refresh_token: String(refreshed.body.refresh_token) });
      expect([stolen.status, stolen.body.error]).toEqual([401, 'invalid_client']);
    });

    it('refuses a client without the password grant, an unknown one, a scope beyond the client\'s and a confidential one without its secret', async () => {
      // A client that could sign no one in is not registered at all.
      expect((await register({ name: 'Refresh only', type: 'public', grant_types: ['refresh_token'], ...uris })).status).toBe(400);
      const browserOnly = await login({ client_id: publicClient.id });
      expect([browserOnly.status, browserOnly.body.error]).toEqual([400, 'unauthorized_client']);
      const unknown = await login({ client_id: randomUUID() });
      expect([unknown.status, unknown.body.error]).toEqual([401, 'invalid_client']);
      const made = await register({ name: 'Trusted back end', type: 'confidential', grant_types: ['password'], scopes: ['email'], ...uris });
      const record = (made.body as { id: string; client_secret: string }[])[0]!;
      const tooMuch = await login({ client_id: record.id, client_secret: record.client_secret, scope: 'email profile' });
      expect([tooMuch.status, tooMuch.body.error]).toEqual([400, 'invalid_scope']);
      const noSecret = await login({ client_id: record.id });
      expect([noSecret.status, noSecret.body.error]).toEqual([401, 'invalid_client']);
      const wrongSecret = await login({}, { authorization: basic(record.id, 'not-the-secret') });
      expect([wrongSecret.status, wrongSecret.body.error]).toEqual([401, 'invalid_client']);
      // With its secret (HTTP Basic): a token naming it, and no refresh token (it may not refresh).
      const ok = await login({}, { authorization: basic(record.id, record.client_secret) });
      expect(ok.status).toBe(200);
      expect(ok.body.refresh_token).toBeUndefined();
      expect(claimsOf(String(ok.body.access_token)).client_id).toBe(record.id);
    });

    it('attributes a password grant that names no client to the platform\'s first-party client, refreshable without naming it; deleting that client turns such grants off', async () => {
      const reply = await login();
      expect(reply.status).toBe(200);
      expect(claimsOf(String(reply.body.access_token)).client_id).toBe(FIRST_PARTY_CLIENT_ID);
      const refreshed = await env.token({ grant_type: 'refresh_token', refresh_token: String(reply.body.refresh_token) });
      expect(refreshed.status).toBe(200);
      expect(claimsOf(String(refreshed.body.access_token)).client_id).toBe(FIRST_PARTY_CLIENT_ID);
      // It is a client like the others: listed, and an admin's to narrow or delete (last: the rest of this file signs in by password).
      expect((await env.call('GET', `${CLIENTS}/${FIRST_PARTY_CLIENT_ID}`, admin)).body).toMatchObject([{ type: 'public', grant_types: ['password', 'refresh_token'], redirect_uris: [] }]);
      expect((await env.call('DELETE', `${CLIENTS}/${FIRST_PARTY_CLIENT_ID}`, admin)).status).toBe(204);
      // Other replicas remember a client for up to 5 s (SECURITY.md, known gaps).
      expect(await eventually(async () => (await Promise.all([login(), login(), login(), login()])).every((reply) => reply.status === 401))).toBe(true);
      const off = await login();
      expect([off.status, off.body.error]).toEqual([401, 'invalid_client']);
      expect(String(off.body.error_description)).toContain('client_id');
    });
  });
});
