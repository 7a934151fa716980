import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { LiveRevocationsRequest } from '@app/contracts';
import { busRevocationSource } from '@app/platform';
import { eventually, SETTLE_BUDGET_MS, testModes } from '@app/testing';
import { hashRefreshToken } from '../src/tokens/service.js';
import { ADDRESS_LIMIT, PAIR_LIMIT, USERNAME_LIMIT } from '../src/tokens/throttle.js';
import { PASSWORD, startSso, type SsoUnderTest } from './support.js';

describe.each(testModes())('failed-login throttling (%s)', (mode) => {
  let sso: SsoUnderTest;
  beforeAll(async () => {
    sso = await startSso(mode, { TRUST_PROXY: 'loopback' });
  });
  afterAll(() => sso.close());

  // The peer is loopback, which this sso trusts as the gateway (TRUST_PROXY=loopback, as a split deployment sets): its X-Forwarded-For names the client.
  const from = (address: string) => ({ 'x-forwarded-for': address });
  const attempt = (username: string, password: string, address: string) =>
    sso.token({ grant_type: 'password', username, password }, from(address));

  it('blocks a username from one address after repeated failures, with Retry-After, but not its owner elsewhere', async () => {
    sso.double.addIdentity({ email: 'victim@example.com', password: PASSWORD });
    for (let i = 0; i < PAIR_LIMIT; i++) expect((await attempt('victim@example.com', 'guess', '203.0.113.7')).status).toBe(400);
    const blocked = await attempt('victim@example.com', PASSWORD, '203.0.113.7');
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(blocked.headers.get('retry-after'))).toBeLessThanOrEqual(900);
    expect(blocked.body).toEqual({ error: 'slow_down', error_description: `Too many failed attempts; retry after ${blocked.headers.get('retry-after')} seconds.` });
    expect((await attempt('victim@example.com', PASSWORD, '198.51.100.20')).status).toBe(200);
  });

  it('answers an unknown username the same way once blocked, so blocking reveals nothing', async () => {
    for (let i = 0; i < PAIR_LIMIT; i++) await attempt('ghost@example.com', 'guess', '203.0.113.8');
    expect((await attempt('ghost@example.com', 'guess', '203.0.113.8')).status).toBe(429);
  });

  it('under a distributed attack gives each address one failure per username, and still lets the owner in', async () => {
    sso.double.addIdentity({ email: 'target@example.com', password: PASSWORD });
    for (let i = 0; i < USERNAME_LIMIT; i++) await attempt('target@example.com', 'guess', `192.0.2.${i + 1}`);
    // The attack is detected: an attacking address that failed once is now blocked for this username.
    expect((await attempt('target@example.com', 'guess', `192.0.2.${USERNAME_LIMIT}`)).status).toBe(429);
    // The owner, from an address with no failures, signs in.
    expect((await attempt('target@example.com', PASSWORD, '198.51.100.99')).status).toBe(200);
  });

  it('blocks an address spraying many usernames', async () => {
    for (let i = 0; i < ADDRESS_LIMIT; i++) await attempt(`spray${i}@example.com`, 'guess', '203.0.113.50');
    sso.double.addIdentity({ email: 'bystander@example.com', password: PASSWORD });
    expect((await attempt('bystander@example.com', PASSWORD, '203.0.113.50')).status).toBe(429);
    expect((await sso.token({ grant_type: 'client_credentials', client_secret: 'ak_x' }, from('203.0.113.50'))).status).toBe(429);
  });

  it('ignores X-Forwarded-For from a peer it does not trust', async () => {
    const strict = await startSso(mode, { TRUST_PROXY: 'none' });
    try {
      strict.double.addIdentity({ email: 'ada@example.com', password: PASSWORD });
      for (let i = 0; i < PAIR_LIMIT; i++) {
        await strict.token({ grant_type: 'password', username: 'ada@example.com', password: 'guess' }, from(`203.0.113.${i + 100}`));
      }
      // Every attempt counted against the real peer (loopback), whatever the header said.
      const blocked = await strict.token({ grant_type: 'password', username: 'ada@example.com', password: PASSWORD }, from('198.51.100.1'));
      expect(blocked.status).toBe(429);
    } finally {
      await strict.close();
    }
  });
});

describe.each(testModes())('credential events (%s)', (mode) => {
  let sso: SsoUnderTest;
  beforeAll(async () => {
    sso = await startSso(mode);
  });
  afterAll(() => sso.close());

  const signIn = async (email: string) => String((await sso.token({ grant_type: 'password', username: email, password: PASSWORD })).body.refresh_token);
  const refreshUntilRefused = async (token: string) => {
    // The event is handled asynchronously: wait until the token's family says revoked (5 s at most).
    for (let i = 0; i < 100; i++) {
      const rows = await sso.deps.database.query<{ n: number }>(
        `select count(*)::int as n from "sso"."refresh_token" as token join "sso"."refresh_family" as family on family.id = token.family_id
         where token.token_hash = $1 and family.revoked_at is not null`,
        [hashRefreshToken(token)],
      );
      if (rows[0]!.n === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return sso.token({ grant_type: 'refresh_token', refresh_token: token });
  };
  const event = (identityId: string, extra: Record<string, unknown>) => ({
    credentialId: sso.double.localCredentialOf(identityId) ?? randomUUID(),
    identityId,
    provider: 'LOCAL',
    type: 'PASSWORD',
    activated: true,
    occurredAt: new Date().toISOString(),
    ...extra,
  });
  const signInFully = async (email: string) => (await sso.token({ grant_type: 'password', username: email, password: PASSWORD })).body;
  const sidOf = (accessToken: unknown) => JSON.parse(Buffer.from(String(accessToken).split('.')[1]!, 'base64url').toString()).sid as string;
  /** The revocations sso recorded for verifiers that start later, every page, as a verifier reads them (over the bus). */
  const recorded = async () => {
    const source = busRevocationSource(sso.deps.bus);
    const entries: Record<string, unknown>[] = [];
    for (let request: LiveRevocationsRequest | undefined = {}; request; ) {
      const page = await source(request);
      entries.push(...page.revocations);
      request = page.next && { after: page.next };
    }
    return entries;
  };
  const recordedEventually = async (match: Record<string, unknown>) => {
    await eventually(async () => (await recorded()).some((entry) => Object.entries(match).every(([key, value]) => entry[key] === value)), SETTLE_BUDGET_MS, 20);
    return (await recorded()).find((entry) => Object.entries(match).every(([key, value]) => entry[key] === value));
  };

  it('ends every other session of the identity when its password changes, keeping the one that changed it', async () => {
    const { id } = sso.double.addIdentity({ email: 'changer@example.com', password: PASSWORD });
    const other = await signInFully('changer@example.com');
    const actor = await signInFully('changer@example.com');
    await sso.deps.bus.publish('credential.updated', event(id, { secretChanged: true, actorSessionId: sidOf(actor.access_token) }));
    const refused = await refreshUntilRefused(String(other.refresh_token));
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    expect(await recordedEventually({ kind: 'session', id: sidOf(other.access_token) })).toBeDefined();
    expect((await sso.token({ grant_type: 'refresh_token', refresh_token: String(actor.refresh_token) })).status).toBe(200);
    expect((await recorded()).some((entry) => entry.id === sidOf(actor.access_token))).toBe(false);
  });

  it('ends every session of the identity when someone else changed its password', async () => {
    const { id } = sso.double.addIdentity({ email: 'reset@example.com', password: PASSWORD });
    const token = await signIn('reset@example.com');
    await sso.deps.bus.publish('credential.updated', event(id, { secretChanged: true, actorSessionId: randomUUID() }));
    expect((await refreshUntilRefused(token)).status).toBe(400);
  });

  it('ends the sessions signed in with a credential when it is revoked, and announces each one', async () => {
    const { id } = sso.double.addIdentity({ email: 'revoked@example.com', password: PASSWORD });
    const session = await signInFully('revoked@example.com');
    await sso.deps.bus.publish('credential.revoked', event(id, { activated: false }));
    expect((await refreshUntilRefused(String(session.refresh_token))).status).toBe(400);
    const entry = await recordedEventually({ kind: 'session', id: sidOf(session.access_token) });
    // The entry lives as long as an access token can: its TTL (900 s) plus the clock tolerance (30 s).
    expect(entry?.expiresAt).toBeGreaterThan(Date.now() / 1000 + 900);
    expect(entry?.expiresAt).toBeLessThanOrEqual(Date.now() / 1000 + 931);
  });

  it('ends them when a credential is deactivated', async () => {
    const { id } = sso.double.addIdentity({ email: 'paused@example.com', password: PASSWORD });
    const token = await signIn('paused@example.com');
    await sso.deps.bus.publish('credential.updated', event(id, { activated: false }));
    expect((await refreshUntilRefused(token)).status).toBe(400);
  });

  it('cuts an API key off by client_id when it is deactivated or deleted', async () => {
    const { id } = sso.double.addIdentity({ email: 'robot@example.com' });
    const credentialId = randomUUID();
    const occurredAt = new Date();
    await sso.deps.bus.publish('credential.revoked', event(id, { credentialId, provider: 'API_KEY', type: 'API_KEY', occurredAt: occurredAt.toISOString() }));
    const entry = await recordedEventually({ kind: 'client', id: credentialId });
    expect(entry?.issuedBefore).toBe(Math.floor(occurredAt.getTime() / 1000) + 1);
  });

  it('cuts a deactivated identity off and revokes its refresh tokens', async () => {
    const { id } = sso.double.addIdentity({ email: 'deactivated@example.com', password: PASSWORD });
    const token = await signIn('deactivated@example.com');
    const occurredAt = new Date();
    await sso.deps.bus.publish('identity.updated', { identityId: id, email: 'deactivated@example.com', name: 'd', roles: [], activated: false, occurredAt: occurredAt.toISOString() });
    expect((await refreshUntilRefused(token)).status).toBe(400);
    expect((await recordedEventually({ kind: 'subject', id }))?.issuedBefore).toBe(Math.floor(occurredAt.getTime() / 1000) + 1);
  });

  it('leaves them alone when a credential changes without a new secret, or an identity stays active', async () => {
    const { id } = sso.double.addIdentity({ email: 'renamed@example.com', password: PASSWORD });
    const token = await signIn('renamed@example.com');
    const other = sso.double.addIdentity({ email: 'marker@example.com', password: PASSWORD });
    const marker = await signIn('marker@example.com');
    await sso.deps.bus.publish('credential.updated', event(id, { secretChanged: false }));
    await sso.deps.bus.publish('identity.updated', { identityId: id, email: 'renamed@example.com', name: 'r', roles: [], activated: true, occurredAt: new Date().toISOString() });
    await sso.deps.bus.publish('credential.revoked', event(id, { credentialId: randomUUID() }));
    // Events are handled in order: once the marker's revocation is visible, the others were handled too.
    await sso.deps.bus.publish('credential.revoked', event(other.id, {}));
    await refreshUntilRefused(marker);
    expect((await sso.token({ grant_type: 'refresh_token', refresh_token: token })).status).toBe(200);
    expect((await recorded()).some((entry) => entry.id === id)).toBe(false);
  });
});
