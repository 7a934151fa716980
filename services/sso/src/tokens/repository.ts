import type { PrismaClient } from '../generated/prisma/client.js';

export interface ClaimedRefreshToken {
  id: string;
  familyId: string;
  identityId: string;
}

export interface RefreshTokenRepository {
  insert(token: { id: string; tokenHash: string; familyId: string; identityId: string; expiresAt: Date }): Promise<void>;
  /**
   * Marks a live token used and returns it, in one statement: of two concurrent claims of one
   * token exactly one gets a row (the other's UPDATE re-checks `used_at` after the first commits).
   */
  claim(tokenHash: string, now: Date): Promise<ClaimedRefreshToken | undefined>;
  /** The family of a token that exists but was already used, or undefined. */
  spentFamily(tokenHash: string): Promise<string | undefined>;
  /** The family of a token by its hash, whatever its state. */
  familyOf(tokenHash: string): Promise<string | undefined>;
  revokeFamily(familyId: string, now: Date): Promise<number>;
  revokeIdentity(identityId: string, now: Date): Promise<number>;
}

export function createRefreshTokenRepository(prisma: PrismaClient): RefreshTokenRepository {
  return {
    insert: async (token) => {
      await prisma.refreshToken.create({ data: token });
    },
    claim: async (tokenHash, now) => {
      const rows = await prisma.$queryRaw<{ id: string; family_id: string; identity_id: string }[]>`
        UPDATE "sso"."refresh_token" SET "used_at" = ${now}
        WHERE "token_hash" = ${tokenHash} AND "used_at" IS NULL AND "revoked_at" IS NULL AND "expires_at" > ${now}
        RETURNING "id", "family_id", "identity_id"`;
      const row = rows[0];
      return row ? { id: row.id, familyId: row.family_id, identityId: row.identity_id } : undefined;
    },
    spentFamily: async (tokenHash) =>
      (await prisma.refreshToken.findFirst({ where: { tokenHash, usedAt: { not: null } }, select: { familyId: true } }))?.familyId,
    familyOf: async (tokenHash) => (await prisma.refreshToken.findUnique({ where: { tokenHash }, select: { familyId: true } }))?.familyId,
    revokeFamily: async (familyId, now) =>
      (await prisma.refreshToken.updateMany({ where: { familyId, revokedAt: null }, data: { revokedAt: now } })).count,
    revokeIdentity: async (identityId, now) =>
      (await prisma.refreshToken.updateMany({ where: { identityId, revokedAt: null }, data: { revokedAt: now } })).count,
  };
}
