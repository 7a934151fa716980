import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { migrate, MigrationChecksumError, openPostgres, type Database } from '@app/platform';
import { createTestDatabase, openTestDependencies, REAL, silentLogger, testModes } from '@app/testing';

async function migrationsFolder(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
  for (const [name, sql] of Object.entries(files)) {
    await mkdir(join(dir, name));
    await writeFile(join(dir, name, 'migration.sql'), sql);
  }
  await writeFile(join(dir, 'migration_lock.toml'), 'provider = "postgresql"\n');
  return dir;
}

const FIRST = 'create table "shop"."item" (id serial primary key, name text not null);';
const SECOND = 'alter table "shop"."item" add column price numeric(10,2);\ninsert into "shop"."item" (name) values (\'seed\');';

describe.each(testModes())('migrator (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  const logger = silentLogger();
  beforeEach(async () => {
    deps = await openTestDependencies(mode);
  });
  afterEach(async () => {
    await deps.dispose();
  });

  it('applies every migration of a fresh database in name order', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST, '20260102000000_price': SECOND });
    const result = await migrate(deps.database, { schema: 'shop', directory: dir, logger });
    expect(result).toEqual({ applied: ['20260101000000_init', '20260102000000_price'], skipped: [] });
    expect(await deps.database.query('select name, price from "shop"."item"')).toEqual([{ name: 'seed', price: null }]);
    const rows = await deps.database.query<{ name: string }>('select name from "shop"."_migrations" order by name');
    expect(rows.map((row) => row.name)).toEqual(['20260101000000_init', '20260102000000_price']);
  });

  it('creates only its bookkeeping table beside what the migrations create', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST });
    await migrate(deps.database, { schema: 'shop', directory: dir, logger });
    const tables = await deps.database.query<{ table_name: string }>(
      "select table_name from information_schema.tables where table_schema = 'shop' order by table_name",
    );
    expect(tables.map((table) => table.table_name)).toEqual(['_migrations', 'item']);
  });

  it('skips applied migrations when run again, and applies only new ones', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST });
    await migrate(deps.database, { schema: 'shop', directory: dir, logger });
    expect(await migrate(deps.database, { schema: 'shop', directory: dir, logger })).toEqual({ applied: [], skipped: ['20260101000000_init'] });
    await mkdir(join(dir, '20260102000000_price'));
    await writeFile(join(dir, '20260102000000_price', 'migration.sql'), SECOND);
    expect(await migrate(deps.database, { schema: 'shop', directory: dir, logger })).toEqual({
      applied: ['20260102000000_price'],
      skipped: ['20260101000000_init'],
    });
  });

  it('refuses to run when an applied migration was edited, and applies nothing', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST });
    await migrate(deps.database, { schema: 'shop', directory: dir, logger });
    await writeFile(join(dir, '20260101000000_init', 'migration.sql'), `${FIRST}\n-- edited`);
    await mkdir(join(dir, '20260102000000_price'));
    await writeFile(join(dir, '20260102000000_price', 'migration.sql'), SECOND);
    const run = migrate(deps.database, { schema: 'shop', directory: dir, logger });
    await expect(run).rejects.toBeInstanceOf(MigrationChecksumError);
    await expect(run).rejects.toThrow('Migration 20260101000000_init was edited after it was applied');
    expect(await deps.database.query('select name from "shop"."_migrations"')).toHaveLength(1);
  });

  it('rolls back a failing migration whole and records nothing for it', async () => {
    const dir = await migrationsFolder({
      '20260101000000_init': FIRST,
      '20260102000000_broken': 'insert into "shop"."item" (name) values (\'half\');\nselect * from no_such_table;',
    });
    await expect(migrate(deps.database, { schema: 'shop', directory: dir, logger })).rejects.toThrow(/no_such_table/);
    expect(await deps.database.query('select * from "shop"."item"')).toEqual([]);
    const rows = await deps.database.query<{ name: string }>('select name from "shop"."_migrations"');
    expect(rows.map((row) => row.name)).toEqual(['20260101000000_init']);
  });

  it('applies each migration once when two runners start together', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST, '20260102000000_price': SECOND });
    // Real mode: a second pool is a second "replica" racing on the advisory lock.
    const other: Database = mode === 'real' ? openPostgres({ url: deps.config.DATABASE_URL!, poolMax: 2, logger }) : deps.database;
    try {
      const results = await Promise.all([
        migrate(deps.database, { schema: 'shop', directory: dir, logger }),
        migrate(other, { schema: 'shop', directory: dir, logger }),
      ]);
      expect(results.flatMap((r) => r.applied).sort()).toEqual(['20260101000000_init', '20260102000000_price']);
      expect(await deps.database.query('select name from "shop"."item"')).toEqual([{ name: 'seed' }]);
    } finally {
      if (other !== deps.database) await other.close();
    }
  });
});

if (REAL.databaseUrl) {
  const baseUrl = REAL.databaseUrl;
  it('keeps two services apart in one database, each in its own schema', async () => {
    const db = await createTestDatabase(baseUrl);
    const database = openPostgres({ url: db.url, poolMax: 2, logger: silentLogger() });
    try {
      const a = await migrationsFolder({ '20260101000000_init': 'create table "one"."t" (id int);' });
      const b = await migrationsFolder({ '20260101000000_init': 'create table "two"."t" (id int);' });
      await migrate(database, { schema: 'one', directory: a, logger: silentLogger() });
      await migrate(database, { schema: 'two', directory: b, logger: silentLogger() });
      const schemas = await database.query<{ nspname: string }>("select nspname from pg_namespace where nspname in ('one', 'two') order by 1");
      expect(schemas.map((s) => s.nspname)).toEqual(['one', 'two']);
    } finally {
      await database.close();
      await db.drop();
    }
  });
}
