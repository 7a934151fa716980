import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { testModes } from '@app/testing';
import { FIRST_PARTY_CLIENT_ID } from '../src/clients/first-party.js';
import { PASSWORD, startSso, verifyIndependently, type SsoUnderTest } from './support.js';

describe.each(testModes())('token endpoint (%s)', (mode) => {
  let sso: SsoUnderTest;
  let userId: string;
  let adminId: string;
  beforeAll(async () => {
    sso = await startSso(mode);
    userId = sso.double.addIdentity({ email: 'ada@example.com', password: PASSWORD }).id;
    adminId = sso.double.addIdentity({ email: 'root@example.com', password: PASSWORD, roles: ['admin'] }).id;
  });
  afterAll(() => sso.close());

  const jwks = async () => (await (await fetch(`${sso.url}/api/v1/sso/jwks`)).json()) as { keys: Record<string, unknown>[] };

  describe('password grant', () => {
    it('issues an ES256 access token with every required claim, and a refresh token', async () => {
      const response = await sso.token({ grant_type: 'password', username: 'ada@example.com', password: PASSWORD });
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('pragma')).toBe('no-cache');
      expect(Object.keys(response.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'token_type']);
      expect(response.body).toMatchObject({ token_type: 'Bearer', expires_in: 900 });
      const keys = await jwks();
      const header = JSON.parse(Buffer.from(String(response.body.access_token).split('.')[0]!, 'base64url').toString()) as Record<string, unknown>;
      expect(header).toEqual({ alg: 'ES256', kid: keys.keys[0]!.kid, typ: 'at+jwt' });
      const claims = verifyIndependently(String(response.body.access_token), keys);
      expect(claims).toEqual({
        iss: 'http://localhost:3000',
        aud: 'api-platform',
        sub: userId,
        iat: expect.any(Number),
        exp: (claims.iat as number) + 900,
        jti: expect.any(String),
        sid: expect.stringMatching(/^[0-9a-f-]{36}$/),
        // RFC 9068: the client it was issued to, the first-party one when the request names none.
        client_id: FIRST_PARTY_CLIENT_ID,
        roles: [],
      });
    });

    it('keeps the sign-in (sid) across refreshes, and gives each sign-in its own', async () => {
      const signIn = () => sso.token({ grant_type: 'password', username: 'ada@example.com', password: PASSWORD });
      const keys = await jwks();
      const first = (await signIn()).body;
      const refreshed = (await sso.token({ grant_type: 'refresh_token', refresh_token: String(first.refresh_token) })).body;
      const other = (await signIn()).body;
      const sid = verifyIndependently(String(first.access_token), keys).sid;
      expect(verifyIndependently(String(refreshed.access_token), keys).sid).toBe(sid);
      expect(verifyIndependently(String(other.access_token), keys).sid).not.toBe(sid);
    });

    it('accepts a JSON body too, and carries the identity roles', async () => {
      const response = await fetch(`${sso.url}/api/v1/sso/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'password', username: 'ROOT@example.com', password: PASSWORD }),
      });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { access_token: string };
      expect(verifyIndependently(body.access_token, await jwks())).toMatchObject({ sub: adminId, roles: ['admin'] });
    });

    it('answers a wrong password and an unknown user alike: 400 invalid_grant, same body', async () => {
      const wrong = await sso.token({ grant_type: 'password', username: 'ada@example.com', password: 'not it' });
      const unknown = await sso.token({ grant_type: 'password', username: 'nobody@example.com', password: 'not it' });
      expect(wrong.status).toBe(400);
      expect(unknown.status).toBe(400);
      expect(wrong.body).toEqual({ error: 'invalid_grant', error_description: 'The username or password is incorrect.' });
      expect(unknown.body).toEqual(wrong.body);
      expect(wrong.headers.get('cache-control')).toBe('no-store');
    });

    it('reads identity once, by email, then checks the password by identity id; an unknown email still costs one check', async () => {
      const callsOf = async (username: string, password: string) => {
        const from = sso.double.requests.length;
        await sso.token({ grant_type: 'password', username, password });
        return sso.double.requests.slice(from);
      };
      expect(await callsOf('ADA@example.com', PASSWORD)).toEqual([
        { path: '/internal/v1/identities/lookup', body: { email: 'ADA@example.com' } },
        { path: '/internal/v1/credentials/verify-password', body: { identityId: userId, password: PASSWORD } },
      ]);
      // No identity has the nil UUID: credentials verifies its dummy hash, in the time a real check takes.
      expect(await callsOf('nobody@example.com', 'not it')).toEqual([
        { path: '/internal/v1/identities/lookup', body: { email: 'nobody@example.com' } },
        { path: '/internal/v1/credentials/verify-password', body: { identityId: '00000000-0000-0000-0000-000000000000', password: 'not it' } },
      ]);
    });

    it('refuses a deactivated identity with the same invalid_grant', async () => {
      const { id } = sso.double.addIdentity({ email: 'gone@example.com', password: PASSWORD, activated: false });
      const response = await sso.token({ grant_type: 'password', username: 'gone@example.com', password: PASSWORD });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_grant', error_description: 'The username or password is incorrect.' });
      expect(id).toBeDefined();
    });
  });

  describe('request errors (RFC 6749 §5.2)', () => {
    it.each([
      [{ grant_type: 'password', username: 'ada@example.com' }, 'Missing or invalid parameter: password.'],
      [{ grant_type: 'refresh_token' }, 'Missing or invalid parameter: refresh_token.'],
      [{ username: 'ada@example.com' }, 'Missing or invalid parameter: grant_type.'],
    ])('answers %j with invalid_request', async (params, description) => {
      const response = await sso.token(params as Record<string, string>);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_request', error_description: description });
    });

    it('answers an unknown grant type with unsupported_grant_type', async () => {
      const response = await sso.token({ grant_type: 'implicit', code: 'x' });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error: 'unsupported_grant_type',
        error_description: 'grant_type must be one of: authorization_code, password, refresh_token, client_credentials.',
      });
    });

    it('refuses a repeated parameter', async () => {
      const response = await fetch(`${sso.url}/api/v1/sso/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=password&username=a%40b.c&username=ada%40example.com&password=x',
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: 'invalid_request', error_description: 'Parameter username is repeated; send each parameter once.' });
    });

    it.each([
      ['application/json', '{not json'],
      ['application/json', '[1,2]'],
      ['text/plain', 'grant_type=password'],
    ])('answers a %s body %j with invalid_request', async (type, body) => {
      const response = await fetch(`${sso.url}/api/v1/sso/token`, { method: 'POST', headers: { 'content-type': type }, body });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toBe('invalid_request');
    });
  });

  describe('refresh_token grant', () => {
    const signIn = async () => (await sso.token({ grant_type: 'password', username: 'ada@example.com', password: PASSWORD })).body;

    it('rotates: a refresh gives a new pair, and the old refresh token no longer works', async () => {
      const first = await signIn();
      const second = await sso.token({ grant_type: 'refresh_token', refresh_token: String(first.refresh_token) });
      expect(second.status).toBe(200);
      expect(second.headers.get('cache-control')).toBe('no-store');
      expect(second.body.refresh_token).not.toBe(first.refresh_token);
      expect(verifyIndependently(String(second.body.access_token), await jwks())).toMatchObject({ sub: userId });
      const third = await sso.token({ grant_type: 'refresh_token', refresh_token: String(second.body.refresh_token) });
      expect(third.status).toBe(200);
    });

    it('revokes the whole family when a used refresh token comes back', async () => {
      const first = await signIn();
      const second = (await sso.token({ grant_type: 'refresh_token', refresh_token: String(first.refresh_token) })).body;
      const replay = await sso.token({ grant_type: 'refresh_token', refresh_token: String(first.refresh_token) });
      expect(replay.status).toBe(400);
      expect(replay.body).toEqual({ error: 'invalid_grant', error_description: 'The refresh token is invalid, expired, revoked or already used.' });
      const descendant = await sso.token({ grant_type: 'refresh_token', refresh_token: String(second.refresh_token) });
      expect(descendant.status).toBe(400);
      expect(descendant.body.error).toBe('invalid_grant');
    });

    it('lets exactly one of two concurrent refreshes of one token win', async () => {
      const { refresh_token } = await signIn();
      const attempts = await Promise.all(
        Array.from({ length: 2 }, () => sso.token({ grant_type: 'refresh_token', refresh_token: String(refresh_token) })),
      );
      expect(attempts.map((attempt) => attempt.status).sort()).toEqual([200, 400]);
    });

    it('lets exactly one of ten concurrent refreshes of one token win', async () => {
      const { refresh_token } = await signIn();
      const attempts = await Promise.all(
        Array.from({ length: 10 }, () => sso.token({ grant_type: 'refresh_token', refresh_token: String(refresh_token) })),
      );
      expect(attempts.filter((attempt) => attempt.status === 200)).toHaveLength(1);
    });

    it('refuses an unknown refresh token', async () => {
      const response = await sso.token({ grant_type: 'refresh_token', refresh_token: 'x'.repeat(43) });
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('invalid_grant');
    });

    it('ends the family when the identity was deactivated', async () => {
      const { id } = sso.double.addIdentity({ email: 'leaving@example.com', password: PASSWORD });
      const first = (await sso.token({ grant_type: 'password', username: 'leaving@example.com', password: PASSWORD })).body;
      sso.double.setActivated(id, false);
      const refused = await sso.token({ grant_type: 'refresh_token', refresh_token: String(first.refresh_token) });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_grant');
    });
  });

  describe('client_credentials grant', () => {
    it('turns an API key sent as client_secret into a token with exactly its identity\'s roles and its client_id, without a refresh token', async () => {
      const { apiKey, credentialId } = sso.double.addApiKey(userId);
      const response = await sso.token({ grant_type: 'client_credentials', client_secret: apiKey });
      expect(response.status).toBe(200);
      expect(Object.keys(response.body).sort()).toEqual(['access_token', 'expires_in', 'token_type']);
      const claims = verifyIndependently(String(response.body.access_token), await jwks());
      expect(claims).toMatchObject({ sub: userId, roles: [], client_id: credentialId, sid: expect.any(String) });
    });

    it('never adds a role: an admin\'s API key carries admin, and no ambient system role', async () => {
      const { apiKey } = sso.double.addApiKey(adminId);
      const response = await sso.token({ grant_type: 'client_credentials', client_secret: apiKey });
      expect(verifyIndependently(String(response.body.access_token), await jwks()).roles).toEqual(['admin']);
    });

    it('accepts HTTP Basic with the credential id as client_id (RFC 6749 §2.3.1)', async () => {
      const { apiKey, credentialId } = sso.double.addApiKey(userId);
      const basic = Buffer.from(`${encodeURIComponent(credentialId)}:${encodeURIComponent(apiKey)}`).toString('base64');
      const response = await sso.token({ grant_type: 'client_credentials' }, { authorization: `Basic ${basic}` });
      expect(response.status).toBe(200);
      expect(response.body.token_type).toBe('Bearer');
    });

    it('answers a wrong key with 401 invalid_client and a Basic challenge', async () => {
      const response = await sso.token({ grant_type: 'client_credentials', client_secret: 'ak_wrong' });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Basic realm="api-platform", charset="UTF-8"');
      expect(response.body).toEqual({ error: 'invalid_client', error_description: 'Client authentication failed.' });
    });

    it('answers a key that belongs to another client_id with invalid_client', async () => {
      const { apiKey } = sso.double.addApiKey(userId);
      const response = await sso.token({ grant_type: 'client_credentials', client_id: adminId, client_secret: apiKey });
      expect(response.status).toBe(401);
      expect(response.body.error).toBe('invalid_client');
    });

    it('answers no client authentication with invalid_client', async () => {
      const response = await sso.token({ grant_type: 'client_credentials' });
      expect(response.status).toBe(401);
      expect(response.body.error).toBe('invalid_client');
    });

    it('refuses two authentication methods at once', async () => {
      const { apiKey } = sso.double.addApiKey(userId);
      const basic = Buffer.from(`x:${apiKey}`).toString('base64');
      const response = await sso.token({ grant_type: 'client_credentials', client_secret: apiKey }, { authorization: `Basic ${basic}` });
      expect(response.status).toBe(400);
      expect(response.body.error).toBe('invalid_request');
    });
  });

  describe('revocation (RFC 7009)', () => {
    it('revokes a refresh token, and answers 200 for an unknown one', async () => {
      const { refresh_token } = (await sso.token({ grant_type: 'password', username: 'ada@example.com', password: PASSWORD })).body;
      const revoke = (token: string) =>
        fetch(`${sso.url}/api/v1/sso/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }) });
      expect((await revoke(String(refresh_token))).status).toBe(200);
      expect((await revoke('never-issued')).status).toBe(200);
      const refused = await sso.token({ grant_type: 'refresh_token', refresh_token: String(refresh_token) });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_grant');
    });

    it('answers a request without a token with invalid_request', async () => {
      const response = await fetch(`${sso.url}/api/v1/sso/revoke`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: 'invalid_request', error_description: 'Missing or invalid parameter: token.' });
    });
  });
});
