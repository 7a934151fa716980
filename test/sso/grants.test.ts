import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually, SETTLE_BUDGET_MS, verifyIndependently } from '@app/testing';
import { ADMIN_EMAIL, claimsOf, startSsoPlatform, CASES, type SsoPlatform } from './harness.js';

const PASSWORD = 'a user password, long enough';

const cases = CASES;

describe.each(cases)('sso through the gateway, with the real identity and credentials (%s, %s)', (topology, mode) => {
  let env: SsoPlatform;
  let admin: string;
  let jwks: { keys: Record<string, unknown>[] };

  beforeAll(async () => {
    env = await startSsoPlatform(mode, topology);
    admin = await env.adminToken();
    jwks = (await (await fetch(`${env.gateway}/api/v1/sso/jwks`)).json()) as typeof jwks;
  });
  afterAll(() => env.close());

  /** Registers an identity (public route) and gives it a LOCAL password (admin). */
  const newUser = async (password = PASSWORD) => {
    const email = `user-${randomUUID().slice(0, 8)}@example.com`;
    const created = await env.call('POST', '/api/v1/identity', undefined, { name: 'A User', email });
    expect(created.status).toBe(201);
    const id = (created.body as { id: string }[])[0]!.id;
    const credential = await env.call('POST', '/api/v1/credentials', admin, { identity_id: id, provider: 'LOCAL', secret: password });
    expect(credential.status).toBe(201);
    return { id, email, credentialId: (credential.body as { id: string }[])[0]!.id };
  };
  const signIn = (username: string, password = PASSWORD) => env.token({ grant_type: 'password', username, password });
  const refresh = (refreshToken: unknown) => env.token({ grant_type: 'refresh_token', refresh_token: String(refreshToken) });

  it('created the bootstrap admin, whose token carries the admin role', () => {
    expect(verifyIndependently(admin, jwks)).toMatchObject({ roles: ['admin'], iss: 'http://localhost:3000', aud: 'api-platform' });
  });

  it('signs a user in with the password grant; the token opens that user\'s own identity and verifies with node:crypto', async () => {
    const user = await newUser();
    const reply = await signIn(user.email);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('cache-control')).toBe('no-store');
    expect(reply.body).toMatchObject({ token_type: 'Bearer', expires_in: 900, refresh_token: expect.any(String) });
    const claims = verifyIndependently(String(reply.body.access_token), jwks);
    expect(claims).toMatchObject({ sub: user.id, roles: [], exp: (claims.iat as number) + 900, jti: expect.any(String) });
    expect((await env.call('GET', `/api/v1/identity/${user.id}`, String(reply.body.access_token))).status).toBe(200);
    expect((await env.call('GET', `/api/v1/identity/${claimsOf(admin).sub}`, String(reply.body.access_token))).status).toBe(403);
  });

  it('answers a wrong password and an unknown user with the same 400 invalid_grant', async () => {
    const user = await newUser();
    const wrong = await signIn(user.email, 'not the password at all');
    const unknown = await signIn(`nobody-${randomUUID().slice(0, 8)}@example.com`, 'not the password at all');
    expect([wrong.status, unknown.status]).toEqual([400, 400]);
    expect(wrong.body).toEqual({ error: 'invalid_grant', error_description: 'The username or password is incorrect.' });
    expect(unknown.body).toEqual(wrong.body);
  });

  it('rotates refresh tokens, lets one of two concurrent refreshes win, and revokes the family on reuse', async () => {
    const user = await newUser();
    const first = (await signIn(user.email)).body;
    const second = await refresh(first.refresh_token);
    expect(second.status).toBe(200);
    expect(verifyIndependently(String(second.body.access_token), jwks)).toMatchObject({ sub: user.id });

    const race = await Promise.all([refresh(second.body.refresh_token), refresh(second.body.refresh_token)]);
    expect(race.map((reply) => reply.status).sort()).toEqual([200, 400]);

    const other = (await signIn(user.email)).body;
    const next = (await refresh(other.refresh_token)).body;
    expect((await refresh(other.refresh_token)).body).toEqual({
      error: 'invalid_grant',
      error_description: 'The refresh token is invalid, expired, revoked or already used.',
    });
    expect((await refresh(next.refresh_token)).status).toBe(400);
  });

  it('issues a token with exactly the identity\'s roles and the credential as client_id for an API key (client_secret or HTTP Basic), without a refresh token', async () => {
    const user = await newUser();
    // The client chooses the key (32+ random characters) and sends exactly it as client_secret.
    const apiKey = randomBytes(32).toString('base64url');
    const created = await env.call('POST', '/api/v1/credentials', admin, { identity_id: user.id, provider: 'API_KEY', secret: apiKey });
    expect(created.status).toBe(201);
    const { id } = (created.body as { id: string }[])[0]!;
    expect(JSON.stringify(created.body)).not.toContain(apiKey);
    const byBody = await env.token({ grant_type: 'client_credentials', client_secret: apiKey });
    expect(byBody.status).toBe(200);
    expect(byBody.body.refresh_token).toBeUndefined();
    const claims = verifyIndependently(String(byBody.body.access_token), jwks);
    expect(claims).toMatchObject({ sub: user.id, roles: [], client_id: id, sid: expect.any(String) });
    // An ordinary identity's key opens what the identity may, and nothing an admin may.
    expect((await env.call('GET', `/api/v1/identity/${user.id}`, String(byBody.body.access_token))).status).toBe(200);
    expect((await env.call('GET', `/api/v1/identity/${claimsOf(admin).sub}`, String(byBody.body.access_token))).status).toBe(403);
    expect((await env.call('PUT', `/api/v1/identity/${user.id}`, String(byBody.body.access_token), { roles: ['admin'] })).status).toBe(403);
    const basic = Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(apiKey)}`).toString('base64');
    expect((await env.token({ grant_type: 'client_credentials' }, { authorization: `Basic ${basic}` })).status).toBe(200);
    const wrong = await env.token({ grant_type: 'client_credentials', client_secret: `${apiKey.slice(0, -4)}AAAA` });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
  });

  it('ends refresh tokens when the password changes and when a credential is revoked (events)', async () => {
    const user = await newUser();
    const before = (await signIn(user.email)).body;
    expect((await env.call('PUT', `/api/v1/credentials/${user.credentialId}`, admin, { secret: 'a brand new password' })).status).toBe(200);
    expect(await eventually(async () => (await refresh(before.refresh_token)).status === 400)).toBe(true);

    const again = (await signIn(user.email, 'a brand new password')).body;
    expect((await env.call('DELETE', `/api/v1/credentials/${user.credentialId}`, admin)).status).toBe(204);
    expect(await eventually(async () => (await refresh(again.refresh_token)).status === 400)).toBe(true);
  });

  it('revokes a refresh token (RFC 7009), answering 200 for unknown tokens too', async () => {
    const user = await newUser();
    const { refresh_token } = (await signIn(user.email)).body;
    const revoke = (token: string) =>
      fetch(`${env.gateway}/api/v1/sso/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }) });
    expect((await revoke(String(refresh_token))).status).toBe(200);
    expect((await revoke('never issued')).status).toBe(200);
    expect((await refresh(refresh_token)).status).toBe(400);
  });

  it('serves discovery and the JWKS through the gateway without a token', async () => {
    const discovery = await fetch(`${env.gateway}/.well-known/openid-configuration`);
    expect(discovery.status).toBe(200);
    expect(await discovery.json()).toMatchObject({
      issuer: 'http://localhost:3000',
      jwks_uri: 'http://localhost:3000/api/v1/sso/jwks',
      token_endpoint: 'http://localhost:3000/api/v1/sso/token',
      revocation_endpoint: 'http://localhost:3000/api/v1/sso/revoke',
      introspection_endpoint: 'http://localhost:3000/api/v1/sso/introspect',
      grant_types_supported: ['authorization_code', 'password', 'refresh_token', 'client_credentials'],
    });
    const metadata = await fetch(`${env.gateway}/.well-known/oauth-authorization-server`);
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({ issuer: 'http://localhost:3000', jwks_uri: 'http://localhost:3000/api/v1/sso/jwks' });
    const keys = await fetch(`${env.gateway}/api/v1/sso/jwks`);
    expect(keys.headers.get('cache-control')).toBe('public, max-age=300');
    const body = (await keys.json()) as { keys: Record<string, unknown>[] };
    for (const key of body.keys) expect(Object.keys(key).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
  });

  it('never routes internal routes, even with a system token', async () => {
    const user = await newUser();
    const apiKey = randomBytes(32).toString('base64url');
    expect((await env.call('POST', '/api/v1/credentials', admin, { identity_id: user.id, provider: 'API_KEY', secret: apiKey })).status).toBe(201);
    const system = String((await env.token({ grant_type: 'client_credentials', client_secret: apiKey })).body.access_token);
    for (const path of ['/internal/v1/credentials/verify-password', '/internal/v1/identities/lookup']) {
      const reply = await env.call('POST', path, system, { email: ADMIN_EMAIL, password: 'x' });
      expect(reply.status).toBe(404);
    }
  });
});

describe.each(cases)('signing-key rotation across the platform (%s, %s)', (topology, mode) => {
  let env: SsoPlatform;
  beforeAll(async () => {
    // sso rotates on its own schedule, as in production, every 6 s (checked every 1.5 s); verifiers
    // refetch an unknown kid after 1 s; sso publishes a new key 2 s before signing with it.
    env = await startSsoPlatform(mode, topology, {
      JWKS_COOLDOWN_SECONDS: '1',
      SSO_KEY_ACTIVATION_DELAY_SECONDS: '2',
      SSO_KEY_ROTATION_INTERVAL_SECONDS: '6',
    });
  });
  afterAll(() => env.close());

  it('rejects no valid token: old tokens keep working, new ones work at once everywhere', async () => {
    const kidOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { kid: string }).kid;
    const before = await env.adminToken();
    const id = String(claimsOf(before).sub);
    // Each verifier: the edge, and in split mode identity's and credentials' own.
    const where = () => [
      `${env.gateway}/api/v1/identity/${id}`,
      `${env.gateway}/api/v1/credentials`,
      ...(topology !== 'all-in-one' ? [`${env.direct('identity')}/api/v1/identity/${id}`, `${env.direct('credentials')}/api/v1/credentials`] : []),
    ];
    const statuses = async (token: string) => Promise.all(where().map(async (url) => (await fetch(url, { headers: { authorization: `Bearer ${token}` } })).status));
    expect(new Set(await statuses(before))).toEqual(new Set([200]));

    // Sign and verify continuously across the switch to the rotated key, and 1.5 s past it: not one refusal.
    const seen: number[] = [];
    const kids = new Set<string>();
    const deadline = Date.now() + SETTLE_BUDGET_MS;
    let switchedAt: number | undefined;
    while (Date.now() < (switchedAt === undefined ? deadline : switchedAt + 1_500)) {
      const token = await env.adminToken();
      kids.add(kidOf(token));
      if (kidOf(token) !== kidOf(before)) switchedAt ??= Date.now();
      seen.push(...(await statuses(token)), ...(await statuses(before)));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(switchedAt).toBeDefined();
    expect(kids.size).toBe(2);
    expect(new Set(seen)).toEqual(new Set([200]));
  });
});
