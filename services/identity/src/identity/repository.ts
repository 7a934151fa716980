import { createPrismaClient, enqueueEvent, readFilteredPage, type CreateGuard, type Database, type FilteredTable, type ListFilters, type Page } from '@app/platform';
import { Prisma, PrismaClient, type Identity } from '../generated/prisma/client.js';
import type { IdentityFilters } from './schemas.js';

/** The Postgres schema this service owns; its outbox table lives there too. */
export const IDENTITY_SCHEMA = 'identity';

export type IdentityRow = Identity;

/** An event to record in the same transaction as the change it describes. */
export type EventFor = (row: IdentityRow) => { subject: string; payload: unknown };

export interface IdentityWrite {
  name?: string;
  email?: string;
  avatar?: string | null;
  roles?: string[];
  activated?: boolean;
}

/** Raised when a write would give two identities one email. */
export class UniqueViolation extends Error {
  constructor() {
    super('unique constraint violated');
    this.name = 'UniqueViolation';
  }
}

/** The update would leave no active admin; nothing was written. */
export class LastAdminViolation extends Error {
  constructor() {
    super('the last active admin would be demoted or deactivated');
    this.name = 'LastAdminViolation';
  }
}

/** The write's precondition (If-Match) does not hold for the identity as it is; nothing was written. */
export class PreconditionViolation extends Error {
  constructor() {
    super('the identity is not in the version the write was conditioned on');
    this.name = 'PreconditionViolation';
  }
}

/** A write's condition on the identity as it is, checked on its row locked in the write's transaction. */
export type RowPrecondition = (current: IdentityRow) => boolean;

const isActiveAdmin = (row: { roles: string[]; activated: boolean }) => row.activated && row.roles.includes('admin');

/** Where identities are stored. The service depends on this interface, never on Prisma. */
export interface IdentityRepository {
  findById(id: string): Promise<IdentityRow | null>;
  findByEmail(email: string): Promise<IdentityRow | null>;
  list(filters: IdentityFilters, page: Page, count: boolean): Promise<{ rows: IdentityRow[]; hasMore: boolean; total?: number }>;
  /**
   * Inserts and records the event atomically; rejects with UniqueViolation on a taken email.
   * `guard` claims an Idempotency-Key first in the transaction and keeps the answer last.
   */
  create(data: IdentityWrite & { name: string; email: string }, event: EventFor, guard?: CreateGuard<IdentityRow>): Promise<IdentityRow>;
  /**
   * Updates and records the event atomically; null when there is no such identity. Rejects
   * with LastAdminViolation when the update would leave no active admin, also under
   * concurrent updates (see the lock below), and with PreconditionViolation when
   * `precondition` does not hold for the row it locked.
   */
  update(id: string, data: IdentityWrite, event: EventFor, precondition?: RowPrecondition): Promise<IdentityRow | null>;
  close(): Promise<void>;
}

const isUniqueViolation = (error: unknown) =>
  error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002';

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
  return {
    findById: (id) => prisma.identity.findUnique({ where: { id } }),
    findByEmail: (email) => prisma.identity.findUnique({ where: { email } }),
    list: (filters, page, count) => readFilteredPage<IdentityRow>(prisma, IDENTITY_TABLE, filters as ListFilters, page, count),
    create: async (data, event, guard) => {
      try {
        return await prisma.$transaction(async (tx) => {
          await guard?.claim(tx);
          const row = await tx.identity.create({ data });
          const { subject, payload } = event(row);
          await enqueueEvent(tx, IDENTITY_SCHEMA, subject, payload);
          await guard?.remember(tx, row);
          return row;
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new UniqueViolation();
        throw error;
      }
    },
    update: async (id, data, event, precondition) => {
      try {
        return await prisma.$transaction(async (tx) => {
          if (data.roles !== undefined || data.activated === false) {
            // Every active admin's row, locked in one order: a concurrent demotion waits here,
            // then re-reads the rows the first one changed (READ COMMITTED re-checks the WHERE
            // of locked rows), so two admins demoting each other leave one admin, never none.
            const admins = await tx.$queryRaw<{ id: string }[]>`
              select id from "identity"."identity" where activated and 'admin' = any(roles) order by id for update`;
            const after = { roles: data.roles ?? ['admin'], activated: data.activated ?? true };
            if (admins.length === 1 && admins[0]!.id === id && !isActiveAdmin(after)) throw new LastAdminViolation();
          }
          if (precondition) {
            // Locked after the admins (never before: two demotions would wait on each other),
            // so no other write can change the row between this check and the update.
            const [current] = await tx.$queryRawUnsafe<IdentityRow[]>(
              `select ${IDENTITY_TABLE.select} from ${IDENTITY_TABLE.from} where id = $1::uuid for update`,
              id,
            );
            if (!current) return null;
            if (!precondition(current)) throw new PreconditionViolation();
          } else {
            const found = await tx.identity.findUnique({ where: { id }, select: { id: true } });
            if (!found) return null;
          }
          const row = await tx.identity.update({ where: { id }, data });
          const { subject, payload } = event(row);
          await enqueueEvent(tx, IDENTITY_SCHEMA, subject, payload);
          return row;
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new UniqueViolation();
        throw error;
      }
    },
    close: () => prisma.$disconnect(),
  };
}
