/**
 * A connection, or a transaction on one, that runs SQL. Both implementations (Postgres and
 * PGlite) keep the same promises; `test/database.contract.test.ts` holds them to it.
 *
 * One thing at a time on a session: inside `transaction(fn)` use only `tx`, never the outer
 * session or the `Database` itself (PGlite has one connection, so the root waits for the
 * transaction to end: a deadlock; Postgres would run it outside the transaction).
 */
export interface SqlSession {
  /**
   * Runs one statement (never several: parameters need the extended protocol) and returns
   * its rows, typed alike on both implementations: int2/int4/float/oid as numbers, int8
   * (bigint, `count(*)`) and numeric as strings (lossless), timestamp(tz) as Dates, a date as
   * its `YYYY-MM-DD` text, time and interval as text, json(b) parsed, bytea as a Buffer, and
   * arrays of these as arrays. Pass JSON parameters as `JSON.stringify(value)` with a
   * `::jsonb` cast: node-postgres sends a JS array as a Postgres array, not as JSON.
   */
  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  /**
   * Runs a script of one or more statements, with no parameters (a migration file). Outside
   * a transaction the script is all or nothing: a failing statement undoes the ones before it.
   */
  exec(script: string): Promise<void>;
  /**
   * Runs `fn` in a transaction: it commits when `fn` resolves and rolls everything back when
   * it throws. On a transaction's own session it nests as a savepoint: a throw undoes only
   * the nested part, and the outer transaction goes on (or not) as its caller decides.
   */
  transaction<T>(fn: (tx: SqlSession) => Promise<T>): Promise<T>;
}

/**
 * The database port: Postgres over a pool (`DATABASE_URL`) or the embedded PGlite. Prisma
 * runs on top of it through `prismaAdapter()`; the migrator and health checks use it directly.
 */
export interface Database extends SqlSession {
  readonly kind: 'postgres' | 'pglite';
  /**
   * Runs `fn` holding the lock `key`, which excludes every other holder of that key in any
   * process (other keys run concurrently), and releases it however `fn` ends. Not reentrant:
   * taking the same key again inside `fn` waits forever.
   */
  withLock<T>(key: string, fn: (session: SqlSession) => Promise<T>): Promise<T>;
  /** `select version()`; rejects when the database cannot answer within its connect timeout. */
  version(): Promise<string>;
  /**
   * A Prisma driver adapter factory bound to this database; disconnecting a Prisma client
   * built on it leaves the database open for its other users.
   */
  prismaAdapter(): unknown;
  /** Closes the connections; later calls reject, and closing again does nothing. */
  close(): Promise<void>;
}

/** Whether `value` is a UUID's text: what may reach a uuid column (anything else makes Postgres fail the statement). */
export const isUuid = (value: string): boolean => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);

/** Quotes an identifier (schema, table) for SQL; names come from code, never from requests. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Builds a Prisma client of the given generated class on top of a database. */
export function createPrismaClient<T>(Client: new (options: { adapter: never }) => T, database: Database): T {
  return new Client({ adapter: database.prismaAdapter() as never });
}
