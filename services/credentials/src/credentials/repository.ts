import {
  createPrismaClient,
  createRecordWriter,
  isUuid,
  readFilteredPage,
  readTableRow,
  type Database,
  type EventFor,
  type FilteredTable,
  type ListFilters,
  type RecordRepository,
  type RowPrecondition,
} from '@app/platform';
import { PrismaClient, type Credential, type Prisma } from '../generated/prisma/client.js';
import type { CredentialFilters } from './schemas.js';

/** The Postgres schema this service owns; its outbox table lives there too. */
export const CREDENTIALS_SCHEMA = 'credentials';

export type CredentialRow = Credential;

export interface CredentialWrite {
  type?: string;
  secretHash?: string | null;
  keyPrefix?: string | null;
  keyHash?: string | null;
  subject?: string | null;
  activated?: boolean;
}

/**
 * Where credentials are stored. The service depends on this interface, never on Prisma. A
 * unique rule: one LOCAL per identity, (provider, subject), an API key's hash.
 */
export interface CredentialRepository
  extends RecordRepository<CredentialRow, CredentialFilters, CredentialWrite & { identityId: string; provider: string; type: string }, CredentialWrite> {
  findLocal(identityId: string): Promise<CredentialRow | null>;
  /** The API key stored under this keyed hash (unique index). */
  findByKeyHash(keyHash: string): Promise<CredentialRow | null>;
  /** The GOOGLE or GITHUB credential holding this upstream subject (unique per provider). */
  findBySubject(provider: string, subject: string): Promise<CredentialRow | null>;
  /** A legacy API key (`ak_<prefix>_…`) not yet moved to a keyed hash. */
  findByLegacyPrefix(prefix: string): Promise<CredentialRow | null>;
  /** Null when there is no such credential; rejects with the kit's PreconditionViolation when `precondition` fails on the locked row. */
  delete(id: string, event: EventFor<CredentialRow>, precondition?: RowPrecondition<CredentialRow>): Promise<CredentialRow | null>;
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
}

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
  const writer = createRecordWriter<Prisma.TransactionClient, CredentialRow>({
    transaction: (work) => prisma.$transaction(work),
    schema: CREDENTIALS_SCHEMA,
    table: CREDENTIAL_TABLE,
    readUnconditioned: true,
  });
  const first = (where: string, params: unknown[]) => readTableRow<CredentialRow>(database, CREDENTIAL_TABLE, where, params);
  return {
    // The look-ups of every sign-in and API key grant, on the database port itself: Prisma's
    // query pipeline cost about as much main-thread time as the statement (profile of the
    // browser sign-in).
    findById: async (id) => (isUuid(id) ? first(`id = $1`, [id]) : null),
    findLocal: async (identityId) => (isUuid(identityId) ? first(`identity_id = $1 and provider = 'LOCAL'`, [identityId]) : null),
    findByKeyHash: (keyHash) => first(`key_hash = $1`, [keyHash]),
    findBySubject: (provider, subject) => prisma.credential.findUnique({ where: { provider_subject: { provider, subject } } }),
    findByLegacyPrefix: (keyPrefix) => prisma.credential.findFirst({ where: { keyPrefix, keyHash: null, provider: 'API_KEY' } }),
    list: (filters, page, count) => readFilteredPage<CredentialRow>(prisma, CREDENTIAL_TABLE, filters as ListFilters, page, count),
    create: async (data, event, guard) => (await writer.create((tx) => tx.credential.create({ data }), event, guard))!,
    update: (id, data, event, precondition) => writer.change(id, { precondition, write: (tx) => tx.credential.update({ where: { id }, data }), event }),
    delete: (id, event, precondition) => writer.change(id, { precondition, write: (tx) => tx.credential.delete({ where: { id } }), event }),
    markUsed: async (id, rehash) => {
      // Raw SQL so a use moves lastUsedAt without touching updatedAt (Prisma's @updatedAt
      // would); a credential revoked meanwhile simply matches no row.
      if (rehash && 'keyHash' in rehash) {
        // Only while still legacy: a new secret set meanwhile (key_hash no longer null) wins.
        await prisma.$executeRawUnsafe(
          `update "credentials"."credential" set last_used_at = now(), key_hash = $2, secret_hash = null, key_prefix = null where id = $1::uuid and key_hash is null`,
          id,
          rehash.keyHash,
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
