/** A connection, or a transaction on one, that runs SQL. */
export interface SqlSession {
  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  /** Runs a script of one or more statements, with no parameters (a migration file). */
  exec(script: string): Promise<void>;
  transaction<T>(fn: (tx: SqlSession) => Promise<T>): Promise<T>;
}

/**
 * The database port: Postgres over a pool (`DATABASE_URL`) or the embedded PGlite. Prisma
 * runs on top of it through `prismaAdapter()`; the migrator and health checks use it directly.
 */
export interface Database extends SqlSession {
  readonly kind: 'postgres' | 'pglite';
  /** Runs `fn` holding the lock `key`, which excludes every other holder in any process. */
  withLock<T>(key: string, fn: (session: SqlSession) => Promise<T>): Promise<T>;
  /** `select version()`; rejects when the database cannot answer within its connect timeout. */
  version(): Promise<string>;
  /** A Prisma driver adapter factory bound to this database. */
  prismaAdapter(): unknown;
  close(): Promise<void>;
}

/** Quotes an identifier (schema, table) for SQL; names come from code, never from requests. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Builds a Prisma client of the given generated class on top of a database. */
export function createPrismaClient<T>(Client: new (options: { adapter: never }) => T, database: Database): T {
  return new Client({ adapter: database.prismaAdapter() as never });
}
