import { crudEventSubject, type CrudRecordEvent } from '@app/contracts';
import {
  countRows,
  createRecordWriter,
  filtersWhere,
  guardRows,
  quoteIdent,
  readFilteredPage,
  type CountPreference,
  type CreateGuard,
  type FilterColumn,
  type ListFilters,
  type Page,
  type RawQueryClient,
  type RowPrecondition,
  type SqlSession,
} from '@app/platform';
import { SQL_TYPES } from './columns.js';
import type { Domain } from './define-domain.js';

/*
 * How the generic repository talks to the database: through Prisma's raw API
 * ($queryRawUnsafe in an interactive $transaction), not through generated model delegates.
 *  - The kit serves tables it learns about at run time; a delegate looked up by name
 *    (`prisma[domain.name]`) would be as untyped as SQL, and the kit cannot import any
 *    service's generated client.
 *  - Create must be one atomic `INSERT ... ON CONFLICT DO NOTHING RETURNING`: "no row" is
 *    the 422, with no exception, so the event enqueued in the same transaction is simply
 *    skipped. Delegates either throw on the conflict (which aborts the whole transaction in
 *    Postgres) or, with createManyAndReturn + skipDuplicates, still need a second query.
 *  - It stays safe: every identifier comes from a definition that defineDomain checked
 *    against a strict pattern (and is quoted), and every value is a bound parameter with an
 *    explicit cast, so a request can never change the SQL text.
 * Writes go through Prisma: it owns the transaction the outbox event rides in. Reads (a
 * record, a page, a count) run on the database port itself: through Prisma's raw API a
 * 100-record page paid Prisma's query pipeline and its Decimal and Date objects, about a
 * fifth of crud's CPU per page (profile of the lists bench), for values that were turned back
 * into numbers and strings anyway.
 */

/** The part of a Prisma client the repository uses; a generated PrismaClient satisfies it. */
export interface PrismaRawClient extends PrismaRawSession {
  $transaction<T>(fn: (tx: PrismaRawSession) => Promise<T>): Promise<T>;
}

export interface PrismaRawSession {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
}

/** A record as it is answered: JSON-ready values (ISO timestamps, numbers for decimals). */
export type DomainRecord = Record<string, unknown>;

/** The values of a create or update body, already validated against the domain's schemas. */
export type RecordValues = Record<string, unknown>;

/** The filters of a list (field -> its conditions), already parsed by the domain's query schema. */
export type RecordFilters = ListFilters;

/**
 * A write's condition on the record as it is, checked on the row locked in the write's own
 * transaction (so no other write can slip between the check and the change); false leaves
 * the record untouched.
 */
export type RecordPrecondition = RowPrecondition<DomainRecord>;

/** The persistence port of a generic domain. */
export interface DomainRepository {
  findById(id: string): Promise<DomainRecord | undefined>;
  /**
   * One page of the matching records in its order, from its cursor or offset, plus whether a
   * next page exists (one row more is read, never a count) and its last record's sort key.
   */
  list(page: Page, filters: RecordFilters): Promise<{ records: DomainRecord[]; hasMore: boolean; last?: { value: unknown; id: string } }>;
  /** How many records match the filters, or the planner's estimate (for `Prefer: count=exact|estimated`). */
  count(filters: RecordFilters, count: CountPreference): Promise<number>;
  /**
   * Inserts and enqueues `crud.<domain>.created`; undefined when a unique value is taken.
   * `guard` claims an Idempotency-Key first in the transaction and keeps the answer last.
   */
  create(values: RecordValues, guard?: CreateGuard<DomainRecord>): Promise<DomainRecord | undefined>;
  /**
   * Updates and enqueues `crud.<domain>.updated` in one transaction; undefined when no record
   * has the id. Rejects with the kit's PreconditionViolation when `precondition` fails on the
   * locked row, and with its UniqueViolation when a unique value is taken.
   */
  update(id: string, values: RecordValues, precondition?: RecordPrecondition): Promise<DomainRecord | undefined>;
  /**
   * Deletes and enqueues `crud.<domain>.deleted` in one transaction; false when no record has
   * the id. Rejects with the kit's PreconditionViolation when `precondition` fails on the locked row.
   */
  delete(id: string, precondition?: RecordPrecondition): Promise<boolean>;
}

export interface RepositoryOptions {
  /** The Postgres schema of the owning service: the table and the outbox live in it. */
  schema: string;
  /** The owning service's database port, which reads run on (Prisma's client is on the same one). */
  database: SqlSession;
}

const FIELD_TYPES: Record<string, string> = { activated: 'boolean', createdAt: 'timestamptz', updatedAt: 'timestamptz', id: 'uuid' };

/** The generic repository of one domain, over the service's Prisma client. */
export function createDomainRepository(domain: Domain, prisma: PrismaRawClient, options: RepositoryOptions): DomainRepository {
  const table = `${quoteIdent(options.schema)}.${quoteIdent(domain.table)}`;
  const reads: RawQueryClient = { $queryRawUnsafe: <T>(sql: string, ...params: unknown[]) => options.database.query(sql, params) as Promise<T> };
  const typeOf: Record<string, string> = {
    ...FIELD_TYPES,
    ...Object.fromEntries(domain.columns.map((column) => [column.name, SQL_TYPES[column.kind]])),
  };
  /**
   * Each field under its own name, as its answer shows it: a timestamp (stored to the
   * millisecond) already as toISOString writes it, a decimal as a double. Made in JavaScript,
   * a Date parsed and a Number per value and row showed in the lists bench's profile. A list's ORDER BY names its table's column (readFilteredPage), so
   * these output names never decide an order.
   */
  const selectList = domain.fields
    .map((field) => {
      const name = quoteIdent(field);
      const type = typeOf[field];
      if (type === 'timestamptz') return `to_char(${name} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as ${name}`;
      if (type === 'numeric') return `${name}::float8 as ${name}`;
      return name;
    })
    .join(', ');
  const writable = new Set([...domain.columns.map((column) => column.name), 'activated']);

  /** A row as a record: the select list already answers every field, in field order, as a record shows it. */
  const toRecord = (row: Record<string, unknown>): DomainRecord => row as DomainRecord;

  const optional = new Set(domain.columns.filter((column) => !column.required).map((column) => column.name));
  // Every field may be sorted on (id too); the query schema offers a filter on all but id.
  const filterColumns: Record<string, FilterColumn> = Object.fromEntries(
    Object.entries(typeOf).map(([field, type]) => [field, { column: field, type, ...(optional.has(field) ? { nullable: true } : {}) }]),
  );
  const listed = { from: table, select: selectList, columns: filterColumns };
  const whereOf = (filters: RecordFilters, params: unknown[]) => filtersWhere(filters, filterColumns, params);

  /** Only columns the schema allows reach SQL; everything else in the object is ignored. */
  const entriesOf = (values: RecordValues) => Object.entries(values).filter(([field, value]) => writable.has(field) && value !== undefined);

  const event = (id: string, occurredAt: string): CrudRecordEvent => ({ domain: domain.name, id, occurredAt });

  /**
   * Creates, changes and deletes with their events in one transaction, a precondition checked on
   * the locked row. An unconditioned write reads nothing first: its own RETURNING says whether
   * the record exists.
   */
  const writer = createRecordWriter<PrismaRawSession, Record<string, unknown>>({
    transaction: (work) => prisma.$transaction(work),
    schema: options.schema,
    table: { from: table, select: selectList },
    readUnconditioned: false,
  });
  const onRow = (precondition: RecordPrecondition | undefined) => precondition && ((row: Record<string, unknown>) => precondition(toRecord(row)));
  const returned = async (rows: Promise<Record<string, unknown>[]>) => (await rows)[0];

  return {
    findById: async (id) => {
      const rows = await reads.$queryRawUnsafe<Record<string, unknown>[]>(`select ${selectList} from ${table} where "id" = $1::uuid`, id);
      return rows[0] ? toRecord(rows[0]) : undefined;
    },

    list: async (page, filters) => {
      const found = await readFilteredPage<DomainRecord>(reads, listed, filters, page, undefined);
      return { records: found.rows, hasMore: found.hasMore, ...(found.last ? { last: found.last } : {}) };
    },

    count: async (filters, count) => {
      const params: unknown[] = [];
      return countRows(reads, table, whereOf(filters, params), params, count);
    },

    create: async (values, guard) => {
      const entries = entriesOf(values);
      const sql =
        entries.length === 0
          ? `insert into ${table} default values on conflict do nothing returning ${selectList}`
          : `insert into ${table} (${entries.map(([field]) => quoteIdent(field)).join(', ')}) ` +
            `values (${entries.map(([field], i) => `$${i + 1}::${typeOf[field]}`).join(', ')}) ` +
            `on conflict do nothing returning ${selectList}`;
      const row = await writer.create(
        (tx) => returned(tx.$queryRawUnsafe(sql, ...entries.map(([, value]) => value))),
        (created) => ({ subject: crudEventSubject(domain.name, 'created'), payload: event(String(created.id), String(toRecord(created).createdAt)) }),
        guardRows(guard, toRecord),
      );
      return row && toRecord(row);
    },

    update: async (id, values, precondition) => {
      const entries = entriesOf(values);
      const assignments = [...entries.map(([field], i) => `${quoteIdent(field)} = $${i + 2}::${typeOf[field]}`), '"updatedAt" = now()'];
      const row = await writer.change(id, {
        precondition: onRow(precondition),
        write: (tx) =>
          returned(tx.$queryRawUnsafe(`update ${table} set ${assignments.join(', ')} where "id" = $1::uuid returning ${selectList}`, id, ...entries.map(([, value]) => value))),
        event: (updated) => ({ subject: crudEventSubject(domain.name, 'updated'), payload: event(id, String(toRecord(updated).updatedAt)) }),
      });
      return row ? toRecord(row) : undefined;
    },

    delete: async (id, precondition) =>
      (await writer.change(id, {
        precondition: onRow(precondition),
        write: (tx) => returned(tx.$queryRawUnsafe(`delete from ${table} where "id" = $1::uuid returning "id"`, id)),
        event: () => ({ subject: crudEventSubject(domain.name, 'deleted'), payload: event(id, new Date().toISOString()) }),
      })) !== null,
  };
}
