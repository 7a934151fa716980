import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { DataDirectoryInUseError, databaseCheck, EmbeddedDatabaseStoppedError, openPGlite, pgliteTemplateDir, runCheck } from '@app/platform';
import { eventually, silentLogger } from '@app/testing';
import { PGlite } from '@electric-sql/pglite';
import { PGliteThread } from '../src/db/pglite-thread.js';

describe('embedded database (PGlite)', () => {
  it('persists data across a close and a reopen', async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), 'pglite-')), 'db');
    const first = await openPGlite({ dataDir, logger: silentLogger() });
    await first.exec('create table kept (v text); insert into kept values (\'still here\');');
    await first.close();
    const second = await openPGlite({ dataDir, logger: silentLogger() });
    expect(await second.query('select v from kept')).toEqual([{ v: 'still here' }]);
    expect(await second.version()).toMatch(/^PostgreSQL \d+/);
    await second.close();
  });

  it('makes a new data directory from the version\'s template, not a fresh initdb', async () => {
    const open = async () => {
      const database = await openPGlite({ dataDir: join(await mkdtemp(join(tmpdir(), 'pglite-')), 'db'), logger: silentLogger() });
      const [row] = await database.query<{ id: string }>('select system_identifier::text as id from pg_control_system()');
      await database.close();
      return row?.id;
    };
    const first = await open();
    // initdb gives every cluster its own identifier; copies of one template share it.
    expect(await open()).toBe(first);
    expect(existsSync(join(pgliteTemplateDir(), 'PG_VERSION'))).toBe(true);
    expect(pgliteTemplateDir()).toMatch(/node_modules\/\.cache\/pglite\/\d+\.\d+\.\d+$/);
  });

  it('refuses a data directory another live process owns, naming it', async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), 'pglite-')), 'db');
    const owner = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    await writeFile(`${dataDir}.lock`, String(owner.pid));
    try {
      const opening = openPGlite({ dataDir, logger: silentLogger() });
      await expect(opening).rejects.toBeInstanceOf(DataDirectoryInUseError);
      await expect(opening).rejects.toThrow(`in use by process ${owner.pid}`);
    } finally {
      owner.kill();
    }
  });

  it('takes over the lock and stale postmaster.pid of a process that died', async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), 'pglite-')), 'db');
    const first = await openPGlite({ dataDir, logger: silentLogger() });
    await first.close();
    // What a kill -9 leaves behind: our lock naming a dead pid and PGlite's own pid file.
    const dead = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => dead.once('exit', resolve));
    await writeFile(`${dataDir}.lock`, String(dead.pid));
    await writeFile(join(dataDir, 'postmaster.pid'), '-42\n/pglite/data\n');
    const reopened = await openPGlite({ dataDir, logger: silentLogger() });
    expect(await readFile(`${dataDir}.lock`, 'utf8')).toBe(String(process.pid));
    expect(await reopened.query('select 1 as one')).toEqual([{ one: 1 }]);
    await reopened.close();
    expect(existsSync(`${dataDir}.lock`)).toBe(false);
  });

  describe('when its worker thread dies', () => {
    /**
     * A transaction that inserts into `kept`, then waits for `resume` before inserting again:
     * answers once the first insertion is done, so a crash can fall between the two.
     */
    async function pausedInsertions(database: { transaction<T>(fn: (tx: { query(sql: string): Promise<unknown> }) => Promise<T>): Promise<T> }) {
      let entered!: () => void;
      let resume!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const resumed = new Promise<void>((resolve) => (resume = resolve));
      const transaction = database.transaction(async (tx) => {
        await tx.query("insert into kept values ('begun before the crash')");
        entered();
        await resumed;
        await tx.query("insert into kept values ('asked after the crash')");
      });
      await inside;
      return { transaction, resume };
    }

    it('reports not ready, fails the transaction it was in, then serves the committed data from a new worker', async () => {
      const database = await openPGlite({ dataDir: join(await mkdtemp(join(tmpdir(), 'pglite-')), 'db'), logger: silentLogger() });
      const ready = async () => (await runCheck(databaseCheck(database))).status === 'connected';
      try {
        await database.exec("create table kept (v text); insert into kept values ('committed');");
        const { transaction, resume } = await pausedInsertions(database);

        await database.crashWorker();
        expect(await ready()).toBe(false);
        resume();
        await expect(transaction).rejects.toBeInstanceOf(EmbeddedDatabaseStoppedError);

        expect(await eventually(ready)).toBe(true);
        expect(await database.query('select v from kept')).toEqual([{ v: 'committed' }]);
      } finally {
        await database.close();
      }
    });

    it('never runs the rest of a transaction begun on the dead worker on the new one', async () => {
      const dataDir = join(await mkdtemp(join(tmpdir(), 'pglite-')), 'db');
      await (await openPGlite({ dataDir, logger: silentLogger() })).close();
      const thread = await PGliteThread.start({ dataDir, startParams: PGlite.defaultStartParams }, silentLogger());
      try {
        await thread.exec('create table kept (v text)');
        const { transaction, resume } = await pausedInsertions(thread);
        await thread.crashWorker();
        expect(thread.ready).toBe(false);
        expect(await eventually(async () => thread.ready)).toBe(true);

        resume();
        await expect(transaction).rejects.toBeInstanceOf(EmbeddedDatabaseStoppedError);
        expect((await thread.query('select v from kept')).rows).toEqual([]);
      } finally {
        await thread.close();
      }
    });

    it('stays down, saying why, when the database was in memory and its data went with the worker', async () => {
      const database = await openPGlite({ dataDir: 'memory://', logger: silentLogger() });
      try {
        await database.crashWorker();
        await expect(database.query('select 1')).rejects.toBeInstanceOf(EmbeddedDatabaseStoppedError);
        expect((await runCheck(databaseCheck(database))).status).toBe('disconnected');
      } finally {
        await database.close();
      }
    });
  });
});
