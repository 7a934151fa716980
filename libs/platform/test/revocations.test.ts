import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { LIVE_REVOCATIONS_REQUEST, type AccessTokenClaims, type LiveRevocationsRequest, type RevocationEvent } from '@app/contracts';
import {
  cachingTokenVerifier,
  busRevocationSource,
  createLocalBus,
  createNatsBus,
  createRevocationSet,
  revocationsCheck,
  runCheck,
  startRevocationFeed,
  type Bus,
  type Principal,
  type RevocationFeed,
  type RevocationSource,
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

/**
 * sso's record, as a source answers it: pages of `pageSize` in (kind, id) order; `down` makes
 * every read fail (sso or its database unreachable). Counts the reads.
 */
function recordOf(pageSize = 2) {
  const events: RevocationEvent[] = [];
  const record = {
    events,
    down: false,
    reads: 0,
    source: (async ({ after }: LiveRevocationsRequest) => {
      record.reads++;
      if (record.down) throw new Error('sso unreachable');
      const key = (event: { kind: string; id: string }) => `${event.kind}\u0000${event.id}`;
      const sorted = [...events].sort((a, b) => (key(a) < key(b) ? -1 : 1)).filter((event) => !after || key(event) > key(after));
      const page = sorted.slice(0, pageSize);
      const last = page.at(-1);
      return sorted.length > pageSize && last ? { revocations: page, next: { kind: last.kind, id: last.id } } : { revocations: page };
    }) satisfies RevocationSource,
  };
  return record;
}

describe('the revocation feed', () => {
  const opened: { close(): Promise<void> }[] = [];
  const feeds: RevocationFeed[] = [];
  afterEach(async () => {
    for (const feed of feeds.splice(0)) await feed.stop();
    for (const resource of opened.splice(0)) await resource.close();
  });

  it('is seeded from sso before it resolves, every page of it: a verifier started after a revocation refuses the token', async () => {
    const bus = createLocalBus({ logger: silentLogger() });
    opened.push(bus);
    const record = recordOf(2);
    const revoked = [claimsOf(), claimsOf(), claimsOf()];
    record.events.push(...revoked.map((claims) => session(claims.sid!)));
    const cutOff = claimsOf();
    record.events.push({ kind: 'subject', id: cutOff.sub, issuedBefore: cutOff.iat + 1, expiresAt: cutOff.exp });
    const set = createRevocationSet();
    const feed = await startRevocationFeed({ set, source: record.source, bus, logger: silentLogger() });
    feeds.push(feed);
    expect(feed.seeded).toBe(true);
    expect([...revoked, cutOff].map((claims) => set.isRevoked(claims))).toEqual([true, true, true, true]);
    expect(set.isRevoked(claimsOf())).toBe(false);
    // Four entries in pages of two.
    expect(record.reads).toBe(2);
  });

  it('stays unready while sso cannot answer, retrying, and is ready once it could read them', async () => {
    const bus = createLocalBus({ logger: silentLogger() });
    opened.push(bus);
    const record = recordOf();
    const claims = claimsOf();
    record.events.push(session(claims.sid!));
    record.down = true;
    const set = createRevocationSet();
    const feed = await startRevocationFeed({ set, source: record.source, bus, logger: silentLogger() });
    feeds.push(feed);
    const check = revocationsCheck(() => feed);
    expect(feed.seeded).toBe(false);
    expect((await runCheck(check)).status).toBe('disconnected');
    expect(check.required).toBe(true);
    expect(set.isRevoked(claims)).toBe(false);
    // Still retrying: sso comes back and the next attempt reads the record.
    expect(await eventually(async () => record.reads >= 2, SETTLE_BUDGET_MS, 50)).toBe(true);
    record.down = false;
    expect(await eventually(async () => feed.seeded, SETTLE_BUDGET_MS, 50)).toBe(true);
    expect(set.isRevoked(claims)).toBe(true);
    expect((await runCheck(check)).status).toBe('connected');
  });

  it('hears every broadcast revocation, in every process', async () => {
    const bus = createLocalBus({ logger: silentLogger() });
    opened.push(bus);
    const record = recordOf();
    const sets = [createRevocationSet(), createRevocationSet(), createRevocationSet()];
    for (const set of sets) feeds.push(await startRevocationFeed({ set, source: record.source, bus, logger: silentLogger() }));
    const claims = claimsOf();
    await bus.publish('revocation.session', session(claims.sid!));
    expect(await eventually(async () => sets.every((set) => set.isRevoked(claims)), SETTLE_BUDGET_MS, 10)).toBe(true);
  });

  it('catches up from sso when the bus reconnects', async () => {
    const bus = reconnectableBus();
    opened.push(bus);
    const record = recordOf();
    const set = createRevocationSet();
    feeds.push(await startRevocationFeed({ set, source: record.source, bus, logger: silentLogger() }));
    const claims = claimsOf();
    // Published while this process was cut off from the bus: only sso's record has it.
    record.events.push(session(claims.sid!));
    expect(set.isRevoked(claims)).toBe(false);
    bus.reconnect();
    expect(await eventually(async () => set.isRevoked(claims), SETTLE_BUDGET_MS, 10)).toBe(true);
  });
});

describe('sso\'s record over the bus', () => {
  const opened: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const resource of opened.splice(0)) await resource.close();
  });

  it('asks the in-process responder, and finds nothing to seed on an in-process bus without one', async () => {
    const bus = createLocalBus({ logger: silentLogger() });
    opened.push(bus);
    const source = busRevocationSource(bus);
    expect(await source({})).toEqual({ revocations: [] });
    const record = recordOf(1);
    const event = session(randomUUID());
    record.events.push(event, session(randomUUID()));
    await bus.respond(LIVE_REVOCATIONS_REQUEST, (request) => record.source(request as LiveRevocationsRequest));
    expect(await source({})).toEqual({ revocations: [record.events.sort((a, b) => (a.id < b.id ? -1 : 1))[0]], next: { kind: 'session', id: record.events[0]!.id } });
  });

  it('rejects an answer that is not a page of revocations', async () => {
    const bus = createLocalBus({ logger: silentLogger() });
    opened.push(bus);
    await bus.respond(LIVE_REVOCATIONS_REQUEST, async () => ({ revocations: [{ kind: 'everyone', id: 'x', expiresAt: 1 }] }));
    await expect(busRevocationSource(bus)({})).rejects.toThrow();
  });

  if (REAL.natsUrl) {
    const natsUrl = new URL(REAL.natsUrl);

    it('is asked across processes on real NATS, fails while no sso answers, and catches up after the bus was cut', async () => {
      const stream = `TEST_${randomUUID().slice(0, 8).toUpperCase()}`;
      const proxy = await startTcpProxy({ host: natsUrl.hostname, port: Number(natsUrl.port || 4222) });
      const sso = await createNatsBus({ servers: REAL.natsUrl!, logger: silentLogger(), stream, deleteStreamOnClose: true });
      const verifier = await createNatsBus({ servers: `nats://127.0.0.1:${proxy.port}`, logger: silentLogger(), stream });
      opened.push(verifier, sso, { close: proxy.stop });
      const record = recordOf(2);
      const early = claimsOf();
      record.events.push(session(early.sid!));

      // No sso on the bus yet: the verifier is not seeded, and retries.
      const set = createRevocationSet();
      const feed = await startRevocationFeed({ set, source: busRevocationSource(verifier), bus: verifier, logger: silentLogger() });
      try {
        expect(feed.seeded).toBe(false);
        const answering = await sso.respond(LIVE_REVOCATIONS_REQUEST, (request) => record.source(request as LiveRevocationsRequest));
        expect(await eventually(async () => feed.seeded, SETTLE_BUDGET_MS, 50)).toBe(true);
        expect(set.isRevoked(early)).toBe(true);

        const heard = claimsOf();
        await sso.publish('revocation.session', session(heard.sid!));
        expect(await eventually(async () => set.isRevoked(heard), SETTLE_BUDGET_MS, 10)).toBe(true);

        await proxy.stop();
        const missed = claimsOf();
        record.events.push(session(missed.sid!));
        await sso.publish('revocation.session', session(missed.sid!));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(set.isRevoked(missed)).toBe(false);
        await proxy.start();
        expect(await eventually(async () => set.isRevoked(missed), SETTLE_BUDGET_MS)).toBe(true);

        // A responder that fails is an error at once, not a timeout.
        await answering.unsubscribe();
        await sso.respond(LIVE_REVOCATIONS_REQUEST, async () => {
          throw new Error('database down');
        });
        await expect(verifier.request(LIVE_REVOCATIONS_REQUEST, {})).rejects.toThrow(/database down/);
      } finally {
        await feed.stop();
      }
    });
  }
});
