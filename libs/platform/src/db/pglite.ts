import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, open, readdir, readFile, rename, rm, rmdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { PGlite, types, type Transaction } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import type { Logger } from '../logger.js';
import type { Database, SqlSession } from './database.js';
import { PGliteThread } from './pglite-thread.js';

export { EmbeddedDatabaseStoppedError } from './pglite-thread.js';

export interface PGliteOptions {
  /** Folder of the data directory; `memory://` keeps everything in memory (tests). */
  dataDir: string;
  logger: Logger;
}

/**
 * PGlite's default 128MB of shared buffers puts the process near 300MB RSS; 8MB is ample for
 * a development database (the files it reads past them are in the OS's cache). 16MB until the
 * database moved to a worker thread, whose isolate costs ~25 MB: at 8MB `npm start`'s idle
 * RSS went from 262-263 to 253 MB, and deep lists of 50k rows kept their rate (15-17/s).
 */
const START_PARAMS = [...PGlite.defaultStartParams, '-c', 'shared_buffers=8MB'];

/** Thrown when another live process already owns the embedded data directory. */
export class DataDirectoryInUseError extends Error {
  constructor(dataDir: string, pid: number) {
    super(
      `The embedded database in ${dataDir} is in use by process ${pid}. ` +
        'Stop that process, or set DATABASE_URL or DATA_DIR to use another database.',
    );
    this.name = 'DataDirectoryInUseError';
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One PGlite instance may own a data directory, never two. A lock file holding our pid
 * guards that; a lock left by a dead process (a crash, kill -9) is taken over, and with it
 * the stale postmaster.pid that would otherwise make PGlite hang on open.
 */
async function lockDataDirectory(dataDir: string): Promise<() => Promise<void>> {
  const lockFile = `${dataDir}.lock`;
  for (;;) {
    try {
      const handle = await open(lockFile, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      await rm(join(dataDir, 'postmaster.pid'), { force: true });
      return () => rm(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number((await readFile(lockFile, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new DataDirectoryInUseError(dataDir, owner);
      }
      await rm(lockFile, { force: true });
    }
  }
}

const pgliteEntry = createRequire(import.meta.url).resolve('@electric-sql/pglite');

/**
 * Creating a cluster (initdb) touches ~800MB that the WASM heap never gives back, so a new
 * data directory is initialized by a short-lived child process and only opened here.
 */
async function initializeInChild(dataDir: string): Promise<void> {
  const script = `require(${JSON.stringify(pgliteEntry)}).PGlite.create({ dataDir: ${JSON.stringify(dataDir)} }).then((db) => db.close())`;
  await promisify(execFile)(process.execPath, ['-e', script], { timeout: 120_000 });
}

/**
 * Where the pristine cluster of this PGlite version is kept: `node_modules/.cache/pglite/<version>`
 * beside the installed package (scripts/pglite-template.mjs makes it at `npm ci`). Keyed by the
 * version, so an upgraded PGlite never copies a cluster an older one wrote.
 */
export function pgliteTemplateDir(): string {
  let dir = dirname(pgliteEntry);
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const { name, version } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
      if (name === '@electric-sql/pglite') return join(dir, '..', '..', '.cache', 'pglite', String(version));
    }
    if (dirname(dir) === dir) throw new Error('the @electric-sql/pglite package was not found');
    dir = dirname(dir);
  }
}

/** Runs initdb once per PGlite version into the template folder; concurrent makers race harmlessly. */
async function ensureTemplate(template: string): Promise<void> {
  if (existsSync(join(template, 'PG_VERSION'))) return;
  const scratch = `${template}.${process.pid}-${Date.now()}`;
  await mkdir(dirname(template), { recursive: true });
  try {
    await initializeInChild(scratch);
    await rename(scratch, template).catch((error: NodeJS.ErrnoException) => {
      // Another process made it first: theirs is as good as ours.
      if (!existsSync(join(template, 'PG_VERSION'))) throw error;
    });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * A new data directory is a copy of the version's pristine cluster (a fraction of a second)
 * rather than a fresh initdb (~8 s). The copy lands beside it and is renamed into place, so an
 * interrupted start never leaves a half-copied cluster. Where the template cannot be made
 * (a read-only node_modules), or the folder already holds files, initdb runs in it directly.
 */
async function createDataDirectory(dataDir: string, logger: Logger): Promise<void> {
  const entries = await readdir(dataDir).catch(() => undefined);
  if (entries && entries.length > 0) return initializeInChild(dataDir);
  let template: string;
  try {
    template = pgliteTemplateDir();
    await ensureTemplate(template);
  } catch (error) {
    logger.warn({ err: error }, 'no embedded database template; creating the database from scratch');
    return initializeInChild(dataDir);
  }
  const copy = `${dataDir}.copy-${process.pid}`;
  await rm(copy, { recursive: true, force: true });
  await cp(template, copy, { recursive: true });
  if (entries) await rmdir(dataDir);
  await rename(copy, dataDir);
}

/** Type oids whose PGlite parsing differs from node-postgres's (see `SqlSession.query`). */
const INT8_ARRAY = 1016;
const DATE_ARRAY = 1182;
const BYTEA_ARRAY = 1001;

const asText = (value: string) => value;
/** bytea arrives in its hex text form, `\x0102`. */
const asBuffer = (value: string) => Buffer.from(value.slice(2), 'hex');

/**
 * Rows read as the port promises: PGlite's parsers except for int8, which it turns into a
 * number (wrong beyond 2^53), a date, which it turns into UTC midnight, and bytea, which it
 * gives as a bare Uint8Array; node-postgres gives text, text and a Buffer. Given per query,
 * so the Prisma adapter, which shares the instance and brings its own parsers, is untouched.
 */
const ROW_PARSERS = {
  [types.INT8]: asText,
  [INT8_ARRAY]: (value: string) => types.arrayParser(value, asText, INT8_ARRAY),
  [types.DATE]: asText,
  [DATE_ARRAY]: (value: string) => types.arrayParser(value, asText, DATE_ARRAY),
  [types.BYTEA]: asBuffer,
  [BYTEA_ARRAY]: (value: string) => types.arrayParser(value, asBuffer, BYTEA_ARRAY),
};

/** `depth` 0 is the instance itself, 1 a transaction, 2 and more savepoints within it. */
function sessionOf(db: PGliteThread | Transaction, depth = 0): SqlSession {
  const savepoint = `savepoint_${depth}`;
  return {
    query: async <Row>(sql: string, params?: unknown[]) => (await db.query<Row>(sql, params, { parsers: ROW_PARSERS })).rows,
    exec: async (script) => {
      await db.exec(script);
    },
    transaction: async (fn) => {
      if (depth === 0) return (db as PGliteThread).transaction((tx) => fn(sessionOf(tx, 1)));
      await db.exec(`savepoint ${savepoint}`);
      try {
        const result = await fn(sessionOf(db, depth + 1));
        await db.exec(`release savepoint ${savepoint}`);
        return result;
      } catch (error) {
        await db.exec(`rollback to savepoint ${savepoint}`).catch(() => undefined);
        throw error;
      }
    },
  };
}

/** The embedded database: the port, and a way for tests to crash its worker. */
export interface EmbeddedDatabase extends Database {
  /** Ends the worker thread as a crash would (the database then restarts it); for tests. */
  crashWorker(): Promise<void>;
}

/**
 * Opens the embedded database. Postgres runs in a worker thread (`pglite-thread.ts`), so a
 * slow query waits there and never on the event loop; the data directory's lock stays with
 * this process.
 */
export async function openPGlite(options: PGliteOptions): Promise<EmbeddedDatabase> {
  const inMemory = options.dataDir.startsWith('memory://');
  const dataDir = inMemory ? options.dataDir : resolve(options.dataDir);
  let unlock = async () => {};
  if (!inMemory) {
    await mkdir(resolve(dataDir, '..'), { recursive: true });
    unlock = await lockDataDirectory(dataDir);
    if (!existsSync(join(dataDir, 'PG_VERSION'))) {
      options.logger.info({ dataDir }, 'creating the embedded database');
      await createDataDirectory(dataDir, options.logger);
    }
  }
  let db: PGliteThread;
  try {
    db = await PGliteThread.start({ dataDir, startParams: START_PARAMS }, options.logger);
  } catch (error) {
    await unlock();
    throw error;
  }
  const root = sessionOf(db);
  // Within one process PGlite is a single connection: locks are an in-process queue.
  const locks = new Map<string, Promise<unknown>>();

  return {
    kind: 'pglite',
    ...root,
    withLock: (key, fn) => {
      const previous = locks.get(key) ?? Promise.resolve();
      const next = previous.catch(() => undefined).then(() => fn(root));
      locks.set(key, next);
      // The last holder of a key forgets it, so the map holds only keys in use.
      const forget = () => {
        if (locks.get(key) === next) locks.delete(key);
      };
      next.then(forget, forget);
      return next;
    },
    version: async () => (await db.query<{ version: string }>('select version()')).rows[0]?.version ?? 'unknown',
    // The adapter asks for a PGlite; it uses only query, exec and transaction, which the
    // thread's client half is.
    prismaAdapter: () => new PrismaPGlite(db as unknown as PGlite),
    crashWorker: () => db.crashWorker(),
    close: async () => {
      if (!db.closed) await db.close();
      await unlock();
    },
  };
}
