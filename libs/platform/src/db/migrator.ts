import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { quoteIdent, type Database, type SqlSession } from './database.js';
import { KIT_MIGRATION_PREFIX, KIT_MIGRATIONS, type KitTable } from './kit-tables.js';

export type { KitTable } from './kit-tables.js';

export interface MigrateOptions {
  /** The Postgres schema the service owns; the bookkeeping table lives in it too. */
  schema: string;
  /** A Prisma Migrate folder: `<timestamp>_<name>/migration.sql` per migration. */
  directory?: string;
  /** The kit's tables the schema holds (see `KitTable`): their migrations run before the folder's. */
  kitTables?: readonly KitTable[];
  /**
   * Runs after the migrations, under the same lock: holds the migrated schema to what the code
   * declares, and throws (naming the fix) where they differ, so nothing serves on a wrong table.
   */
  check?(session: SqlSession): Promise<void>;
  logger: Logger;
}

export interface MigrationResult {
  applied: string[];
  skipped: string[];
}

/** An applied migration's file changed: the database no longer matches the code's history. */
export class MigrationChecksumError extends Error {
  constructor(readonly migration: string) {
    super(
      `Migration ${migration} was edited after it was applied. Applied migrations are ` +
        'immutable: restore the file and add a new migration for the change.',
    );
    this.name = 'MigrationChecksumError';
  }
}

interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

const checksumOf = (sql: string) => createHash('sha256').update(sql).digest('hex');

/** The kit's migrations for `tables`, in that order, written for `schema` and named apart from a folder's. */
function kitMigrations(tables: readonly KitTable[], schema: string): MigrationFile[] {
  return tables.flatMap((table) =>
    KIT_MIGRATIONS[table].map((migration) => {
      const sql = migration.sql(schema);
      return { name: `${KIT_MIGRATION_PREFIX}${migration.name}`, sql, checksum: checksumOf(sql) };
    }),
  );
}

async function readMigrations(directory: string): Promise<MigrationFile[]> {
  const entries = await readdir(directory, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(join(directory, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: checksumOf(sql) };
    }),
  );
}

/**
 * Applies pending migrations, each in its own transaction, under a lock so two replicas
 * starting together never apply one file twice: the kit's tables first, then the folder's in
 * name order. Safe to run on every start. A recorded migration no longer shipped (the outbox
 * and idempotency files the services once held, now the kit's) is left as history.
 */
export async function migrate(database: Database, options: MigrateOptions): Promise<MigrationResult> {
  const files = [
    ...kitMigrations(options.kitTables ?? [], options.schema),
    ...(options.directory ? await readMigrations(options.directory) : []),
  ];
  const schema = quoteIdent(options.schema);
  const table = `${schema}."_migrations"`;
  return database.withLock(`migrate:${options.schema}`, async (session) => {
    await session.exec(
      `create schema if not exists ${schema};
       create table if not exists ${table} (
         name text primary key,
         checksum text not null,
         applied_at timestamptz not null default now()
       );`,
    );
    const rows = await session.query<{ name: string; checksum: string }>(`select name, checksum from ${table}`);
    const applied = new Map(rows.map((row) => [row.name, row.checksum]));
    const edited = files.find((file) => applied.has(file.name) && applied.get(file.name) !== file.checksum);
    if (edited) throw new MigrationChecksumError(edited.name);
    const result: MigrationResult = { applied: [], skipped: [] };
    for (const file of files) {
      if (applied.has(file.name)) {
        result.skipped.push(file.name);
        continue;
      }
      await session.transaction(async (tx) => {
        await tx.exec(file.sql);
        await tx.query(`insert into ${table} (name, checksum) values ($1, $2)`, [file.name, file.checksum]);
      });
      options.logger.info({ migration: file.name, schema: options.schema }, 'migration applied');
      result.applied.push(file.name);
    }
    await options.check?.(session);
    return result;
  });
}

/** What the migrator reads of a service's declaration (`defineService`). */
export interface MigratedService {
  /** Also its schema's name. */
  name: string;
  migrations?: string;
  outbox?: boolean;
  idempotency?: boolean;
  checkSchema?(session: SqlSession, schema: string): Promise<void>;
}

/** The kit's tables a service declares it uses. */
function kitTablesOf(service: MigratedService): KitTable[] {
  return [...(service.outbox ? (['outbox'] as const) : []), ...(service.idempotency ? (['idempotency'] as const) : [])];
}

/**
 * Migrates a service's schema as it declares it: the kit's tables it uses, its own folder, then
 * its schema check. Undefined, touching nothing, for a service without tables.
 */
export async function migrateService(database: Database, service: MigratedService, logger: Logger): Promise<MigrationResult | undefined> {
  const kitTables = kitTablesOf(service);
  if (!service.migrations && kitTables.length === 0) return undefined;
  const { checkSchema } = service;
  return migrate(database, {
    schema: service.name,
    directory: service.migrations,
    kitTables,
    check: checkSchema && ((session) => checkSchema(session, service.name)),
    logger,
  });
}
