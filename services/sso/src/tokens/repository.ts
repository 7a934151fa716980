import { revocationSubject, type LiveRevocationsPage, type LiveRevocationsRequest, type RevocationEvent } from '@app/contracts';
import { enqueueEvent, type RawExecutor } from '@app/platform';
import { Prisma, type PrismaClient } from '../generated/prisma/client.js';

/** sso's Postgres schema, where its outbox lives. */
const SSO_SCHEMA = 'sso';

export interface ClaimedRefreshToken {
  id: string;
  familyId: string;
  identityId: string;
  credentialId: string | null;
  /** The registered client and scope of a browser sign-in's token; null otherwise. */
  clientId: string | null;
  scope: string | null;
}

export interface LiveRefreshToken {
  familyId: string;
  identityId: string;
  createdAt: Date;
  expiresAt: Date;
}

/** Which refresh tokens a revocation ends. */
export type RevokedSessions =
  | { familyId: string }
  /** Every sign-in of an identity, but the one that asked (its own password change). */
  | { identityId: string; exceptFamilyId?: string }
  /** Every sign-in made with a credential. */
  | { credentialId: string };

export interface RefreshTokenRepository {
  insert(token: { id: string; tokenHash: string; familyId: string; identityId: string; credentialId: string | null; clientId?: string; scope?: string; expiresAt: Date }): Promise<void>;
  /**
   * A refresh in one statement: marks a live token used and, only when that claim won, inserts
   * its successor (same family, identity and credential), then returns the claimed token. Of
   * two concurrent claims of one token exactly one gets a row (the other's UPDATE re-checks
   * `used_at` after the first commits), and the loser inserts nothing. A token of a revoked
   * family is refused too: a refresh that raced the revocation (reuse detected by a concurrent
   * loser, a sign-out) may have inserted its new token after the family's rows were marked,
   * and that token must not outlive its family. One round trip instead of two.
   */
  rotate(tokenHash: string, now: Date, next: { id: string; tokenHash: string; expiresAt: Date }): Promise<ClaimedRefreshToken | undefined>;
  /** The family of a token that exists but was already used, or undefined. */
  spentFamily(tokenHash: string): Promise<string | undefined>;
  /** A token that would be accepted now: unused, unrevoked, unexpired, its family unrevoked. */
  live(tokenHash: string, now: Date): Promise<LiveRefreshToken | undefined>;
  /** The family of a token by its hash, whatever its state. */
  familyOf(tokenHash: string): Promise<string | undefined>;
  /**
   * Revokes the refresh tokens `which` names and, in the same transaction, records the
   * revocations `announce` makes of the families that had a token issued since `issuedSince`
   * (those whose access tokens may still be live): see `record`. Answers how many tokens it revoked.
   */
  revoke(which: RevokedSessions, now: Date, issuedSince: Date, announce: (familyIds: string[]) => RevocationEvent[]): Promise<number>;
  /** Records revocations (sso's `revocation` table) and writes their events into sso's outbox, all in one transaction. */
  record(events: RevocationEvent[]): Promise<void>;
  /** A page of the revocations live at `nowSeconds`, in (kind, id) order after `request.after`. */
  liveRevocations(request: LiveRevocationsRequest, nowSeconds: number, limit: number): Promise<LiveRevocationsPage>;
  /** Deletes the revocations expired at `nowSeconds`; answers how many. */
  pruneRevocations(nowSeconds: number): Promise<number>;
}

/**
 * One revocation in the caller's transaction: its row (a later revocation of the same session,
 * identity or API key only moves the cut-off and expiry later) and its event in the outbox.
 */
async function recordRevocation(tx: RawExecutor, event: RevocationEvent): Promise<void> {
  await tx.$executeRawUnsafe(
    `insert into "sso"."revocation" (kind, id, issued_before, expires_at) values ($1, $2, $3, $4)
     on conflict (kind, id) do update set
       issued_before = greatest("revocation".issued_before, excluded.issued_before),
       expires_at = greatest("revocation".expires_at, excluded.expires_at)`,
    event.kind,
    event.id,
    event.issuedBefore ?? null,
    event.expiresAt,
  );
  await enqueueEvent(tx, SSO_SCHEMA, revocationSubject(event.kind), event);
}

export function createRefreshTokenRepository(prisma: PrismaClient): RefreshTokenRepository {
  return {
    insert: async (token) => {
      await prisma.refreshToken.create({ data: token });
    },
    rotate: async (tokenHash, now, next) => {
      const rows = await prisma.$queryRaw<{ id: string; family_id: string; identity_id: string; credential_id: string | null; client_id: string | null; scope: string | null }[]>`
        WITH "claimed" AS (
          UPDATE "sso"."refresh_token" AS "token" SET "used_at" = ${now}
          WHERE "token_hash" = ${tokenHash} AND "used_at" IS NULL AND "revoked_at" IS NULL AND "expires_at" > ${now}
            AND NOT EXISTS (
              SELECT 1 FROM "sso"."refresh_token" AS "sibling"
              WHERE "sibling"."family_id" = "token"."family_id" AND "sibling"."revoked_at" IS NOT NULL)
          RETURNING "id", "family_id", "identity_id", "credential_id", "client_id", "scope"
        ), "issued" AS (
          INSERT INTO "sso"."refresh_token" ("id", "token_hash", "family_id", "identity_id", "credential_id", "client_id", "scope", "created_at", "expires_at")
          SELECT ${next.id}::uuid, ${next.tokenHash}, "family_id", "identity_id", "credential_id", "client_id", "scope", ${now}, ${next.expiresAt} FROM "claimed"
        )
        SELECT "id", "family_id", "identity_id", "credential_id", "client_id", "scope" FROM "claimed"`;
      const row = rows[0];
      return row
        ? { id: row.id, familyId: row.family_id, identityId: row.identity_id, credentialId: row.credential_id, clientId: row.client_id, scope: row.scope }
        : undefined;
    },
    spentFamily: async (tokenHash) =>
      (await prisma.refreshToken.findFirst({ where: { tokenHash, usedAt: { not: null } }, select: { familyId: true } }))?.familyId,
    live: async (tokenHash, now) => {
      // The same conditions as rotate's claim: what introspection calls active, a refresh accepts.
      const rows = await prisma.$queryRaw<{ family_id: string; identity_id: string; created_at: Date; expires_at: Date }[]>`
        SELECT "family_id", "identity_id", "created_at", "expires_at" FROM "sso"."refresh_token" AS "token"
        WHERE "token_hash" = ${tokenHash} AND "used_at" IS NULL AND "revoked_at" IS NULL AND "expires_at" > ${now}
          AND NOT EXISTS (
            SELECT 1 FROM "sso"."refresh_token" AS "sibling"
            WHERE "sibling"."family_id" = "token"."family_id" AND "sibling"."revoked_at" IS NOT NULL)`;
      const row = rows[0];
      return row ? { familyId: row.family_id, identityId: row.identity_id, createdAt: row.created_at, expiresAt: row.expires_at } : undefined;
    },
    familyOf: async (tokenHash) => (await prisma.refreshToken.findUnique({ where: { tokenHash }, select: { familyId: true } }))?.familyId,
    revoke: (which, now, issuedSince, announce) =>
      prisma.$transaction(async (tx) => {
        const where =
          'familyId' in which
            ? Prisma.sql`"family_id" = ${which.familyId}::uuid`
            : 'credentialId' in which
              ? Prisma.sql`"credential_id" = ${which.credentialId}::uuid`
              : which.exceptFamilyId
                ? Prisma.sql`"identity_id" = ${which.identityId}::uuid AND "family_id" <> ${which.exceptFamilyId}::uuid`
                : Prisma.sql`"identity_id" = ${which.identityId}::uuid`;
        const rows = await tx.$queryRaw<{ family_id: string; created_at: Date }[]>`
          UPDATE "sso"."refresh_token" SET "revoked_at" = ${now}
          WHERE ${where} AND "revoked_at" IS NULL
          RETURNING "family_id", "created_at"`;
        const live = [...new Set(rows.filter((row) => row.created_at >= issuedSince).map((row) => row.family_id))];
        for (const event of announce(live)) await recordRevocation(tx, event);
        return rows.length;
      }),
    record: (events) =>
      prisma.$transaction(async (tx) => {
        for (const event of events) await recordRevocation(tx, event);
      }),
    liveRevocations: async ({ after }, nowSeconds, limit) => {
      const position = after ? Prisma.sql`AND ("kind", "id") > (${after.kind}, ${after.id})` : Prisma.empty;
      // One more than a page: whether another follows, without a count.
      const rows = await prisma.$queryRaw<{ kind: RevocationEvent['kind']; id: string; issued_before: bigint | null; expires_at: bigint }[]>`
        SELECT "kind", "id", "issued_before", "expires_at" FROM "sso"."revocation"
        WHERE "expires_at" > ${nowSeconds} ${position}
        ORDER BY "kind", "id" LIMIT ${limit + 1}`;
      const revocations = rows.slice(0, limit).map(
        (row): RevocationEvent => ({
          kind: row.kind,
          id: row.id,
          ...(row.issued_before === null ? {} : { issuedBefore: Number(row.issued_before) }),
          expiresAt: Number(row.expires_at),
        }),
      );
      const last = revocations.at(-1);
      return rows.length > limit && last ? { revocations, next: { kind: last.kind, id: last.id } } : { revocations };
    },
    pruneRevocations: (nowSeconds) => prisma.$executeRaw`DELETE FROM "sso"."revocation" WHERE "expires_at" <= ${nowSeconds}`,
  };
}
