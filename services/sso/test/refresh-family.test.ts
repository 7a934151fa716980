import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createPrismaClient, migrate, migrateService } from '@app/platform';
import { openTestDependencies, testModes } from '@app/testing';
import { PrismaClient } from '../src/generated/prisma/client.js';
import { createSsoService } from '../src/index.js';
import { createRefreshTokenRepository, type RefreshTokenRepository } from '../src/tokens/repository.js';

const HOUR = 3_600_000;
const inAnHour = () => new Date(Date.now() + HOUR);
const tokenHash = () => randomUUID().replaceAll('-', '').padEnd(64, '0');

describe.each(testModes())('refresh-token families (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let repository: RefreshTokenRepository;
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    await migrateService(deps.database, createSsoService(), deps.logger);
    repository = createRefreshTokenRepository(createPrismaClient(PrismaClient, deps.database), deps.database);
  });
  afterAll(() => deps.dispose());

  /** A sign-in's first token; answers its family and hash. */
  const signIn = async (who: { identityId?: string; credentialId?: string } = {}) => {
    const familyId = randomUUID();
    const hash = tokenHash();
    await repository.insert({ id: randomUUID(), tokenHash: hash, familyId, identityId: who.identityId ?? randomUUID(), credentialId: who.credentialId ?? null, expiresAt: inAnHour() });
    return { familyId, hash };
  };
  /** Rotates `hash`; answers the successor's hash when the claim won. */
  const rotate = async (hash: string) => {
    const next = tokenHash();
    return (await repository.rotate(hash, new Date(), { id: randomUUID(), tokenHash: next, expiresAt: inAnHour() })) ? next : undefined;
  };
  const nothingToAnnounce = () => [];

  it('rotates a family 60 times, and then still knows each of its spent tokens as spent', async () => {
    const { familyId, hash } = await signIn();
    const chain = [hash];
    for (let i = 0; i < 60; i++) chain.push((await rotate(chain.at(-1)!))!);
    expect(chain.every(Boolean)).toBe(true);
    expect(await repository.live(chain.at(-1)!, new Date())).toMatchObject({ familyId });
    for (const spent of [chain[0]!, chain[30]!, chain[59]!]) {
      expect(await rotate(spent)).toBeUndefined();
      expect(await repository.spentFamily(spent)).toBe(familyId);
      expect(await repository.live(spent, new Date())).toBeUndefined();
    }
    expect(await repository.spentFamily(chain.at(-1)!)).toBeUndefined();
  });

  it('revokes a long family by id: its latest token is refused and no longer live', async () => {
    const { familyId, hash } = await signIn();
    let latest = hash;
    for (let i = 0; i < 55; i++) latest = (await rotate(latest))!;
    expect(await repository.revoke({ familyId }, new Date(), new Date(0), nothingToAnnounce)).toBe(1);
    expect(await rotate(latest)).toBeUndefined();
    expect(await repository.live(latest, new Date())).toBeUndefined();
    // Revoked is not spent: only reuse names a family to revoke.
    expect(await repository.spentFamily(latest)).toBeUndefined();
  });

  it('lets exactly one of ten concurrent claims of one token win, and writes one successor', async () => {
    const { familyId, hash } = await signIn();
    const successors = await Promise.all(Array.from({ length: 10 }, () => rotate(hash)));
    const won = successors.filter((successor): successor is string => successor !== undefined);
    expect(won).toHaveLength(1);
    expect(await repository.live(won[0]!, new Date())).toMatchObject({ familyId });
    expect(await deps.database.query('select count(*)::int as n from "sso"."refresh_token" where family_id = $1', [familyId])).toEqual([{ n: 2 }]);
  });

  it('refuses an expired token, and does not call it spent', async () => {
    const familyId = randomUUID();
    const hash = tokenHash();
    await repository.insert({ id: randomUUID(), tokenHash: hash, familyId, identityId: randomUUID(), credentialId: null, expiresAt: new Date(Date.now() - 1) });
    expect(await rotate(hash)).toBeUndefined();
    expect(await repository.live(hash, new Date())).toBeUndefined();
    expect(await repository.spentFamily(hash)).toBeUndefined();
  });

  it("revokes an identity's families but the one that asked, and a credential's families only", async () => {
    const identityId = randomUUID();
    const credentialId = randomUUID();
    const asking = await signIn({ identityId, credentialId });
    const other = await signIn({ identityId, credentialId });
    const otherLatest = (await rotate(other.hash))!;
    const stranger = await signIn({ credentialId: randomUUID() });

    expect(await repository.revoke({ identityId, exceptFamilyId: asking.familyId }, new Date(), new Date(0), nothingToAnnounce)).toBe(1);
    expect(await rotate(otherLatest)).toBeUndefined();
    const askingLatest = (await rotate(asking.hash))!;
    expect(askingLatest).toBeDefined();

    expect(await repository.revoke({ credentialId }, new Date(), new Date(0), nothingToAnnounce)).toBe(1);
    expect(await rotate(askingLatest)).toBeUndefined();
    expect(await repository.live(stranger.hash, new Date())).toBeDefined();
  });

  it('announces only the families that issued a token since the cut, in the transaction of the revocation', async () => {
    const identityId = randomUUID();
    const quiet = await signIn({ identityId });
    const rotatedLater = await signIn({ identityId });
    const cut = new Date(Date.now() + 10);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const active = await signIn({ identityId });
    // Signed in before the cut, refreshed after it: its latest access token is recent.
    await rotate(rotatedLater.hash);
    let announced: string[] = [];
    const revoked = await repository.revoke({ identityId }, new Date(), cut, (families) => {
      announced = families;
      return [];
    });
    expect(revoked).toBe(3);
    expect(announced.sort()).toEqual([active.familyId, rotatedLater.familyId].sort());
    expect(announced).not.toContain(quiet.familyId);
  });
});

describe.each(testModes())('the refresh_family migration (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let earlier: string;
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    // The migrations before refresh_family, applied alone: tokens as they were stored then.
    const all = createSsoService().migrations!;
    earlier = await mkdtemp(join(tmpdir(), 'sso-migrations-'));
    for (const name of (await readdir(all)).filter((name) => name < '20261127190000')) await cp(join(all, name), join(earlier, name), { recursive: true });
  });
  afterAll(async () => {
    await rm(earlier, { recursive: true, force: true });
    await deps.dispose();
  });

  it('back-fills a family per sign-in: the unused token stays usable, spent ones stay spent, a revoked family stays revoked', async () => {
    const service = createSsoService();
    await migrate(deps.database, { schema: 'sso', directory: earlier, kitTables: ['outbox', 'idempotency'], logger: deps.logger });
    const identityId = randomUUID();
    const [rotated, revoked, allSpent] = [randomUUID(), randomUUID(), randomUUID()];
    const row = (hash: string, familyId: string, createdMs: number, usedMs: number | null, revokedMs: number | null = null) =>
      deps.database.query(
        `insert into "sso"."refresh_token" (id, token_hash, family_id, identity_id, credential_id, client_id, scope, created_at, expires_at, used_at, revoked_at)
         values ($1, $2, $3, $4, null, 'app', 'openid', to_timestamp($5 / 1000.0), now() + interval '1 hour', to_timestamp($6 / 1000.0), to_timestamp($7 / 1000.0))`,
        [randomUUID(), hash, familyId, identityId, createdMs, usedMs, revokedMs],
      );
    const t = Date.now() - HOUR;
    await row('r1', rotated, t, t + 1_000);
    await row('r2', rotated, t + 1_000, t + 2_000);
    await row('r3', rotated, t + 2_000, null);
    await row('v1', revoked, t, t + 1_000, t + 5_000);
    await row('v2', revoked, t + 1_000, null, t + 5_000);
    await row('s1', allSpent, t, t + 1_000);

    await migrateService(deps.database, service, deps.logger);
    const repository = createRefreshTokenRepository(createPrismaClient(PrismaClient, deps.database), deps.database);
    expect(await repository.live('r3', new Date())).toMatchObject({ familyId: rotated, identityId });
    expect(await repository.spentFamily('r1')).toBe(rotated);
    expect(await repository.spentFamily('r2')).toBe(rotated);
    expect(await repository.rotate('r3', new Date(), { id: randomUUID(), tokenHash: 'r4', expiresAt: inAnHour() })).toEqual({
      familyId: rotated,
      identityId,
      credentialId: null,
      clientId: 'app',
      scope: 'openid',
    });
    expect(await repository.live('v2', new Date())).toBeUndefined();
    expect(await repository.spentFamily('s1')).toBe(allSpent);
    expect(await repository.live('s1', new Date())).toBeUndefined();
  });
});
