import { createPrismaClient, enqueueEvent, readFilteredPage, type CreateGuard, type Database, type FilteredTable, type ListFilters, type Page } from '@app/platform';
import { Prisma, PrismaClient, type Credential } from '../generated/prisma/client.js';
import type { CredentialFilters } from './schemas.js';

/** The Postgres schema this service owns; its outbox table lives there too. */
export const CREDENTIALS_SCHEMA = 'credentials';

export type CredentialRow = Credential;

/** An event to record in the same transaction as the change it describes. */
export type EventFor = (row: CredentialRow) => { subject: string; payload: unknown };

export interface CredentialWrite {
  type?: string;
  secretHash?: string | null;
  keyPrefix?: string | null;
  keyHash?: string | null;
  subject?: string | null;
  activated?: boolean;
}

/** A write broke a unique rule: one LOCAL per identity, (provider, subject), an API key's hash. */
export class UniqueViolation extends Error {
  constructor() {
    super('unique constraint violated');
    this.name = 'UniqueViolation';
  }
}

/** The write's precondition (If-Match) does not hold for the credential as it is; nothing was written. */
export class PreconditionViolation extends Error {
  constructor() {
    super('the credential is not in the version the write was conditioned on');
    this.name = 'PreconditionViolation';
  }
}

/** A write's condition on the credential as it is, checked on its row locked in the write's transaction. */
export type RowPrecondition = (current: CredentialRow) => boolean;

/** Where credentials are stored. The service depends on this interface, never on Prisma. */
export interface CredentialRepository {
  findById(id: string): Promise<CredentialRow | null>;
  findLocal(identityId: string): Promise<CredentialRow | null>;
  /** The API key stored under this keyed hash (unique index). */
  findByKeyHash(keyHash: string): Promise<CredentialRow | null>;
  /** The GOOGLE or GITHUB credential holding this upstream subject (unique per provider). */
  findBySubject(provider: string, subject: string): Promise<CredentialRow | null>;
  /** A legacy API key (`ak_<prefix>_…`) not yet moved to a keyed hash. */
  findByLegacyPrefix(prefix: string): Promise<CredentialRow | null>;
  list(filters: CredentialFilters, page: Page, count: boolean): Promise<{ rows: CredentialRow[]; hasMore: boolean; total?: number }>;
  create(data: CredentialWrite & { identityId: string; provider: string; type: string }, event: EventFor, guard?: CreateGuard<CredentialRow>): Promise<CredentialRow>;
  /** Null when there is no such credential; rejects with PreconditionViolation when `precondition` fails on the locked row. */
  update(id: string, data: CredentialWrite, event: EventFor, precondition?: RowPrecondition): Promise<CredentialRow | null>;
  /** Null when there is no such credential; rejects with PreconditionViolation when `precondition` fails on the locked row. */
  delete(id: string, event: EventFor, precondition?: RowPrecondition): Promise<CredentialRow | null>;
  /**
   * Records a successful use, and a rehashed secret when the argon2 costs changed, or a legacy
   * API key's keyed hash (its prefix and unkeyed hash then go). No event.
   */
  markUsed(id: string, rehash?: { secretHash: string } | { keyHash: string }): Promise<void>;
  /**
   * The key named `name`, created from `generate()` by whichever replica asks first; every
   * later call, in any process, gets the same bytes.
   */
  serverKey(name: string, generate: () => Buffer): Promise<Buffer>;
  close(): Promise<void>;
}

const isUniqueViolation = (error: unknown) =>
  error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002';

/** The credential table as its list reads it: rows shaped as Prisma's, every filterable and sortable field's column. */
const CREDENTIAL_TABLE: FilteredTable = {
  from: '"credentials"."credential"',
  select:
    'id, identity_id as "identityId", provider, type, secret_hash as "secretHash", key_prefix as "keyPrefix", key_hash as "keyHash", ' +
    'subject, created_at as "createdAt", updated_at as "updatedAt", activated, last_used_at as "lastUsedAt"',
  columns: {
    identity_id: { column: 'identity_id', type: 'uuid' },
    provider: { column: 'provider', type: 'text' },
    type: { column: 'type', type: 'text' },
    subject: { column: 'subject', type: 'text' },
    activated: { column: 'activated', type: 'boolean' },
    createdAt: { column: 'created_at', type: 'timestamptz' },
    updatedAt: { column: 'updated_at', type: 'timestamptz' },
    lastUsedAt: { column: 'last_used_at', type: 'timestamptz' },
  },
};

export function createCredentialRepository(database: Database): CredentialRepository {
  const prisma = createPrismaClient(PrismaClient, database);
  /**
   * The credential, locked for the rest of the transaction, with the precondition checked on
   * it: a concurrent write waits here and then sees what the first one left.
   */
  const lockedRow = async (tx: Prisma.TransactionClient, id: string, precondition: RowPrecondition): Promise<CredentialRow | null> => {
    const [row] = await tx.$queryRawUnsafe<CredentialRow[]>(`select ${CREDENTIAL_TABLE.select} from ${CREDENTIAL_TABLE.from} where id = $1::uuid for update`, id);
    if (row && !precondition(row)) throw new PreconditionViolation();
    return row ?? null;
  };
  const translated = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (isUniqueViolation(error)) throw new UniqueViolation();
      throw error;
    }
  };
  return {
    findById: (id) => prisma.credential.findUnique({ where: { id } }),
    findLocal: (identityId) => prisma.credential.findFirst({ where: { identityId, provider: 'LOCAL' } }),
    findByKeyHash: (keyHash) => prisma.credential.findUnique({ where: { keyHash } }),
    findBySubject: (provider, subject) => prisma.credential.findUnique({ where: { provider_subject: { provider, subject } } }),
    findByLegacyPrefix: (keyPrefix) => prisma.credential.findFirst({ where: { keyPrefix, keyHash: null, provider: 'API_KEY' } }),
    list: (filters, page, count) => readFilteredPage<CredentialRow>(prisma, CREDENTIAL_TABLE, filters as ListFilters, page, count),
    create: (data, event, guard) =>
      translated(() =>
        prisma.$transaction(async (tx) => {
          await guard?.claim(tx);
          const row = await tx.credential.create({ data });
          const { subject, payload } = event(row);
          await enqueueEvent(tx, CREDENTIALS_SCHEMA, subject, payload);
          await guard?.remember(tx, row);
          return row;
        }),
      ),
    update: (id, data, event, precondition) =>
      translated(() =>
        prisma.$transaction(async (tx) => {
          const found = precondition ? await lockedRow(tx, id, precondition) : await tx.credential.findUnique({ where: { id }, select: { id: true } });
          if (!found) return null;
          const row = await tx.credential.update({ where: { id }, data });
          const { subject, payload } = event(row);
          await enqueueEvent(tx, CREDENTIALS_SCHEMA, subject, payload);
          return row;
        }),
      ),
    delete: (id, event, precondition) =>
      prisma.$transaction(async (tx) => {
        const found = precondition ? await lockedRow(tx, id, precondition) : await tx.credential.findUnique({ where: { id } });
        if (!found) return null;
        await tx.credential.delete({ where: { id } });
        const { subject, payload } = event(found);
        await enqueueEvent(tx, CREDENTIALS_SCHEMA, subject, payload);
        return found;
      }),
    markUsed: async (id, rehash) => {
      // Raw SQL so a use moves lastUsedAt without touching updatedAt (Prisma's @updatedAt
      // would); a credential revoked meanwhile simply matches no row.
      if (rehash && 'keyHash' in rehash) {
        // Only while still legacy: a new secret set meanwhile (key_hash no longer null) wins.
        await translated(() =>
          prisma.$executeRawUnsafe(
            `update "credentials"."credential" set last_used_at = now(), key_hash = $2, secret_hash = null, key_prefix = null where id = $1::uuid and key_hash is null`,
            id,
            rehash.keyHash,
          ),
        );
        return;
      }
      await prisma.$executeRawUnsafe(
        `update "credentials"."credential" set last_used_at = now(), secret_hash = coalesce($2, secret_hash) where id = $1::uuid`,
        id,
        rehash?.secretHash ?? null,
      );
    },
    serverKey: async (name, generate) => {
      await prisma.serverKey.createMany({ data: [{ name, key: new Uint8Array(generate()) }], skipDuplicates: true });
      const { key } = await prisma.serverKey.findUniqueOrThrow({ where: { name } });
      return Buffer.from(key);
    },
    close: () => prisma.$disconnect(),
  };
}
