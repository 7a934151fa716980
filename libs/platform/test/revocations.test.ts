import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { REVOCATIONS_CACHE_KEY, type AccessTokenClaims, type RevocationEvent } from '@app/contracts';
import {
  cachingTokenVerifier,
  createLocalBus,
  createMemoryCache,
  createNatsBus,
  createRedisCache,
  createRevocationSet,
  startRevocationFeed,
  type Bus,
  type Cache,
  type Principal,
  type RevocationFeed,
  type TokenVerifier,
} from '@app/platform';
import { eventually, REAL, SETTLE_BUDGET_MS, silentLogger, startTcpProxy } from '@app/testing';

const now = () => Math.floor(Date.now() / 1000);
const claimsOf = (overrides: Partial<AccessTokenClaims> = {}): AccessTokenClaims => ({
  iss: 'i',
  aud: 'a',
  sub: randomUUID(),
  iat: now(),
  exp: now() + 900,
  jti: randomUUID(),
  sid: randomUUID(),
  roles: [],
  ...overrides,
});
const session = (sid: string): RevocationEvent => ({ kind: 'session', id: sid, expiresAt: now() + 930 });

/** A verifier that accepts every token named in `known` and counts its calls. */
function knownTokens(known: Map<string, AccessTokenClaims>): TokenVerifier & { calls: number } {
  const verifier = {
    calls: 0,
    verify: async (token: string): Promise<Principal> => {
      verifier.calls++;
      const claims = known.get(token);
      if (!claims) throw new Error('rejected');
      return { id: claims.sub, roles: claims.roles, claims };
    },
  };
  return verifier;
}

describe('the revocation set', () => {
  it('refuses every token of a revoked session, and only those', () => {
    const set = createRevocationSet();
    const revoked = claimsOf();
    set.apply(session(revoked.sid!));
    expect(set.isRevoked(revoked)).toBe(true);
    expect(set.isRevoked({ ...revoked, jti: randomUUID(), iat: revoked.iat + 100 })).toBe(true);
    expect(set.isRevoked(claimsOf({ sub: revoked.sub }))).toBe(false);
  });

  it('cuts a subject off: tokens issued before the cut-off are refused, later ones are not', () => {
    const set = createRevocationSet();
    const sub = randomUUID();
    const cutOff = now();
    set.apply({ kind: 'subject', id: sub, issuedBefore: cutOff, expiresAt: cutOff + 930 });
    expect(set.isRevoked(claimsOf({ sub, iat: cutOff - 1 }))).toBe(true);
    expect(set.isRevoked(claimsOf({ sub, iat: cutOff }))).toBe(false);
    expect(set.isRevoked(claimsOf({ iat: cutOff - 1 }))).toBe(false);
  });

  it('cuts an API key off by client_id, whatever the subject', () => {
    const set = createRevocationSet();
    const client = randomUUID();
    const cutOff = now();
    set.apply({ kind: 'client', id: client, issuedBefore: cutOff, expiresAt: cutOff + 930 });
    expect(set.isRevoked(claimsOf({ client_id: client, iat: cutOff - 5 }))).toBe(true);
    expect(set.isRevoked(claimsOf({ client_id: client, iat: cutOff + 1 }))).toBe(false);
    expect(set.isRevoked(claimsOf({ iat: cutOff - 5 }))).toBe(false);
  });

  it('keeps the later of two cut-offs of one subject', () => {
    const set = createRevocationSet();
    const sub = randomUUID();
    set.apply({ kind: 'subject', id: sub, issuedBefore: now() + 10, expiresAt: now() + 930 });
    set.apply({ kind: 'subject', id: sub, issuedBefore: now() - 10, expiresAt: now() + 900 });
    expect(set.isRevoked(claimsOf({ sub, iat: now() + 5 }))).toBe(true);
  });

  it('drops entries once every token they match has expired', () => {
    const set = createRevocationSet();
    set.apply({ kind: 'session', id: 'gone', expiresAt: now() - 1 });
    set.apply(session('kept'));
    set.prune();
    expect(set.size).toBe(1);
  });

  // Its cost with 10,000 entries is measured in `npm run bench`, never in a timed test.
  it('holds 10,000 revoked sessions and tells each of them, and none other, revoked', () => {
    const set = createRevocationSet();
    const sids = Array.from({ length: 10_000 }, () => randomUUID());
    for (const sid of sids) set.apply(session(sid));
    expect(set.size).toBe(10_000);
    for (const sid of sids) expect(set.isRevoked(claimsOf({ sid }))).toBe(true);
    for (let i = 0; i < 1_000; i++) expect(set.isRevoked(claimsOf())).toBe(false);
  });
});

describe('cachingTokenVerifier with revocations', () => {
  it('refuses a cached token from the moment its session is revoked, without verifying it again', async () => {
    const claims = claimsOf();
    const inner = knownTokens(new Map([['t', claims]]));
    const revocations = createRevocationSet();
    const verifier = cachingTokenVerifier(inner, { maxEntries: 10, revocations });
    expect((await verifier.verify('t')).id).toBe(claims.sub);
    revocations.apply(session(claims.sid!));
    await expect(verifier.verify('t')).rejects.toMatchObject({ statusCode: 401, code: 'PLATFORM_AUTH_INVALID_TOKEN' });
    expect(inner.calls).toBe(1);
  });

  it('checks revocations without a cache too', async () => {
    const claims = claimsOf();
    const revocations = createRevocationSet();
    revocations.apply({ kind: 'subject', id: claims.sub, issuedBefore: claims.iat + 1, expiresAt: claims.exp });
    const verifier = cachingTokenVerifier(knownTokens(new Map([['t', claims]])), { maxEntries: 0, revocations });
    await expect(verifier.verify('t')).rejects.toMatchObject({ statusCode: 401 });
  });

  // What 10,000 revoked sessions cost a cached read is measured in `npm run bench`, never timed here.
  it('still answers a cached, unrevoked token with 10,000 revoked sessions in the set', async () => {
    const claims = claimsOf();
    const full = createRevocationSet();
    for (let i = 0; i < 10_000; i++) full.apply(session(randomUUID()));
    const inner = knownTokens(new Map([['t', claims]]));
    const loaded = cachingTokenVerifier(inner, { maxEntries: 10, revocations: full });
    for (let i = 0; i < 100; i++) expect((await loaded.verify('t')).id).toBe(claims.sub);
    expect(inner.calls).toBe(1);
  });
});

/** A bus whose reconnection the test triggers, delegating everything else to a local bus. */
function reconnectableBus(): Bus & { reconnect(): void } {
  const inner = createLocalBus({ logger: silentLogger() });
  const listeners = new Set<() => void>();
  return {
    ...inner,
    onReconnect: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    reconnect: () => {
      for (const listener of listeners) listener();
    },
  };
}

describe('the revocation feed', () => {
  const opened: { close(): Promise<void> }[] = [];
  const feeds: RevocationFeed[] = [];
  afterEach(async () => {
    for (const feed of feeds.splice(0)) await feed.stop();
    for (const resource of opened.splice(0)) await resource.close();
  });
  const recorded = (cache: Cache, event: RevocationEvent) => cache.addExpiring(REVOCATIONS_CACHE_KEY, JSON.stringify(event), event.expiresAt);

  it('is seeded from the cache before it resolves: a verifier started after a revocation refuses the token', async () => {
    const cache = createMemoryCache({ maxEntries: 100 });
    const bus = createLocalBus({ logger: silentLogger() });
    opened.push(cache, bus);
    const claims = claimsOf();
    await recorded(cache, session(claims.sid!));
    await cache.addExpiring(REVOCATIONS_CACHE_KEY, '{"not":"a revocation"}', now() + 60);
    const set = createRevocationSet();
    feeds.push(await startRevocationFeed({ set, cache, bus, logger: silentLogger() }));
    expect(set.isRevoked(claims)).toBe(true);
  });

  it('hears every broadcast revocation, in every process', async () => {
    const cache = createMemoryCache({ maxEntries: 100 });
    const bus = createLocalBus({ logger: silentLogger() });
    opened.push(cache, bus);
    const sets = [createRevocationSet(), createRevocationSet(), createRevocationSet()];
    for (const set of sets) feeds.push(await startRevocationFeed({ set, cache, bus, logger: silentLogger() }));
    const claims = claimsOf();
    await bus.publish('revocation.session', session(claims.sid!));
    expect(await eventually(async () => sets.every((set) => set.isRevoked(claims)), SETTLE_BUDGET_MS, 10)).toBe(true);
  });

  it('catches up from the cache when the bus reconnects', async () => {
    const cache = createMemoryCache({ maxEntries: 100 });
    const bus = reconnectableBus();
    opened.push(cache, bus);
    const set = createRevocationSet();
    feeds.push(await startRevocationFeed({ set, cache, bus, logger: silentLogger() }));
    const claims = claimsOf();
    // Published while this process was cut off from the bus: only the cache has it.
    await recorded(cache, session(claims.sid!));
    expect(set.isRevoked(claims)).toBe(false);
    bus.reconnect();
    expect(await eventually(async () => set.isRevoked(claims), SETTLE_BUDGET_MS, 10)).toBe(true);
  });

  if (REAL.natsUrl && REAL.redisUrl) {
    const natsUrl = new URL(REAL.natsUrl);
    const redisUrl = REAL.redisUrl;

    it('catches up on real NATS and Redis after the bus was cut for a while', async () => {
      const stream = `TEST_${randomUUID().slice(0, 8).toUpperCase()}`;
      const cache = await createRedisCache({ url: redisUrl, logger: silentLogger(), keyPrefix: `test:${randomUUID()}:` });
      const proxy = await startTcpProxy({ host: natsUrl.hostname, port: Number(natsUrl.port || 4222) });
      const publisher = await createNatsBus({ servers: REAL.natsUrl!, logger: silentLogger(), stream, deleteStreamOnClose: true });
      const listener = await createNatsBus({ servers: `nats://127.0.0.1:${proxy.port}`, logger: silentLogger(), stream });
      opened.push(cache, listener, publisher, { close: proxy.stop });
      const set = createRevocationSet();
      feeds.push(await startRevocationFeed({ set, cache, bus: listener, logger: silentLogger() }));

      const heard = claimsOf();
      await publisher.publish('revocation.session', session(heard.sid!));
      expect(await eventually(async () => set.isRevoked(heard), SETTLE_BUDGET_MS, 10)).toBe(true);

      await proxy.stop();
      const missed = claimsOf();
      await recorded(cache, session(missed.sid!));
      await publisher.publish('revocation.session', session(missed.sid!));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(set.isRevoked(missed)).toBe(false);
      await proxy.start();
      expect(await eventually(async () => set.isRevoked(missed))).toBe(true);
    });
  }
});
