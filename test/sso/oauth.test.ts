import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPair, SignJWT } from 'jose';
import * as client from 'openid-client';
import { FIRST_PARTY_CLIENT_ID } from '@app/sso';
import { eventually, freePort, SETTLE_BUDGET_MS } from '@app/testing';
import { ADMIN_EMAIL, ADMIN_PASSWORD, CASES, claimsOf, startSsoPlatform, type SsoPlatform } from './harness.js';

/** The issuer the platform names (JWT_ISSUER's default): a relying party reaches it through `customFetch`. */
const ISSUER = 'http://localhost:3000';
/**
 * sso publishes a rotated key this long before it signs. Longer than any verifier waits before
 * refetching an unknown kid: JWKS_COOLDOWN_SECONDS (1 here) at the edge, and 5 s at another sso
 * replica (UNKNOWN_KID_RELOAD_MS), which verifies the admin's token at /keys/rotate.
 */
const ACTIVATION_DELAY_SECONDS = 6;
const ROTATE_KEYS_COMMAND = fileURLToPath(new URL('../../services/sso/dist/rotate-keys.js', import.meta.url));

const headerOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as Record<string, unknown>;
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

/** Runs the rotate-keys command with `env` (and nothing of this process's platform variables). */
function runRotateKeys(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  if (!existsSync(ROTATE_KEYS_COMMAND)) throw new Error('build first (npm run build): missing services/sso/dist/rotate-keys.js');
  return new Promise((resolve) => {
    execFile(process.execPath, [ROTATE_KEYS_COMMAND], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: SETTLE_BUDGET_MS }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe.each(CASES)('OAuth 2 metadata, introspection and key rotation at the edge (%s, %s)', (topology, mode) => {
  let env: SsoPlatform;
  let admin: string;
  /** An identity with an API_KEY credential, which an admin made a resource server (role `introspect`): the relying party's client. */
  let user: { id: string; credentialId: string; apiKey: string; refreshToken: string };
  /** An ordinary identity with an API_KEY credential and no role. */
  let plain: { credentialId: string; apiKey: string };

  beforeAll(async () => {
    env = await startSsoPlatform(mode, topology, { JWKS_COOLDOWN_SECONDS: '1', SSO_KEY_ACTIVATION_DELAY_SECONDS: String(ACTIVATION_DELAY_SECONDS) });
    admin = await env.adminToken();
    const email = `client-${randomUUID().slice(0, 8)}@example.com`;
    const created = await env.call('POST', '/api/v1/identity', undefined, { name: 'A Client', email });
    const id = (created.body as { id: string }[])[0]!.id;
    expect((await env.call('PUT', `/api/v1/identity/${id}`, admin, { roles: ['introspect'] })).status).toBe(200);
    expect((await env.call('POST', '/api/v1/credentials', admin, { identity_id: id, provider: 'LOCAL', secret: 'a user password, long enough' })).status).toBe(201);
    // The client chooses its key: 32+ random characters.
    const apiKey = randomBytes(32).toString('base64url');
    const credential = await env.call('POST', '/api/v1/credentials', admin, { identity_id: id, provider: 'API_KEY', secret: apiKey });
    expect(credential.status).toBe(201);
    const signedIn = await env.token({ grant_type: 'password', username: email, password: 'a user password, long enough' });
    user = { id, credentialId: (credential.body as { id: string }[])[0]!.id, apiKey, refreshToken: String(signedIn.body.refresh_token) };
    const plainId = ((await env.call('POST', '/api/v1/identity', undefined, { name: 'Not a resource server', email: `plain-${randomUUID().slice(0, 8)}@example.com` })).body as { id: string }[])[0]!.id;
    const plainKey = randomBytes(32).toString('base64url');
    const plainCredential = await env.call('POST', '/api/v1/credentials', admin, { identity_id: plainId, provider: 'API_KEY', secret: plainKey });
    expect(plainCredential.status).toBe(201);
    plain = { credentialId: (plainCredential.body as { id: string }[])[0]!.id, apiKey: plainKey };
  });
  afterAll(() => env.close());

  /** openid-client as a relying party that believes the issuer's own URLs and reaches them where the platform listens. */
  const discover = (algorithm: 'oidc' | 'oauth2', auth: client.ClientAuth = client.ClientSecretBasic(user.apiKey)) =>
    client.discovery(new URL(ISSUER), user.credentialId, undefined, auth, {
      algorithm,
      execute: [client.allowInsecureRequests],
      [client.customFetch]: (url, options) => fetch(url.replace(ISSUER, env.gateway), options as RequestInit),
    });

  const introspect = async (params: Record<string, string>, headers: Record<string, string>) => {
    const response = await fetch(`${env.gateway}/api/v1/sso/introspect`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(params).toString(),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
  };
  const revoke = (token: string, headers: Record<string, string> = {}) =>
    fetch(`${env.gateway}/api/v1/sso/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({ token }).toString(),
    });
  const asClient = () => ({ authorization: basic(user.credentialId, user.apiKey) });
  const clientToken = async () => String((await env.token({ grant_type: 'client_credentials', client_secret: user.apiKey })).body.access_token);

  describe('metadata', () => {
    it.each(['oidc', 'oauth2'] as const)('lets openid-client discover the platform (%s document) with every endpoint absolute under JWT_ISSUER', async (algorithm) => {
      const metadata = (await discover(algorithm)).serverMetadata();
      expect(metadata.issuer).toBe(ISSUER);
      expect(metadata.token_endpoint).toBe(`${ISSUER}/api/v1/sso/token`);
      expect(metadata.jwks_uri).toBe(`${ISSUER}/api/v1/sso/jwks`);
      expect(metadata.revocation_endpoint).toBe(`${ISSUER}/api/v1/sso/revoke`);
      expect(metadata.introspection_endpoint).toBe(`${ISSUER}/api/v1/sso/introspect`);
      expect(metadata.authorization_endpoint).toBe(`${ISSUER}/api/v1/sso/authorize`);
      expect(metadata.end_session_endpoint).toBe(`${ISSUER}/api/v1/sso/logout`);
      expect(metadata.grant_types_supported).toEqual(['authorization_code', 'password', 'refresh_token', 'client_credentials']);
      // `none`: public clients of the browser sign-in; API keys use one of the other two.
      expect(metadata.token_endpoint_auth_methods_supported).toEqual(['client_secret_basic', 'client_secret_post', 'none']);
      expect(metadata.introspection_endpoint_auth_methods_supported).toEqual(['client_secret_basic', 'client_secret_post']);
      // Only what works: the code flow in the query, PKCE S256, ES256 ID tokens.
      expect(metadata.response_types_supported).toEqual(['code']);
      expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
      expect(metadata.id_token_signing_alg_values_supported).toEqual(['ES256']);
    });

    it('serves both documents alike at the edge without a token, and refuses to be written to', async () => {
      const oidc = await fetch(`${env.gateway}/.well-known/openid-configuration`);
      const oauth = await fetch(`${env.gateway}/.well-known/oauth-authorization-server`);
      expect([oidc.status, oauth.status]).toEqual([200, 200]);
      expect(await oauth.json()).toEqual(await oidc.json());
      expect((await fetch(`${env.gateway}/.well-known/oauth-authorization-server`, { method: 'POST' })).status).toBe(401);
    });

    it.each([
      ['client_secret_basic', () => client.ClientSecretBasic(user.apiKey)],
      ['client_secret_post', () => client.ClientSecretPost(user.apiKey)],
    ])('grants openid-client a token with clientCredentialsGrant (%s) that opens a protected route', async (_method, auth) => {
      const config = await discover('oidc', auth());
      const tokens = await client.clientCredentialsGrant(config);
      expect(tokens.token_type).toBe('bearer');
      expect(tokens.refresh_token).toBeUndefined();
      expect((await env.call('GET', `/api/v1/identity/${user.id}`, tokens.access_token)).status).toBe(200);
      expect((await env.call('GET', `/api/v1/identity/${user.id}`)).status).toBe(401);
    });

    it('refuses openid-client a token for a wrong API key with a 401 and a Basic challenge', async () => {
      const config = await discover('oauth2', client.ClientSecretBasic(`${user.apiKey.slice(0, -4)}AAAA`));
      // openid-client reports a 401 that carries WWW-Authenticate as the challenge, not as the body's error.
      await expect(client.clientCredentialsGrant(config)).rejects.toMatchObject({
        code: 'OAUTH_WWW_AUTHENTICATE_CHALLENGE',
        status: 401,
        cause: [{ scheme: 'basic', parameters: { realm: 'api-platform', charset: 'UTF-8' } }],
      });
    });

    it('issues RFC 9068 access tokens: typ at+jwt and iss, sub, aud, exp, iat, jti, client_id', async () => {
      const token = await clientToken();
      expect(headerOf(token)).toEqual({ alg: 'ES256', kid: expect.any(String), typ: 'at+jwt' });
      expect(claimsOf(token)).toEqual({
        iss: ISSUER,
        sub: user.id,
        aud: 'api-platform',
        iat: expect.any(Number),
        exp: expect.any(Number),
        jti: expect.any(String),
        sid: expect.any(String),
        client_id: user.credentialId,
        roles: ['introspect'],
      });
    });

    it('names a client in a password sign-in\'s token too: the platform\'s first-party one when the request names none', async () => {
      const reply = await env.token({ grant_type: 'password', username: ADMIN_EMAIL, password: ADMIN_PASSWORD });
      expect(reply.status).toBe(200);
      expect(claimsOf(String(reply.body.access_token))).toMatchObject({ client_id: FIRST_PARTY_CLIENT_ID, jti: expect.any(String) });
    });
  });

  describe('introspection (RFC 7662)', () => {
    it('describes an active access token to an API key client (HTTP Basic), and never lets a cache keep the answer', async () => {
      const token = await clientToken();
      const claims = claimsOf(token);
      const reply = await introspect({ token }, asClient());
      expect(reply.status).toBe(200);
      expect(reply.headers.get('cache-control')).toBe('no-store');
      expect(reply.body).toEqual({
        active: true,
        token_type: 'Bearer',
        iss: ISSUER,
        aud: 'api-platform',
        sub: user.id,
        iat: claims.iat,
        exp: claims.exp,
        jti: claims.jti,
        sid: claims.sid,
        client_id: user.credentialId,
        roles: ['introspect'],
      });
    });

    it('answers the same to client_secret in the body, to a bearer token of the resource server, and to openid-client', async () => {
      const token = await clientToken();
      const byBasic = (await introspect({ token }, asClient())).body;
      expect((await introspect({ token, client_secret: user.apiKey, client_id: user.credentialId }, {})).body).toEqual(byBasic);
      expect((await introspect({ token, token_type_hint: 'refresh_token' }, { authorization: `Bearer ${await clientToken()}` })).body).toEqual(byBasic);
      expect(await client.tokenIntrospection(await discover('oauth2'), token)).toMatchObject({ active: true, sub: user.id, client_id: user.credentialId });
    });

    it('describes an active refresh token with what is known of it: subject, sign-in, issue and expiry', async () => {
      const reply = await introspect({ token: user.refreshToken, token_type_hint: 'refresh_token' }, asClient());
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ active: true, iss: ISSUER, sub: user.id, sid: expect.any(String), iat: expect.any(Number), exp: expect.any(Number) });
      expect(Number(reply.body.exp) - Number(reply.body.iat)).toBeGreaterThan(86_400);
    });

    it('answers only { active: false } for a revoked access token, a used or revoked refresh token, an expired, forged or garbage token', async () => {
      const inactive = async (token: string) => {
        const reply = await introspect({ token }, asClient());
        return [reply.status, reply.body];
      };
      const revokedAccess = await clientToken();
      expect((await introspect({ token: revokedAccess }, asClient())).body.active).toBe(true);
      // RFC 7009 §2.1: an API key's token is the key's to revoke; a request naming no client changes nothing.
      expect((await revoke(revokedAccess)).status).toBe(200);
      expect((await introspect({ token: revokedAccess }, asClient())).body.active).toBe(true);
      expect((await revoke(revokedAccess, asClient())).status).toBe(200);
      // With real servers the revocation reaches this process's set through the outbox and NATS: within 1 s (DESIGN).
      expect(await eventually(async () => (await introspect({ token: revokedAccess }, asClient())).body.active === false)).toBe(true);
      expect(await inactive(revokedAccess)).toEqual([200, { active: false }]);

      const email = `spent-${randomUUID().slice(0, 8)}@example.com`;
      const id = ((await env.call('POST', '/api/v1/identity', undefined, { name: 'Spent', email })).body as { id: string }[])[0]!.id;
      await env.call('POST', '/api/v1/credentials', admin, { identity_id: id, provider: 'LOCAL', secret: 'a user password, long enough' });
      const first = await env.token({ grant_type: 'password', username: email, password: 'a user password, long enough' });
      const used = String(first.body.refresh_token);
      const second = await env.token({ grant_type: 'refresh_token', refresh_token: used });
      expect(await inactive(used)).toEqual([200, { active: false }]);
      const live = String(second.body.refresh_token);
      expect((await introspect({ token: live }, asClient())).body.active).toBe(true);
      expect((await revoke(live)).status).toBe(200);
      expect(await inactive(live)).toEqual([200, { active: false }]);
      // The sign-in's access token went with it.
      expect(await eventually(async () => (await introspect({ token: String(second.body.access_token) }, asClient())).body.active === false)).toBe(true);
      expect(await inactive(String(second.body.access_token))).toEqual([200, { active: false }]);

      // Signed with sso's own current key, but expired a minute ago: no tolerance for introspection.
      const { kid, key } = await env.keys().signingKey();
      const now = Math.floor(Date.now() / 1000);
      const claims = { sub: user.id, sid: randomUUID(), roles: [] };
      const expired = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .setIssuer(ISSUER)
        .setAudience('api-platform')
        .setIssuedAt(now - 960)
        .setExpirationTime(now - 60)
        .setJti(randomUUID())
        .sign(key);
      expect(await inactive(expired)).toEqual([200, { active: false }]);
      const forger = await generateKeyPair('ES256');
      const forged = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .setIssuer(ISSUER)
        .setAudience('api-platform')
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .setJti(randomUUID())
        .sign(forger.privateKey);
      expect(await inactive(forged)).toEqual([200, { active: false }]);
      for (const garbage of ['never issued', 'a.b.c', 'x'.repeat(9_000)]) expect(await inactive(garbage)).toEqual([200, { active: false }]);
    });

    it('answers 403 insufficient_scope to an authenticated caller whose identity lacks the introspect role, an admin included, and says nothing of the token', async () => {
      const plainToken = String((await env.token({ grant_type: 'client_credentials', client_secret: plain.apiKey })).body.access_token);
      const refused = {
        error: 'insufficient_scope',
        error_description: 'The caller is authenticated but its identity does not hold the introspect role; an admin grants it to resource servers.',
      };
      const callers: Record<string, string>[] = [
        { authorization: basic(plain.credentialId, plain.apiKey) },
        { authorization: `Bearer ${plainToken}` },
        { authorization: `Bearer ${admin}` },
      ];
      // The admin's own token, a live one and garbage: one answer, so nothing is learnt of any of them.
      for (const token of [admin, await clientToken(), 'never issued']) {
        for (const headers of callers) {
          const reply = await introspect({ token }, headers);
          expect([reply.status, reply.body]).toEqual([403, refused]);
        }
        expect(await introspect({ token, client_secret: plain.apiKey }, {})).toMatchObject({ status: 403, body: refused });
      }
    });

    it('answers 401 invalid_client to callers that do not authenticate, whatever the token', async () => {
      const token = await clientToken();
      const refused = { error: 'invalid_client', error_description: 'Client authentication failed.' };
      const callers: Record<string, string>[] = [
        {},
        { authorization: basic(user.credentialId, `${user.apiKey.slice(0, -4)}AAAA`) },
        { authorization: basic(randomUUID(), user.apiKey) },
        { authorization: 'Basic !!!' },
        { authorization: `Bearer ${token.slice(0, -4)}AAAA` },
      ];
      for (const headers of callers) {
        const reply = await introspect({ token }, headers);
        expect([reply.status, reply.body]).toEqual([401, refused]);
        expect(reply.headers.get('www-authenticate')).toBe('Basic realm="api-platform", charset="UTF-8"');
      }
      expect((await introspect({ token, client_secret: 'not a key of anyone, long enough to be one' }, {})).status).toBe(401);
    });

    it('answers 400 invalid_request for a missing token, two client authentications, and 413 past 16 KiB', async () => {
      expect(await introspect({}, asClient())).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: 'Missing or invalid parameter: token.' } });
      expect(await introspect({ token: 'x', client_secret: user.apiKey }, asClient())).toMatchObject({
        status: 400,
        body: { error: 'invalid_request', error_description: 'Authenticate the client with HTTP Basic or with client_secret in the body, not both.' },
      });
      const tooLarge = await introspect({ token: 'x'.repeat(17_000) }, asClient());
      expect([tooLarge.status, tooLarge.body.error]).toEqual([413, 'invalid_request']);
    });
  });

  describe('key rotation on the running platform', () => {
    const rotate = (token?: string) =>
      fetch(`${env.gateway}/api/v1/sso/keys/rotate`, { method: 'POST', headers: token ? { authorization: `Bearer ${token}` } : {} });

    it('answers 401 to an anonymous caller and 403 to a token that is not an admin\'s, and rotates nothing', async () => {
      const before = (await (await fetch(`${env.gateway}/api/v1/sso/jwks`)).json()) as { keys: unknown[] };
      expect((await rotate()).status).toBe(401);
      expect((await rotate(`${admin.slice(0, -4)}AAAA`)).status).toBe(401);
      const forbidden = await rotate(await clientToken());
      expect(forbidden.status).toBe(403);
      expect(await forbidden.json()).toMatchObject({ status: 403, title: expect.any(String) });
      expect(((await (await fetch(`${env.gateway}/api/v1/sso/jwks`)).json()) as { keys: unknown[] }).keys).toEqual(before.keys);
    });

    it('rotates for an admin: the new kid is published at once and signs after the activation delay, while tokens issued before keep working', async () => {
      const old = await clientToken();
      const oldKid = headerOf(old).kid;
      const started = Date.now();
      const reply = await rotate(admin);
      const answered = Date.now();
      expect(reply.status).toBe(201);
      const body = (await reply.json()) as { kid: string; activatesAt: string };
      expect(Object.keys(body).sort()).toEqual(['activatesAt', 'kid']);
      expect(body.kid).not.toBe(oldKid);
      const activatesAt = Date.parse(body.activatesAt);
      expect(activatesAt - started).toBeGreaterThanOrEqual(ACTIVATION_DELAY_SECONDS * 1000 - 1_000);
      // The delay counts from the rotation, made while the request was in flight, however long it took.
      expect(activatesAt - answered).toBeLessThanOrEqual(ACTIVATION_DELAY_SECONDS * 1000 + 1_000);
      const jwks = (await (await fetch(`${env.gateway}/api/v1/sso/jwks`)).json()) as { keys: { kid: string }[] };
      expect(jwks.keys.map((key) => key.kid)).toEqual(expect.arrayContaining([oldKid, body.kid]));

      // Until the new key signs (another replica may sign with the old one up to SIGNING_KEY_REFRESH_MS longer), every token is accepted.
      let newToken: string | undefined;
      const deadline = activatesAt + SETTLE_BUDGET_MS;
      while (Date.now() < deadline) {
        const token = await clientToken();
        if (headerOf(token).kid === body.kid) {
          expect(Date.now()).toBeGreaterThanOrEqual(activatesAt - 1_000);
          newToken = token;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(newToken).toBeDefined();
      expect((await env.call('GET', `/api/v1/identity/${user.id}`, newToken)).status).toBe(200);
      expect((await env.call('GET', `/api/v1/identity/${user.id}`, old)).status).toBe(200);
      expect((await introspect({ token: old }, asClient())).body.active).toBe(true);
    });

    it('lets `npm run rotate-keys` rotate the running platform\'s key as an admin (email and password, or a token)', async () => {
      const byPassword = await runRotateKeys({ PLATFORM_URL: env.gateway, ADMIN_EMAIL, ADMIN_PASSWORD });
      expect(byPassword.stderr).toBe('');
      expect(byPassword.code).toBe(0);
      const kid = /new signing key (\S+) is published now and signs from (\S+)/.exec(byPassword.stdout)?.[1];
      expect(kid).toBeDefined();
      const jwks = (await (await fetch(`${env.gateway}/api/v1/sso/jwks`)).json()) as { keys: { kid: string }[] };
      expect(jwks.keys.map((key) => key.kid)).toContain(kid);

      const byToken = await runRotateKeys({ PLATFORM_URL: env.gateway, ADMIN_TOKEN: await env.adminToken() });
      expect([byToken.code, byToken.stderr]).toEqual([0, '']);
    });

    it('makes `npm run rotate-keys` fail loudly when no platform answers, the credentials are wrong or not an admin\'s, or none are given', async () => {
      const nobody = `http://127.0.0.1:${await freePort()}`;
      const absent = await runRotateKeys({ PLATFORM_URL: nobody, ADMIN_TOKEN: admin });
      expect(absent.code).toBe(1);
      expect(absent.stderr).toContain(`rotate-keys: no platform answers at ${nobody}`);

      const wrong = await runRotateKeys({ PLATFORM_URL: env.gateway, ADMIN_EMAIL, ADMIN_PASSWORD: 'not the password' });
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain(`rotate-keys: signing in as ${ADMIN_EMAIL} failed (400)`);

      const notAdmin = await runRotateKeys({ PLATFORM_URL: env.gateway, ADMIN_TOKEN: await clientToken() });
      expect(notAdmin.code).toBe(1);
      expect(notAdmin.stderr).toContain('rotate-keys: the platform refused to rotate the key (403)');

      const none = await runRotateKeys({ PLATFORM_URL: env.gateway });
      expect(none.code).toBe(2);
      expect(none.stderr).toContain("set ADMIN_TOKEN, or ADMIN_EMAIL and ADMIN_PASSWORD, to an admin's credentials");
    });
  });
});
