import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually, REAL, SETTLE_BUDGET_MS, startTcpProxy } from '@app/testing';
import { claimsOf, startSsoPlatform, CASES, type SsoPlatform } from './harness.js';

const PASSWORD = 'a user password, long enough';

const cases = CASES;

describe.each(cases)('revocation reaches every verifier (%s, %s)', (topology, mode) => {
  let env: SsoPlatform;
  let admin: string;

  beforeAll(async () => {
    env = await startSsoPlatform(mode, topology);
    admin = await env.adminToken();
  });
  /** Run after the platform closed. */
  const closeLast: (() => Promise<void>)[] = [];
  afterAll(async () => {
    await env.close();
    for (const close of closeLast) await close();
  });

  /** Registers an identity (public route) and gives it a LOCAL password (admin). */
  const newUser = async () => {
    const email = `user-${randomUUID().slice(0, 8)}@example.com`;
    const created = await env.call('POST', '/api/v1/identity', undefined, { name: 'A User', email });
    expect(created.status).toBe(201);
    const id = (created.body as { id: string }[])[0]!.id;
    const credential = await env.call('POST', '/api/v1/credentials', admin, { identity_id: id, provider: 'LOCAL', secret: PASSWORD });
    expect(credential.status).toBe(201);
    return { id, email, credentialId: (credential.body as { id: string }[])[0]!.id };
  };
  const signIn = async (email: string, password = PASSWORD) => {
    const reply = await env.token({ grant_type: 'password', username: email, password });
    expect(reply.status).toBe(200);
    return { access: String(reply.body.access_token), refresh: String(reply.body.refresh_token) };
  };
  /** An API key for `identityId` (its secret is the client_secret) and a token granted with it. */
  const newApiKey = async (identityId: string) => {
    const secret = `${randomUUID()}${randomUUID()}`.replace(/-/g, '');
    const created = await env.call('POST', '/api/v1/credentials', admin, { identity_id: identityId, provider: 'API_KEY', secret });
    expect(created.status).toBe(201);
    const record = (created.body as { id: string }[])[0]!;
    const reply = await env.token({ grant_type: 'client_credentials', client_secret: secret });
    expect(reply.status).toBe(200);
    return { credentialId: record.id, access: String(reply.body.access_token) };
  };

  /** A route each verifier guards, for the token's own subject: the edge, and in split mode each service reached directly. */
  const targets = (token: string): Record<string, string> => {
    const sub = String(claimsOf(token).sub);
    return {
      'gateway -> identity': `${env.gateway}/api/v1/identity/${sub}`,
      'gateway -> sso': `${env.gateway}/api/v1/sso/userinfo`,
      ...(topology !== 'all-in-one'
        ? {
            'identity directly': `${env.direct('identity')}/api/v1/identity/${sub}`,
            'credentials directly': `${env.direct('credentials')}/api/v1/credentials?identity_id=${sub}`,
            'sso directly': `${env.direct('sso')}/api/v1/sso/userinfo`,
          }
        : {}),
    };
  };
  const statuses = async (token: string, where = targets(token)) =>
    Object.fromEntries(
      await Promise.all(
        Object.entries(where).map(async ([name, url]) => [name, (await fetch(url, { headers: { authorization: `Bearer ${token}` } })).status] as const),
      ),
    );
  const everywhere = (token: string, status: number) => Object.fromEntries(Object.keys(targets(token)).map((name) => [name, status]));

  /** Accepted everywhere now (which also puts it in every verifier's cache, the path a revocation must beat). */
  const acceptedEverywhere = async (token: string) => expect(await statuses(token)).toEqual(everywhere(token, 200));

  /**
   * What every verifier answers `token` once the revocation reached it: polled until all
   * refuse, the budget only a guard against a hang. How soon that happens (issue 11: within
   * 1 s, everywhere) is measured by `npm run bench`, not asserted on a busy machine.
   */
  const onceRevoked = async (token: string) => {
    await eventually(async () => Object.values(await statuses(token)).every((status) => status === 401), SETTLE_BUDGET_MS, 20);
    return statuses(token);
  };
  const refusedEverywhere = async (token: string) => expect(await onceRevoked(token)).toEqual(everywhere(token, 401));

  it('refuses the tokens of a deactivated identity, and refreshes them no more', async () => {
    const user = await newUser();
    const session = await signIn(user.email);
    await acceptedEverywhere(session.access);
    expect((await env.call('PUT', `/api/v1/identity/${user.id}`, admin, { activated: false })).status).toBe(200);
    await refusedEverywhere(session.access);
    expect((await env.token({ grant_type: 'refresh_token', refresh_token: session.refresh })).status).toBe(400);
    expect((await env.token({ grant_type: 'password', username: user.email, password: PASSWORD })).status).toBe(400);
  });

  it('refuses the tokens of sign-ins made with a credential once it is deactivated', async () => {
    const user = await newUser();
    const session = await signIn(user.email);
    await acceptedEverywhere(session.access);
    expect((await env.call('PUT', `/api/v1/credentials/${user.credentialId}`, admin, { activated: false })).status).toBe(200);
    await refusedEverywhere(session.access);
    expect((await env.token({ grant_type: 'refresh_token', refresh_token: session.refresh })).status).toBe(400);
  });

  it('refuses the tokens of sign-ins made with a credential once it is deleted', async () => {
    const user = await newUser();
    const session = await signIn(user.email);
    await acceptedEverywhere(session.access);
    expect((await env.call('DELETE', `/api/v1/credentials/${user.credentialId}`, admin)).status).toBe(204);
    await refusedEverywhere(session.access);
  });

  it.each(['deactivated', 'deleted'] as const)('refuses every token granted to an API key once it is %s (by client_id), not the owner\'s other tokens', async (change) => {
    const user = await newUser();
    const key = await newApiKey(user.id);
    const session = await signIn(user.email);
    await acceptedEverywhere(key.access);
    const reply =
      change === 'deactivated'
        ? await env.call('PUT', `/api/v1/credentials/${key.credentialId}`, admin, { activated: false })
        : await env.call('DELETE', `/api/v1/credentials/${key.credentialId}`, admin);
    expect(reply.status).toBe(change === 'deactivated' ? 200 : 204);
    await refusedEverywhere(key.access);
    await acceptedEverywhere(session.access);
  });

  it('ends every other session of an identity when it changes its password, keeping the one that changed it', async () => {
    const user = await newUser();
    const other = await signIn(user.email);
    const actor = await signIn(user.email);
    await acceptedEverywhere(other.access);
    expect((await env.call('PUT', `/api/v1/credentials/${user.credentialId}`, actor.access, { secret: 'another password, long enough' })).status).toBe(200);
    await refusedEverywhere(other.access);
    expect((await env.token({ grant_type: 'refresh_token', refresh_token: other.refresh })).status).toBe(400);
    await acceptedEverywhere(actor.access);
    expect((await env.token({ grant_type: 'refresh_token', refresh_token: actor.refresh })).status).toBe(200);
  });

  it('ends every session when an admin changes someone\'s password', async () => {
    const user = await newUser();
    const session = await signIn(user.email);
    await acceptedEverywhere(session.access);
    expect((await env.call('PUT', `/api/v1/credentials/${user.credentialId}`, admin, { secret: 'another password, long enough' })).status).toBe(200);
    await refusedEverywhere(session.access);
  });

  const revoke = (token: string) =>
    fetch(`${env.gateway}/api/v1/sso/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }) });

  it('ends a sign-in revoked by its refresh token (RFC 7009): its access tokens too, and no other sign-in', async () => {
    const user = await newUser();
    const session = await signIn(user.email);
    const other = await signIn(user.email);
    await acceptedEverywhere(session.access);
    expect((await revoke(session.refresh)).status).toBe(200);
    await refusedEverywhere(session.access);
    await acceptedEverywhere(other.access);
  });

  it('ends a sign-in revoked by its access token (RFC 7009): its refresh token too', async () => {
    const user = await newUser();
    const session = await signIn(user.email);
    await acceptedEverywhere(session.access);
    expect((await revoke(session.access)).status).toBe(200);
    await refusedEverywhere(session.access);
    expect((await env.token({ grant_type: 'refresh_token', refresh_token: session.refresh })).status).toBe(400);
    // Revoking it again, or revoking garbage, is still 200 (RFC 7009 §2.2).
    expect((await revoke(session.access)).status).toBe(200);
    expect((await revoke('not.a.token')).status).toBe(200);
  });

  it('ends the whole sign-in when a refresh token is replayed: every access token of it, and its newest refresh token', async () => {
    const user = await newUser();
    const first = await signIn(user.email);
    const rotated = await env.token({ grant_type: 'refresh_token', refresh_token: first.refresh });
    expect(rotated.status).toBe(200);
    const current = { access: String(rotated.body.access_token), refresh: String(rotated.body.refresh_token) };
    await acceptedEverywhere(current.access);
    // The replay: a spent refresh token comes back (stolen, or its owner's copy was).
    expect((await env.token({ grant_type: 'refresh_token', refresh_token: first.refresh })).status).toBe(400);
    await refusedEverywhere(current.access);
    await refusedEverywhere(first.access);
    expect((await env.token({ grant_type: 'refresh_token', refresh_token: current.refresh })).status).toBe(400);
  });

  it('has a verifier started after a revocation refuse the token from its first request (seeded from sso)', async () => {
    const user = await newUser();
    const session = await signIn(user.email);
    expect((await revoke(session.refresh)).status).toBe(200);
    await refusedEverywhere(session.access);
    const [gateway, identity] = [await env.startLate('gateway'), await env.startLate('identity')];
    const sub = String(claimsOf(session.access).sub);
    const late = { 'late gateway': `${gateway.url}/api/v1/identity/${sub}`, 'late identity': `${identity.url}/api/v1/identity/${sub}` };
    expect(await statuses(session.access, late)).toEqual({ 'late gateway': 401, 'late identity': 401 });
    // ... while a token nobody revoked opens the same routes.
    const fresh = await signIn(user.email);
    expect(await statuses(fresh.access, late)).toEqual({ 'late gateway': 200, 'late identity': 200 });
  });

  if (mode === 'real' && REAL.natsUrl) {
    const nats = new URL(REAL.natsUrl);

    it('catches up with revocations published while a verifier\'s bus was down', async () => {
      const proxy = await startTcpProxy({ host: nats.hostname, port: Number(nats.port || 4222) });
      {
        const natsServers = `nats://127.0.0.1:${proxy.port}`;
        const [gateway, identity] = [await env.startLate('gateway', { natsServers }), await env.startLate('identity', { natsServers })];
        const user = await newUser();
        const session = await signIn(user.email);
        const sub = String(claimsOf(session.access).sub);
        // What each cut-off verifier answers by itself: the gateway a path it routes nowhere (404 once
        // the token passed), the identity service the subject's own record.
        const cutOff = { gateway: `${gateway.url}/api/v1/routed-nowhere`, identity: `${identity.url}/api/v1/identity/${sub}` };
        expect(await statuses(session.access, cutOff)).toEqual({ gateway: 404, identity: 200 });
        await proxy.stop();
        expect((await revoke(session.refresh)).status).toBe(200);
        // Everyone else hears it; the cut-off verifiers cannot.
        await refusedEverywhere(session.access);
        expect(await statuses(session.access, cutOff)).toEqual({ gateway: 404, identity: 200 });
        await proxy.start();
        // Once NATS reconnects (reconnectTimeWait), the re-seed follows: both refuse it.
        await eventually(async () => Object.values(await statuses(session.access, cutOff)).every((status) => status === 401), SETTLE_BUDGET_MS, 50);
        expect(await statuses(session.access, cutOff)).toEqual({ gateway: 401, identity: 401 });
      }
      // The late gateway closes with the platform (afterAll); its bus needs the proxy until then.
      closeLast.push(() => proxy.stop());
    });
  }
});
