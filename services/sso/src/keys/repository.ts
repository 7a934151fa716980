import type { JWK } from 'jose';
import type { PrismaClient } from '../generated/prisma/client.js';

/** A signing key as stored; `privateKey` is still encrypted when `privateKeyEncrypted`. */
export interface StoredKey {
  kid: string;
  publicJwk: JWK;
  privateKey: string;
  privateKeyEncrypted: boolean;
  createdAt: Date;
  activatesAt: Date;
  retiredAt: Date | null;
  notAfter: Date | null;
}

export interface KeyRepository {
  /** Keys still published at `now` (no `notAfter`, or one in the future), newest first. */
  published(now: Date): Promise<StoredKey[]>;
  /** Keys not yet retired: the signing key, and a pending one after a rotation. */
  unretired(): Promise<StoredKey[]>;
  insert(key: Omit<StoredKey, 'createdAt' | 'retiredAt' | 'notAfter'>): Promise<void>;
  /** Retires every unretired key but `keep`: it stops signing at `retiredAt` and leaves the JWKS at `notAfter`. */
  retireAllBut(keep: string, retiredAt: Date, notAfter: Date): Promise<void>;
  /** Replaces a key's stored private key (encrypting one stored in plain form). */
  updatePrivateKey(kid: string, privateKey: string, encrypted: boolean): Promise<void>;
}

type Row = Awaited<ReturnType<PrismaClient['signingKey']['findMany']>>[number];

const toStored = (row: Row): StoredKey => ({
  kid: row.kid,
  publicJwk: row.publicJwk as JWK,
  privateKey: row.privateKey,
  privateKeyEncrypted: row.privateKeyEncrypted,
  createdAt: row.createdAt,
  activatesAt: row.activatesAt,
  retiredAt: row.retiredAt,
  notAfter: row.notAfter,
});

export function createKeyRepository(prisma: PrismaClient): KeyRepository {
  return {
    published: async (now) =>
      (
        await prisma.signingKey.findMany({
          where: { OR: [{ notAfter: null }, { notAfter: { gt: now } }] },
          orderBy: [{ activatesAt: 'desc' }, { kid: 'asc' }],
        })
      ).map(toStored),
    unretired: async () =>
      (await prisma.signingKey.findMany({ where: { retiredAt: null }, orderBy: [{ activatesAt: 'desc' }, { kid: 'asc' }] })).map(toStored),
    insert: async (key) => {
      await prisma.signingKey.create({
        data: {
          kid: key.kid,
          publicJwk: key.publicJwk as object,
          privateKey: key.privateKey,
          privateKeyEncrypted: key.privateKeyEncrypted,
          activatesAt: key.activatesAt,
        },
      });
    },
    retireAllBut: async (keep, retiredAt, notAfter) => {
      await prisma.signingKey.updateMany({ where: { retiredAt: null, kid: { not: keep } }, data: { retiredAt, notAfter } });
    },
    updatePrivateKey: async (kid, privateKey, encrypted) => {
      await prisma.signingKey.update({ where: { kid }, data: { privateKey, privateKeyEncrypted: encrypted } });
    },
  };
}
