import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { revocationSubject, type RevocationEvent } from '@app/contracts';
import { createPrismaClient, migrateService } from '@app/platform';
import { openTestDependencies, testModes } from '@app/testing';
import { PrismaClient } from '../src/generated/prisma/client.js';
import { createSsoService } from '../src/index.js';
import { cacheLiveRefreshTokens, LIVE_CACHE_TTL_MS, type CachedRefreshTokens } from '../src/tokens/live-cache.js';
import { createRefreshTokenRepository, type RefreshTokenRepository } from '../src/tokens/repository.js';

const HOUR = 3_600_000;
const tokenHash = () => randomUUID().replaceAll('-', '').padEnd(64, '0');
const nothingToAnnounce = () => [];

describe.each(testModes())('refresh-token introspection from memory (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let cache: CachedRefreshTokens;
  let tokens: RefreshTokenRepository;
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    await migrateService(deps.database, createSsoService(), deps.logger);
    cache = await cacheLiveRefreshTokens(createRefreshTokenRepository(createPrismaClient(PrismaClient, deps.database), deps.database), deps);
    tokens = cache.repository;
  });
  afterAll(async () => {
    await cache.stop();
    await deps.dispose();
  });

  /** A sign-in's first token, introspected once (so held in memory); answers its family and hash. */
  const hotSignIn = async (who: { identityId?: string; credentialId?: string } = {}) => {
    const familyId = randomUUID();
    const hash = tokenHash();
    const identityId = who.identityId ?? randomUUID();
    await tokens.insert({ id: randomUUID(), tokenHash: hash, familyId, identityId, credentialId: who.credentialId ?? null, expiresAt: new Date(Date.now() + HOUR) });
    expect(await tokens.live(hash, new Date())).toMatchObject({ familyId, identityId });
    return { familyId, hash, identityId };
  };
  /** Revoked in the table behind the cache's back, as another replica's revocation would be. */
  const revokeElsewhere = (familyId: string) => deps.database.query('UPDATE "sso"."refresh_family" SET "revoked_at" = now() WHERE "id" = $1', [familyId]);
  /** Introspects at a fixed instant (so the entry's time is never up) until `hash` is not live or 10 s passed. */
  const liveAfterEvent = async (hash: string, at: Date) => {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (!(await tokens.live(hash, at))) return false;
      await sleep(20);
    }
    return true;
  };
  const announce = (event: Omit<RevocationEvent, 'expiresAt'>) =>
    deps.bus.publish(revocationSubject(event.kind), { ...event, expiresAt: Math.floor(Date.now() / 1000) + 60 });

  it('answers a hot token from memory for at most LIVE_CACHE_TTL_MS, then reads the table again', async () => {
    const at = new Date();
    const { familyId, hash } = await hotSignIn();
    await revokeElsewhere(familyId);
    // Still held: nothing dropped it, and its time is not up.
    expect(await tokens.live(hash, at)).toMatchObject({ familyId });
    expect(await tokens.live(hash, new Date(Date.now() + LIVE_CACHE_TTL_MS + 1))).toBeUndefined();
  });

  it('keeps only live answers: an unknown or spent token is read each time', async () => {
    const unknown = tokenHash();
    const before = cache.size;
    expect(await tokens.live(unknown, new Date())).toBeUndefined();
    expect(cache.size).toBe(before);
  });

  it('ends a token rotated here at once, and its successor is live', async () => {
    const at = new Date();
    const { familyId, hash } = await hotSignIn();
    const successor = tokenHash();
    expect(await tokens.rotate(hash, new Date(), { id: randomUUID(), tokenHash: successor, expiresAt: new Date(Date.now() + HOUR) })).toMatchObject({ familyId });
    expect(await tokens.live(hash, at)).toBeUndefined();
    expect(await tokens.live(successor, at)).toMatchObject({ familyId });
  });

  it('ends tokens revoked here at once: by family, by identity (sparing the asking family), by credential', async () => {
    const at = new Date();
    const byFamily = await hotSignIn();
    await tokens.revoke({ familyId: byFamily.familyId }, new Date(), new Date(0), nothingToAnnounce);
    expect(await tokens.live(byFamily.hash, at)).toBeUndefined();

    const identityId = randomUUID();
    const asking = await hotSignIn({ identityId });
    const other = await hotSignIn({ identityId });
    await tokens.revoke({ identityId, exceptFamilyId: asking.familyId }, new Date(), new Date(0), nothingToAnnounce);
    expect(await tokens.live(other.hash, at)).toBeUndefined();
    expect(await tokens.live(asking.hash, at)).toMatchObject({ familyId: asking.familyId });

    const credentialId = randomUUID();
    const byCredential = await hotSignIn({ credentialId });
    await tokens.revoke({ credentialId }, new Date(), new Date(0), nothingToAnnounce);
    expect(await tokens.live(byCredential.hash, at)).toBeUndefined();
  });

  it("drops what another replica's revocation events name, whatever its time left", async () => {
    const at = new Date();
    const session = await hotSignIn();
    const spared = await hotSignIn();
    await revokeElsewhere(session.familyId);
    await announce({ kind: 'session', id: session.familyId });
    expect(await liveAfterEvent(session.hash, at)).toBe(false);
    // Another family is not dropped by it.
    await revokeElsewhere(spared.familyId);
    expect(await tokens.live(spared.hash, at)).toMatchObject({ familyId: spared.familyId });

    const subject = await hotSignIn();
    await revokeElsewhere(subject.familyId);
    await announce({ kind: 'subject', id: subject.identityId, issuedBefore: Math.floor(Date.now() / 1000) });
    expect(await liveAfterEvent(subject.hash, at)).toBe(false);

    // A revocation this cache cannot place (an API key's) drops everything.
    const any = await hotSignIn();
    await revokeElsewhere(any.familyId);
    await announce({ kind: 'client', id: randomUUID(), issuedBefore: Math.floor(Date.now() / 1000) });
    expect(await liveAfterEvent(any.hash, at)).toBe(false);
  });

  describe('beside another replica (its own memory, the same database and shared cache)', () => {
    let other: CachedRefreshTokens;
    beforeAll(async () => {
      other = await cacheLiveRefreshTokens(createRefreshTokenRepository(createPrismaClient(PrismaClient, deps.database), deps.database), deps);
    });
    afterAll(() => other.stop());

    it('answers "not live" here as soon as the other replica answered its rotation, with no event', async () => {
      const at = new Date();
      const { familyId, hash } = await hotSignIn();
      expect(await other.repository.rotate(hash, new Date(), { id: randomUUID(), tokenHash: tokenHash(), expiresAt: new Date(Date.now() + HOUR) })).toMatchObject({ familyId });
      expect(await tokens.live(hash, at)).toBeUndefined();
    });

    it('answers "not live" here as soon as the other replica answered a revocation, with no event', async () => {
      const at = new Date();
      const byFamily = await hotSignIn();
      const byIdentity = await hotSignIn();
      // Held by the other replica too: its revocation drops its own entry and replaces the generation.
      expect(await other.repository.live(byFamily.hash, at)).toMatchObject({ familyId: byFamily.familyId });
      await other.repository.revoke({ familyId: byFamily.familyId }, new Date(), new Date(0), nothingToAnnounce);
      expect(await tokens.live(byFamily.hash, at)).toBeUndefined();
      expect(await other.repository.live(byFamily.hash, at)).toBeUndefined();
      await other.repository.revoke({ identityId: byIdentity.identityId }, new Date(), new Date(0), nothingToAnnounce);
      expect(await tokens.live(byIdentity.hash, at)).toBeUndefined();
    });

    it('keeps serving a token from memory when another is rotated', async () => {
      const at = new Date();
      const kept = await hotSignIn();
      const rotated = await hotSignIn();
      await other.repository.rotate(rotated.hash, new Date(), { id: randomUUID(), tokenHash: tokenHash(), expiresAt: new Date(Date.now() + HOUR) });
      // Revoked behind both caches' backs: only an answer from memory still calls it live.
      await revokeElsewhere(kept.familyId);
      expect(await tokens.live(kept.hash, at)).toMatchObject({ familyId: kept.familyId });
    });
  });

  it('serves nothing from memory while the shared cache cannot answer', async () => {
    const failing = { ...deps.cache, getMany: () => Promise.reject(new Error('the shared cache is down')), set: () => Promise.reject(new Error('the shared cache is down')) };
    const blind = await cacheLiveRefreshTokens(createRefreshTokenRepository(createPrismaClient(PrismaClient, deps.database), deps.database), { ...deps, cache: failing });
    try {
      const at = new Date();
      const { familyId, hash } = await hotSignIn();
      expect(await blind.repository.live(hash, at)).toMatchObject({ familyId });
      await revokeElsewhere(familyId);
      expect(await blind.repository.live(hash, at)).toBeUndefined();
      expect(blind.size).toBe(0);
    } finally {
      await blind.stop();
    }
  });

  it('never keeps an answer read beside a revocation: once it committed, the token is not live', async () => {
    for (let i = 0; i < 20; i++) {
      const at = new Date();
      const { familyId, hash } = await hotSignIn();
      // Let the entry's time run out so the reads below go to the table, beside the revocation.
      const later = new Date(Date.now() + LIVE_CACHE_TTL_MS + 1);
      await Promise.all([
        tokens.live(hash, later),
        tokens.revoke({ familyId }, new Date(), new Date(0), nothingToAnnounce),
        tokens.live(hash, later),
      ]);
      expect(await tokens.live(hash, at)).toBeUndefined();
    }
  });
});
