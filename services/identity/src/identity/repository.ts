import { createPrismaClient, createRecordWriter, isUuid, readFilteredPage, readTableRow, type Database, type FilteredTable, type ListFilters, type RecordRepository } from '@app/platform';
import { PrismaClient, type Identity, type Prisma } from '../generated/prisma/client.js';
import type { IdentityFilters } from './schemas.js';

/** The Postgres schema this service owns; its outbox table lives there too. */
export const IDENTITY_SCHEMA = 'identity';

export type IdentityRow = Identity;

export interface IdentityWrite {
  name?: string;
  email?: string;
  avatar?: string | null;
  roles?: string[];
  activated?: boolean;
}

/** The update would leave no active admin; nothing was written. */
export class LastAdminViolation extends Error {
  constructor() {
    super('the last active admin would be demoted or deactivated');
    this.name = 'LastAdminViolation';
  }
}

const isActiveAdmin = (row: { roles: string[]; activated: boolean }) => row.activated && row.roles.includes('admin');

/**
 * Where identities are stored. The service depends on this interface, never on Prisma. An
 * update also rejects with LastAdminViolation when it would leave no active admin, also under
 * concurrent updates (see keepAnAdmin).
 */
export interface IdentityRepository extends RecordRepository<IdentityRow, IdentityFilters, IdentityWrite & { name: string; email: string }, IdentityWrite> {
  findByEmail(email: string): Promise<IdentityRow | null>;
}

/** The identity table as its list reads it: rows shaped as Prisma's, every filterable and sortable field's column. */
const IDENTITY_TABLE: FilteredTable = {
  from: '"identity"."identity"',
  select: 'id, name, email, avatar, roles, created_at as "createdAt", updated_at as "updatedAt", activated',
  columns: {
    id: { column: 'id', type: 'uuid' },
    name: { column: 'name', type: 'text' },
    email: { column: 'email', type: 'text' },
    avatar: { column: 'avatar', type: 'text' },
    // An array: filtering on a role means "holds this role".
    roles: { column: 'roles', type: 'text', array: true },
    activated: { column: 'activated', type: 'boolean' },
    createdAt: { column: 'created_at', type: 'timestamptz' },
    updatedAt: { column: 'updated_at', type: 'timestamptz' },
  },
};

export function createIdentityRepository(database: Database): IdentityRepository {
  const prisma = createPrismaClient(PrismaClient, database);
  const writer = createRecordWriter<Prisma.TransactionClient, IdentityRow>({
    transaction: (work) => prisma.$transaction(work),
    schema: IDENTITY_SCHEMA,
    table: IDENTITY_TABLE,
    readUnconditioned: true,
  });
  /**
   * Every active admin's row, locked in one order: a concurrent demotion waits here, then
   * re-reads the rows the first one changed (READ COMMITTED re-checks the WHERE of locked rows),
   * so two admins demoting each other leave one admin, never none. The writer locks the
   * identity's own row only after this (never before: two demotions would wait on each other).
   */
  const keepAnAdmin = (id: string, data: IdentityWrite) => async (tx: Prisma.TransactionClient) => {
    if (data.roles === undefined && data.activated !== false) return;
    const admins = await tx.$queryRaw<{ id: string }[]>`
      select id from "identity"."identity" where activated and 'admin' = any(roles) order by id for update`;
    const after = { roles: data.roles ?? ['admin'], activated: data.activated ?? true };
    if (admins.length === 1 && admins[0]!.id === id && !isActiveAdmin(after)) throw new LastAdminViolation();
  };
  return {
    // The look-ups of every sign-in, on the database port itself: Prisma's query pipeline cost
    // about as much main-thread time as the statement (profile of the browser sign-in).
    findById: async (id) => (isUuid(id) ? readTableRow<IdentityRow>(database, IDENTITY_TABLE, 'id = $1', [id]) : null),
    findByEmail: (email) => readTableRow<IdentityRow>(database, IDENTITY_TABLE, 'email = $1', [email]),
    list: (filters, page, count) => readFilteredPage<IdentityRow>(prisma, IDENTITY_TABLE, filters as ListFilters, page, count),
    create: async (data, event, guard) => (await writer.create((tx) => tx.identity.create({ data }), event, guard))!,
    update: (id, data, event, precondition) =>
      writer.change(id, { precondition, prepare: keepAnAdmin(id, data), write: (tx) => tx.identity.update({ where: { id }, data }), event }),
    close: () => prisma.$disconnect(),
  };
}
