import { revocationSubject, type LiveRevocationsPage, type LiveRevocationsRequest, type RevocationEvent } from '@app/contracts';
import { enqueueEvent, type RawExecutor, type SqlSession } from '@app/platform';
import { Prisma, type PrismaClient } from '../generated/prisma/client.js';

/** sso's Postgres schema, where its outbox lives. */
const SSO_SCHEMA = 'sso';

export interface ClaimedRefreshToken {
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
  /** Starts a family (a sign-in) with its first token. */
  insert(token: { id: string; tokenHash: string; familyId: string; identityId: string; credentialId: string | null; clientId?: string; scope?: string; expiresAt: Date }): Promise<void>;
  /**
   * A refresh in one statement, whatever the family's size: moves the family of a live token
   * on to the next generation (only when the token is the family's current one and the family
   * is unrevoked) and, only when that claim won, inserts its successor of that generation;
   * then returns the claimed token's family. Of two concurrent claims of one token exactly
   * one gets a row: both meet on the family's row, and the second, once the first commits,
   * finds the generation moved. A revocation takes the same row, so a refresh that raced it
   * either committed before (and its successor is revoked with the family) or sees it.
   */
  rotate(tokenHash: string, now: Date, next: { id: string; tokenHash: string; expiresAt: Date }): Promise<ClaimedRefreshToken | undefined>;
  /** The family of a token that exists but is spent (its family moved past it), or undefined. */
  spentFamily(tokenHash: string): Promise<string | undefined>;
  /** A token that would be accepted now: its family's current one, unexpired, the family unrevoked. */
  live(tokenHash: string, now: Date): Promise<LiveRefreshToken | undefined>;
  /** The family of a token by its hash, whatever its state, and the registered client it was issued to (null: none). */
  familyOf(tokenHash: string): Promise<{ familyId: string; clientId: string | null } | undefined>;
  /**
   * Revokes the families `which` names and, in the same transaction, records the revocations
   * `announce` makes of those that had a token issued since `issuedSince` (those whose access
   * tokens may still be live): see `record`. Answers how many families it revoked.
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

/**
 * `sql` runs the statements of every sign-in, refresh and introspection (insert, rotate,
 * spentFamily, live, familyOf) on the database port itself: through Prisma's raw API each
 * would also pay Prisma's query pipeline and driver adapter on the main thread, a cost of the
 * order of the statement's own. Revocations, rare and in one transaction with the outbox,
 * stay on Prisma.
 */
export function createRefreshTokenRepository(prisma: PrismaClient, sql: SqlSession): RefreshTokenRepository {
  return {
    insert: async (token) => {
      await sql.query(
        `WITH "family" AS (
           INSERT INTO "sso"."refresh_family" ("id", "identity_id", "credential_id", "client_id", "scope", "generation", "issued_at")
           VALUES ($1, $2, $3, $4, $5, 1, $9)
         )
         INSERT INTO "sso"."refresh_token" ("id", "token_hash", "family_id", "generation", "created_at", "expires_at")
         VALUES ($6, $7, $1, 1, $9, $8)`,
        // Node's clock, as rotate's: a revocation compares issued_at with Node's now minus a token's lifetime.
        [token.familyId, token.identityId, token.credentialId, token.clientId ?? null, token.scope ?? null, token.id, token.tokenHash, token.expiresAt, new Date()],
      );
    },
    rotate: async (tokenHash, now, next) => {
      const rows = await sql.query<{ id: string; identity_id: string; credential_id: string | null; client_id: string | null; scope: string | null }>(
        `WITH "claimed" AS (
           UPDATE "sso"."refresh_family" AS "family" SET "generation" = "family"."generation" + 1, "issued_at" = $2
           FROM "sso"."refresh_token" AS "token"
           WHERE "token"."token_hash" = $1 AND "family"."id" = "token"."family_id"
             AND "token"."generation" = "family"."generation" AND "token"."expires_at" > $2 AND "family"."revoked_at" IS NULL
           RETURNING "family"."id", "family"."identity_id", "family"."credential_id", "family"."client_id", "family"."scope", "family"."generation"
         ), "issued" AS (
           INSERT INTO "sso"."refresh_token" ("id", "token_hash", "family_id", "generation", "created_at", "expires_at")
           SELECT $3::uuid, $4::text, "id", "generation", $2::timestamptz, $5::timestamptz FROM "claimed"
         )
         SELECT "id", "identity_id", "credential_id", "client_id", "scope" FROM "claimed"`,
        [tokenHash, now, next.id, next.tokenHash, next.expiresAt],
      );
      const row = rows[0];
      return row ? { familyId: row.id, identityId: row.identity_id, credentialId: row.credential_id, clientId: row.client_id, scope: row.scope } : undefined;
    },
    spentFamily: async (tokenHash) => {
      const rows = await sql.query<{ family_id: string }>(
        `SELECT "token"."family_id" FROM "sso"."refresh_token" AS "token" JOIN "sso"."refresh_family" AS "family" ON "family"."id" = "token"."family_id"
         WHERE "token"."token_hash" = $1 AND "token"."generation" < "family"."generation"`,
        [tokenHash],
      );
      return rows[0]?.family_id;
    },
    live: async (tokenHash, now) => {
      // The same conditions as rotate's claim: what introspection calls active, a refresh accepts.
      const rows = await sql.query<{ family_id: string; identity_id: string; created_at: Date; expires_at: Date }>(
        `SELECT "token"."family_id", "family"."identity_id", "token"."created_at", "token"."expires_at"
         FROM "sso"."refresh_token" AS "token" JOIN "sso"."refresh_family" AS "family" ON "family"."id" = "token"."family_id"
         WHERE "token"."token_hash" = $1 AND "token"."generation" = "family"."generation"
           AND "token"."expires_at" > $2 AND "family"."revoked_at" IS NULL`,
        [tokenHash, now],
      );
      const row = rows[0];
      return row ? { familyId: row.family_id, identityId: row.identity_id, createdAt: row.created_at, expiresAt: row.expires_at } : undefined;
    },
    familyOf: async (tokenHash) => {
      const [row] = await sql.query<{ family_id: string; client_id: string | null }>(
        `SELECT t."family_id", f."client_id" FROM "sso"."refresh_token" t JOIN "sso"."refresh_family" f ON f."id" = t."family_id" WHERE t."token_hash" = $1`,
        [tokenHash],
      );
      return row && { familyId: row.family_id, clientId: row.client_id };
    },
    revoke: (which, now, issuedSince, announce) =>
      prisma.$transaction(async (tx) => {
        const where =
          'familyId' in which
            ? Prisma.sql`"id" = ${which.familyId}::uuid`
            : 'credentialId' in which
              ? Prisma.sql`"credential_id" = ${which.credentialId}::uuid`
              : which.exceptFamilyId
                ? Prisma.sql`"identity_id" = ${which.identityId}::uuid AND "id" <> ${which.exceptFamilyId}::uuid`
                : Prisma.sql`"identity_id" = ${which.identityId}::uuid`;
        const rows = await tx.$queryRaw<{ id: string; issued_at: Date }[]>`
          UPDATE "sso"."refresh_family" SET "revoked_at" = ${now}
          WHERE ${where} AND "revoked_at" IS NULL
          RETURNING "id", "issued_at"`;
        const live = rows.filter((row) => row.issued_at >= issuedSince).map((row) => row.id);
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
