import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { quoteIdent, type Database } from './database.js';

export interface MigrateOptions {
  /** The Postgres schema the service owns; the bookkeeping table lives in it too. */
  schema: string;
  /** A Prisma Migrate folder: `<timestamp>_<name>/migration.sql` per migration. */
  directory: string;
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

async function readMigrations(directory: string): Promise<MigrationFile[]> {
  const entries = await readdir(directory, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(join(directory, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/**
 * Applies pending migrations in name order, each in its own transaction, under a lock so two
 * replicas starting together never apply one file twice. Safe to run on every start.
 */
export async function migrate(database: Database, options: MigrateOptions): Promise<MigrationResult> {
  const files = await readMigrations(options.directory);
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
    return result;
  });
}
