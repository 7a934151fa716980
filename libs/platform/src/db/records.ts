import { enqueueEvent } from '../bus/outbox.js';
import type { CreateGuard, RawSession } from '../http/idempotency.js';
import type { CountPreference, Page } from '../http/list.js';
import type { FilteredPage } from './filter-sql.js';

/*
 * The write path of a record, for every repository that keeps records and an outbox (and every
 * generic domain of libs/crud): the change and its event commit in one transaction, and a
 * conditional write (If-Match) is checked on the row locked in that transaction, so no other
 * write can slip between the check and the change. The repository says how to insert, change
 * or delete its row; this says in which order, under which lock, and what a violation means.
 */

/** The write would give two records one value that must be unique; nothing was written. */
export class UniqueViolation extends Error {
  constructor() {
    super('unique constraint violated');
    this.name = 'UniqueViolation';
  }
}

/** The write's precondition (If-Match) does not hold for the record as it is; nothing was written. */
export class PreconditionViolation extends Error {
  constructor() {
    super('the record is not in the version the write was conditioned on');
    this.name = 'PreconditionViolation';
  }
}

/** Postgres reports a unique violation as 23505; Prisma wraps it (P2002, or P2010 for raw queries). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as {
    code?: string;
    meta?: { code?: string; driverAdapterError?: { cause?: { kind?: string; originalCode?: string } } };
  };
  if (e?.code === 'P2002') return true;
  const cause = e?.meta?.driverAdapterError?.cause;
  return cause?.kind === 'UniqueConstraintViolation' || cause?.originalCode === '23505' || e?.meta?.code === '23505';
}

/** A write's condition on the row as it is, checked on the row locked in the write's transaction. */
export type RowPrecondition<Row> = (current: Row) => boolean;

/** The event of a change, from the row as the change left it; recorded in the change's transaction. */
export type EventFor<Row> = (row: Row) => { subject: string; payload: unknown };

/**
 * What a repository of records offers its service: reads by id, a filtered page
 * (readFilteredPage), and the writes of the record writer below. A repository adds its own
 * finders and writes.
 */
export interface RecordRepository<Row, Filters, Create, Change> {
  findById(id: string): Promise<Row | null>;
  list(filters: Filters, page: Page, count: CountPreference | undefined): Promise<FilteredPage<Row>>;
  /**
   * Inserts and records the event atomically; rejects with UniqueViolation when a unique rule
   * is broken. `guard` claims an Idempotency-Key first in the transaction and keeps the answer last.
   */
  create(data: Create, event: EventFor<Row>, guard?: CreateGuard<Row>): Promise<Row>;
  /**
   * Updates and records the event atomically; null when there is no such record. Rejects with
   * PreconditionViolation when `precondition` fails on the locked row, with UniqueViolation
   * when a unique rule is broken.
   */
  update(id: string, data: Change, event: EventFor<Row>, precondition?: RowPrecondition<Row>): Promise<Row | null>;
  close(): Promise<void>;
}

export interface RecordWriterOptions<Tx extends RawSession> {
  /** Runs `work` in one transaction (Prisma's interactive `$transaction`). */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** The owning service's Postgres schema: its outbox receives the events. */
  schema: string;
  /** How one row is read back by id: `select <select> from <from>`, columns aliased to the row's fields. */
  table: { from: string; select: string };
  /**
   * Whether a write without a precondition reads its row first (unlocked) to learn that there
   * is none. A repository whose change itself answers "no row" (an UPDATE ... RETURNING) skips it.
   */
  readUnconditioned: boolean;
}

/** A change of one existing row (an update or a delete), with its event. */
export interface RowChange<Tx, Row> {
  /** If-Match as a condition on the row; PreconditionViolation when it does not hold. */
  precondition?: RowPrecondition<Row>;
  /** Runs first in the transaction, before the row is locked: a rule that must lock other rows first. */
  prepare?: (tx: Tx) => Promise<void>;
  /** The change: the row as it leaves it (a deleted row as it was), or nothing when there is no such row. */
  write: (tx: Tx) => Promise<Row | null | undefined>;
  event: EventFor<Row>;
}

export interface RecordWriter<Tx, Row> {
  /**
   * Inserts and records the event atomically; undefined when `insert` wrote nothing (ON CONFLICT
   * DO NOTHING). `guard` claims an Idempotency-Key first in the transaction and keeps the answer
   * last. Rejects with UniqueViolation when the insert breaks a unique rule.
   */
  create(insert: (tx: Tx) => Promise<Row | undefined>, event: EventFor<Row>, guard?: CreateGuard<Row>): Promise<Row | undefined>;
  /**
   * Changes the row `id` and records the event atomically; null when there is no such row.
   * Rejects with PreconditionViolation when the precondition fails on the locked row, and with
   * UniqueViolation when the change breaks a unique rule.
   */
  change(id: string, change: RowChange<Tx, Row>): Promise<Row | null>;
}

/** The write path of one table: see the comment at the top of this file. */
export function createRecordWriter<Tx extends RawSession, Row>(options: RecordWriterOptions<Tx>): RecordWriter<Tx, Row> {
  const { transaction, schema, table } = options;
  const record = (tx: Tx, row: Row, event: EventFor<Row>) => {
    const { subject, payload } = event(row);
    return enqueueEvent(tx, schema, subject, payload);
  };
  /**
   * The row as it is, with a precondition locked for the rest of the transaction and checked: a
   * write waiting here sees the row as the one before it left it (READ COMMITTED re-reads a row
   * it waited for), so of two writes sent with the same If-Match exactly one proceeds.
   */
  const current = async (tx: Tx, id: string, precondition: RowPrecondition<Row> | undefined): Promise<Row | null | 'unread'> => {
    if (!precondition && !options.readUnconditioned) return 'unread';
    const lock = precondition ? ' for update' : '';
    const [row] = await tx.$queryRawUnsafe<Row[]>(`select ${table.select} from ${table.from} where "id" = $1::uuid${lock}`, id);
    if (!row) return null;
    if (precondition && !precondition(row)) throw new PreconditionViolation();
    return row;
  };
  const translated = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      // Unlike an insert with ON CONFLICT, an update has no way out: the violation aborts the transaction.
      if (isUniqueViolation(error)) throw new UniqueViolation();
      throw error;
    }
  };
  return {
    create: (insert, event, guard) =>
      translated(() =>
        transaction(async (tx) => {
          await guard?.claim(tx);
          const row = await insert(tx);
          if (row === undefined) return undefined;
          await record(tx, row, event);
          await guard?.remember(tx, row);
          return row;
        }),
      ),
    change: (id, change) =>
      translated(() =>
        transaction(async (tx) => {
          await change.prepare?.(tx);
          if ((await current(tx, id, change.precondition)) === null) return null;
          const row = await change.write(tx);
          if (!row) return null;
          await record(tx, row, change.event);
          return row;
        }),
      ),
  };
}
