import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { LiveRevocationsRequest, RevocationEvent } from '@app/contracts';
import { busRevocationSource, createPrismaClient } from '@app/platform';
import { testModes } from '@app/testing';
import { PrismaClient } from '../src/generated/prisma/client.js';
import { createRefreshTokenRepository } from '../src/tokens/repository.js';
import { startSso, type SsoUnderTest } from './support.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe.each(testModes())('sso\'s record of revocations (%s)', (mode) => {
  let sso: SsoUnderTest;
  let prisma: PrismaClient;
  beforeAll(async () => {
    sso = await startSso(mode);
    prisma = createPrismaClient(PrismaClient, sso.deps.database);
  });
  afterAll(async () => {
    await prisma?.$disconnect();
    await sso?.close();
  });

  /** Every live revocation, page after page, as a verifier reads them (over the bus). */
  const readAll = async () => {
    const source = busRevocationSource(sso.deps.bus);
    const entries: RevocationEvent[] = [];
    let pages = 0;
    for (let request: LiveRevocationsRequest | undefined = {}; request; pages++) {
      const page = await source(request);
      entries.push(...page.revocations);
      request = page.next && { after: page.next };
    }
    return { entries, pages };
  };

  it('keeps the later cut-off and expiry when one subject is revoked twice, and drops it from the answer once expired', async () => {
    const repository = createRefreshTokenRepository(prisma, sso.deps.database);
    const subject = randomUUID();
    const expired = randomUUID();
    const now = nowSeconds();
    await repository.record([{ kind: 'subject', id: subject, issuedBefore: now, expiresAt: now + 100 }]);
    await repository.record([{ kind: 'subject', id: subject, issuedBefore: now - 50, expiresAt: now + 50 }]);
    await repository.record([{ kind: 'session', id: expired, expiresAt: now - 1 }]);
    const { entries } = await readAll();
    expect(entries.filter((entry) => entry.id === subject)).toEqual([{ kind: 'subject', id: subject, issuedBefore: now, expiresAt: now + 100 }]);
    expect(entries.some((entry) => entry.id === expired)).toBe(false);
    // Expired, it stays in the table until pruned.
    const count = async (ids: string[]) =>
      (await sso.deps.database.query<{ n: number }>(`select count(*)::int as n from "sso"."revocation" where id = any($1::text[])`, [ids]))[0]!.n;
    expect(await count([expired])).toBe(1);
    expect(await repository.pruneRevocations(nowSeconds())).toBeGreaterThanOrEqual(1);
    expect(await count([expired, subject])).toBe(1);
  });

  it('answers more revocations than fit one page in several pages, none twice, none missing', async () => {
    const expiresAt = nowSeconds() + 600;
    const ids = Array.from({ length: 1_050 }, () => randomUUID());
    // Written in one statement: recording them one by one is not what this is about.
    await sso.deps.database.query(`insert into "sso"."revocation" (kind, id, expires_at) select 'session', unnest($1::text[]), $2`, [ids, expiresAt]);
    const { entries, pages } = await readAll();
    const keys = entries.map((entry) => `${entry.kind}:${entry.id}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(ids.every((id) => keys.includes(`session:${id}`))).toBe(true);
    expect(pages).toBeGreaterThanOrEqual(2);
  });
});
