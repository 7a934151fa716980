// RFC 7009 §2.1: a token is revoked only for the client it was issued to, which authenticates
// first (a confidential one with its secret, a public one by its id); credentials that fail
// are 401 invalid_client (§2.2.1), and any other client's request is 200 and changes nothing
// (§2.2). Raw HTTP through the edge, every topology and mode.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startSsoPlatform, CASES, type SsoPlatform } from './harness.js';

const PASSWORD = 'a user password, long enough';
const CLIENTS = '/api/v1/sso/clients';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

interface Client {
  id: string;
  secret?: string;
}

describe.each(CASES)('revocation asks who is revoking (RFC 7009 §2.1; %s, %s)', (topology, mode) => {
  let env: SsoPlatform;
  let admin: string;
  let email: string;
  let userId: string;
  let owner: Client;
  let other: Client;
  let publicClient: Client;

  const register = async (type: 'public' | 'confidential'): Promise<Client> => {
    const made = await env.call('POST', CLIENTS, admin, {
      name: `Revoking ${type} app`,
      type,
      grant_types: ['password', 'refresh_token'],
      redirect_uris: ['https://app.example.com/callback'],
    });
    expect(made.status).toBe(201);
    const record = (made.body as { id: string; client_secret?: string }[])[0]!;
    return { id: record.id, ...(record.client_secret && { secret: record.client_secret }) };
  };

  beforeAll(async () => {
    env = await startSsoPlatform(mode, topology);
    admin = await env.adminToken();
    email = `revoker-${randomUUID().slice(0, 8)}@example.com`;
    const created = await env.call('POST', '/api/v1/identity', undefined, { name: 'A User', email });
    const id = (userId = (created.body as { id: string }[])[0]!.id);
    expect((await env.call('POST', '/api/v1/credentials', admin, { identity_id: id, provider: 'LOCAL', secret: PASSWORD })).status).toBe(201);
    [owner, other, publicClient] = [await register('confidential'), await register('confidential'), await register('public')];
  });
  afterAll(() => env.close());

  /** A password sign-in by `client` (its secret in the body when it has one): access and refresh token. */
  const signInWith = async (client: Client | undefined) => {
    const reply = await env.token({
      grant_type: 'password',
      username: email,
      password: PASSWORD,
      ...(client && { client_id: client.id, ...(client.secret && { client_secret: client.secret }) }),
    });
    expect(reply.status).toBe(200);
    return { access: String(reply.body.access_token), refresh: String(reply.body.refresh_token) };
  };
  const revoke = async (params: Record<string, string>, headers: Record<string, string> = {}) => {
    const response = await fetch(`${env.gateway}/api/v1/sso/revoke`, { method: 'POST', headers: { ...FORM, ...headers }, body: new URLSearchParams(params) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  /** Whether the refresh token still works (each check rotates: the next one is returned). */
  const stillWorks = async (client: Client | undefined, refreshToken: string) => {
    const reply = await env.token({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      ...(client && { client_id: client.id, ...(client.secret && { client_secret: client.secret }) }),
    });
    return reply.status === 200 ? String(reply.body.refresh_token) : undefined;
  };

  it('RFC 7009 §2.1: a confidential client\'s token is revoked by that client with its secret, in the body or by HTTP Basic', async () => {
    const byPost = await signInWith(owner);
    expect(await revoke({ token: byPost.refresh, client_id: owner.id, client_secret: owner.secret! })).toEqual({ status: 200, body: {} });
    expect(await stillWorks(owner, byPost.refresh)).toBeUndefined();

    const byBasic = await signInWith(owner);
    expect((await revoke({ token: byBasic.refresh }, { authorization: basic(owner.id, owner.secret!) })).status).toBe(200);
    expect(await stillWorks(owner, byBasic.refresh)).toBeUndefined();
  });

  it('RFC 7009 §2.2.1: a wrong secret is 401 invalid_client, and the token lives on', async () => {
    const tokens = await signInWith(owner);
    const wrong = await revoke({ token: tokens.refresh, client_id: owner.id, client_secret: `${owner.secret!}x` });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
    const wrongBasic = await revoke({ token: tokens.refresh }, { authorization: basic(owner.id, 'not-the-secret') });
    expect([wrongBasic.status, wrongBasic.body.error]).toEqual([401, 'invalid_client']);
    // A confidential client that leaves its secret out has not authenticated either.
    const noSecret = await revoke({ token: tokens.refresh, client_id: owner.id });
    expect([noSecret.status, noSecret.body.error]).toEqual([401, 'invalid_client']);
    // So is a client nobody registered, before the token is looked at.
    const unknown = await revoke({ token: 'never-issued', client_id: randomUUID() });
    expect([unknown.status, unknown.body.error]).toEqual([401, 'invalid_client']);
    expect(await stillWorks(owner, tokens.refresh)).toEqual(expect.any(String));
  });

  it('RFC 7009 §2.2: another client, or a request naming no client, gets 200 and the token lives on (refresh and access token alike)', async () => {
    let tokens = await signInWith(owner);
    expect(await revoke({ token: tokens.refresh, client_id: other.id, client_secret: other.secret! })).toEqual({ status: 200, body: {} });
    expect(await revoke({ token: tokens.access }, { authorization: basic(other.id, other.secret!) })).toEqual({ status: 200, body: {} });
    expect(await revoke({ token: tokens.refresh, client_id: publicClient.id })).toEqual({ status: 200, body: {} });
    expect(await revoke({ token: tokens.refresh })).toEqual({ status: 200, body: {} });
    const next = await stillWorks(owner, tokens.refresh);
    expect(next).toEqual(expect.any(String));
    expect((await env.call('GET', `/api/v1/identity/${userId}`, tokens.access)).status).toBe(200);

    // Its own access token, from the client it was issued to, ends the sign-in.
    tokens = { ...tokens, refresh: next! };
    expect((await revoke({ token: tokens.access, client_id: owner.id, client_secret: owner.secret! })).status).toBe(200);
    expect(await stillWorks(owner, tokens.refresh)).toBeUndefined();
  });

  it('RFC 7009 §2.1: a public client names itself by client_id; a request naming no client speaks for the first-party client', async () => {
    const spa = await signInWith(publicClient);
    expect((await revoke({ token: spa.refresh })).status).toBe(200);
    const next = await stillWorks(publicClient, spa.refresh);
    expect(next).toEqual(expect.any(String));
    expect((await revoke({ token: next!, client_id: publicClient.id })).status).toBe(200);
    expect(await stillWorks(publicClient, next!)).toBeUndefined();

    // A password grant that names no client is the first-party client's, as its revocation is.
    const firstParty = await signInWith(undefined);
    expect((await revoke({ token: firstParty.refresh, client_id: publicClient.id })).status).toBe(200);
    const rotated = await stillWorks(undefined, firstParty.refresh);
    expect(rotated).toEqual(expect.any(String));
    expect((await revoke({ token: rotated! })).status).toBe(200);
    expect(await stillWorks(undefined, rotated!)).toBeUndefined();
  });
});
