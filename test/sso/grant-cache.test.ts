import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { claimsOf, startSsoPlatform, CASES, type SsoPlatform } from './harness.js';

const PASSWORD = 'a user password, long enough';
/** Grants made before each change, so that sso's cache of sign-in decisions is surely warm. */
const WARM_GRANTS = 3;

/**
 * sso keeps API key verdicts and identities in memory for the token endpoint
 * (services/sso/src/tokens/grant-cache.ts). These try to make it honour a change late: every
 * change must hold from the very next grant, in every topology, as it does with no cache.
 */
describe.each(CASES)('the token endpoint never honours a changed credential or identity from memory (%s, %s)', (topology, mode) => {
  let env: SsoPlatform;
  let admin: string;

  beforeAll(async () => {
    env = await startSsoPlatform(mode, topology);
    admin = await env.adminToken();
  });
  afterAll(async () => {
    await env.close();
  });

  /** An identity with an API key and a LOCAL password. */
  const newClient = async () => {
    const email = `client-${randomUUID().slice(0, 8)}@example.com`;
    const created = await env.call('POST', '/api/v1/identity', undefined, { name: 'A Client', email });
    expect(created.status).toBe(201);
    const id = (created.body as { id: string }[])[0]!.id;
    const secret = `${randomUUID()}${randomUUID()}`.replace(/-/g, '');
    const key = await env.call('POST', '/api/v1/credentials', admin, { identity_id: id, provider: 'API_KEY', secret });
    expect(key.status).toBe(201);
    expect((await env.call('POST', '/api/v1/credentials', admin, { identity_id: id, provider: 'LOCAL', secret: PASSWORD })).status).toBe(201);
    return { id, email, secret, credentialId: (key.body as { id: string }[])[0]!.id };
  };
  const grant = (secret: string) => env.token({ grant_type: 'client_credentials', client_secret: secret });
  /** Grants with the key until the cache surely holds it; answers the last token's roles. */
  const warm = async (secret: string) => {
    let roles: unknown;
    for (let i = 0; i < WARM_GRANTS; i++) {
      const reply = await grant(secret);
      expect(reply.status).toBe(200);
      roles = claimsOf(String(reply.body.access_token)).roles;
    }
    return roles;
  };
  /** A refresh token whose identity sso has just read (and cached). */
  const warmRefresh = async (email: string) => {
    const signedIn = await env.token({ grant_type: 'password', username: email, password: PASSWORD });
    expect(signedIn.status).toBe(200);
    let refresh = String(signedIn.body.refresh_token);
    for (let i = 0; i < WARM_GRANTS; i++) {
      const reply = await env.token({ grant_type: 'refresh_token', refresh_token: refresh });
      expect(reply.status).toBe(200);
      refresh = String(reply.body.refresh_token);
    }
    return refresh;
  };

  it('refuses a deactivated API key from the next grant on, and honours it again once reactivated', async () => {
    const client = await newClient();
    for (let round = 0; round < 3; round++) {
      await warm(client.secret);
      expect((await env.call('PUT', `/api/v1/credentials/${client.credentialId}`, admin, { activated: false })).status).toBe(200);
      const refused = await grant(client.secret);
      expect(refused.status).toBe(401);
      expect(refused.body.error).toBe('invalid_client');
      expect((await env.call('PUT', `/api/v1/credentials/${client.credentialId}`, admin, { activated: true })).status).toBe(200);
      expect((await grant(client.secret)).status).toBe(200);
    }
  });

  it('refuses a deleted API key from the next grant on', async () => {
    const client = await newClient();
    await warm(client.secret);
    expect((await env.call('DELETE', `/api/v1/credentials/${client.credentialId}`, admin)).status).toBe(204);
    expect((await grant(client.secret)).status).toBe(401);
  });

  it('refuses the API key and the refresh tokens of a deactivated identity from the next grant on', async () => {
    const client = await newClient();
    await warm(client.secret);
    const refresh = await warmRefresh(client.email);
    expect((await env.call('PUT', `/api/v1/identity/${client.id}`, admin, { activated: false })).status).toBe(200);
    expect((await grant(client.secret)).status).toBe(401);
    expect((await env.token({ grant_type: 'refresh_token', refresh_token: refresh })).status).toBe(400);
  });

  it('puts an identity\'s new roles in the very next token, granted or refreshed', async () => {
    const client = await newClient();
    expect(await warm(client.secret)).toEqual([]);
    let refresh = await warmRefresh(client.email);
    for (const roles of [['system'], [], ['system']]) {
      expect((await env.call('PUT', `/api/v1/identity/${client.id}`, admin, { roles })).status).toBe(200);
      const granted = await grant(client.secret);
      expect(granted.status).toBe(200);
      expect(claimsOf(String(granted.body.access_token)).roles).toEqual(roles);
      const refreshed = await env.token({ grant_type: 'refresh_token', refresh_token: refresh });
      expect(refreshed.status).toBe(200);
      expect(claimsOf(String(refreshed.body.access_token)).roles).toEqual(roles);
      refresh = String(refreshed.body.refresh_token);
    }
  });

  it('answers a wrong secret with invalid_client however warm the right one is: nothing negative is remembered', async () => {
    const client = await newClient();
    await warm(client.secret);
    // One character off, a prefix, and the right secret with a tail: each is a fresh miss.
    for (const wrong of [`${client.secret.slice(0, -1)}x`, client.secret.slice(0, 32), `${client.secret}x`]) {
      expect((await grant(wrong)).status).toBe(401);
    }
    expect((await grant(client.secret)).status).toBe(200);
  });
});
