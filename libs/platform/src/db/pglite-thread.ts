import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  messages,
  Mutex,
  PGlite,
  protocol,
  type ExecProtocolOptions,
  type ExecProtocolOptionsStream,
  type ExecProtocolResult,
} from '@electric-sql/pglite';
import type { Logger } from '../logger.js';

/** What the worker opens: PGlite's data directory and start parameters. */
export interface WorkerStart {
  dataDir: string;
  startParams: string[];
}

/** A wire-protocol message to run (`exec`), a flush of the file system (`sync`), or the end (`close`). */
export type WorkerRequest =
  | { id: number; kind: 'exec'; message: Uint8Array; syncToFs: boolean }
  | { id: number; kind: 'sync' | 'close' };

/** The answer to one request: Postgres's raw reply to an `exec`, or why PGlite threw. */
export interface WorkerReply {
  id: number;
  data?: Uint8Array;
  error?: string;
}

/** Thrown by every call the embedded database's worker cannot answer because it stopped. */
export class EmbeddedDatabaseStoppedError extends Error {
  constructor(reason: string) {
    super(
      `The embedded database's worker stopped (${reason}); what was in flight, and any transaction open on it, ` +
        'is lost and was rolled back. It restarts on the same data directory; retry once /health/ready answers 200.',
    );
    this.name = 'EmbeddedDatabaseStoppedError';
  }
}

/**
 * PGlite's client half: query and exec with their parameters and parsers, transactions, the
 * array types. The package does not export it by name; it is PGlite's own base class, whose
 * subclasses only exchange wire-protocol messages with Postgres (as its browser worker does).
 */
const BasePGlite = Object.getPrototypeOf(PGlite) as abstract new () => Pick<PGlite, 'query' | 'exec' | 'transaction' | '_initArrayTypes'>;

const require = createRequire(import.meta.url);

/**
 * The worker runs its built `.js` entry. From the TypeScript sources (jest runs them without a
 * build) there is none: tsx, a development dependency, loads the `.ts` entry instead.
 */
function spawnWorker(start: WorkerStart): Worker {
  const built = new URL('./pglite-worker.js', import.meta.url);
  if (existsSync(built)) return new Worker(built, { workerData: start });
  const source = new URL('./pglite-worker.ts', import.meta.url).href;
  const tsx = pathToFileURL(join(dirname(require.resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href;
  const load = `import(${JSON.stringify(tsx)}).then(({ tsImport }) => tsImport(${JSON.stringify(source)}, ${JSON.stringify(source)}))`;
  return new Worker(load, { eval: true, workerData: start });
}

/** The frontend messages (their first byte) that need an answer before the client goes on. */
const SYNC = 0x53; // 'S'
const DESCRIBE = 0x44; // 'D'
/**
 * Sync ends an exchange; Describe of a statement ('S', after the 4-byte length) answers the
 * parameters' types the client needs to write the Bind. Every other message can wait for them.
 */
const answerNeeded = (message: Uint8Array) => message[0] === SYNC || (message[0] === DESCRIBE && message[5] === SYNC);

function concat(parts: Uint8Array[]): Uint8Array {
  const whole = new Uint8Array(parts.reduce((size, part) => size + part.length, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.length;
  }
  return whole;
}

interface Pending {
  resolve: (reply: WorkerReply) => void;
  reject: (error: Error) => void;
}

/** One worker and the calls waiting on it; `generation` counts the workers started so far. */
interface Running {
  worker: Worker;
  generation: number;
  pending: Map<number, Pending>;
}

/**
 * PGlite run in a worker thread, so that Postgres's work (a deep list, a sign-in's writes)
 * never holds the event loop: the main thread keeps PGlite's client (parsing rows, binding
 * parameters, the mutexes that serialize queries and transactions) and sends the worker only
 * wire-protocol messages, whose raw replies come back as transferred buffers.
 *
 * When the worker dies (a WASM abort, an exit), every call waiting on it and every later one
 * rejects with `EmbeddedDatabaseStoppedError` until a new worker has opened the same data
 * directory; Postgres's crash recovery then keeps what was committed and drops the rest (an
 * in-memory database has nothing to recover, so it stays down instead). A
 * transaction begun on the dead worker never reaches its successor (its later statements
 * reject too), so nothing half-done is committed and its caller always learns of the loss.
 * If the new worker cannot open the directory, the database stays down and says why.
 */
export class PGliteThread extends BasePGlite {
  /** PGlite's debug level (0: quiet), read by its client half. */
  debug = 0 as const;
  readonly #start: WorkerStart;
  readonly #logger: Logger;
  readonly #queryMutex = new Mutex();
  readonly #transactionMutex = new Mutex();
  #running: Running | undefined;
  /** Why calls fail now: the worker stopped, or the database was closed. */
  #down: Error | undefined;
  /** The worker generation the current exclusive section (a query, a transaction) began on. */
  #sectionGeneration = 0;
  #nextId = 0;
  /** Messages whose answer nobody waits for yet (see execProtocolStream). */
  #held: Uint8Array[] = [];
  #restarting: Promise<void> | undefined;
  #closed = false;

  private constructor(start: WorkerStart, logger: Logger) {
    super();
    this.#start = start;
    this.#logger = logger;
  }

  /** Starts the worker on the data directory and answers once PGlite is open there. */
  static async start(start: WorkerStart, logger: Logger): Promise<PGliteThread> {
    const thread = new PGliteThread(start, logger);
    await thread.#spawn(1);
    try {
      await thread._initArrayTypes();
    } catch (error) {
      // Stopped rather than left restarting: the caller releases the data directory's lock.
      await thread.close();
      throw error;
    }
    return thread;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Whether a worker is up to answer (false while one that stopped is being replaced). */
  get ready(): boolean {
    return this.#running !== undefined && this.#down === undefined && !this.#closed;
  }

  /** Ends the worker now, as a crash would; the test suites use it to check the recovery. */
  async crashWorker(): Promise<void> {
    await this.#running?.worker.terminate();
  }

  async #spawn(generation: number): Promise<void> {
    const worker = spawnWorker(this.#start);
    const running: Running = { worker, generation, pending: new Map() };
    let opening!: { ready: () => void; failed: (error: Error) => void; exited: (code: number) => void };
    try {
      await new Promise<void>((resolve, reject) => {
        opening = {
          ready: () => resolve(),
          failed: reject,
          exited: (code) => reject(new Error(`the embedded database's worker exited with code ${code} while opening`)),
        };
        worker.once('message', opening.ready).once('error', opening.failed).once('exit', opening.exited);
      });
    } finally {
      worker.off('message', opening.ready).off('error', opening.failed).off('exit', opening.exited);
    }
    worker.on('message', (reply: WorkerReply) => this.#settle(running, reply));
    worker.on('error', (error) => this.#stopped(running, error.message));
    worker.on('exit', (code) => this.#stopped(running, `exit code ${code}`));
    // Referenced only while a call waits, as PGlite in the main thread would be: an idle
    // database keeps no process alive.
    worker.unref();
    this.#running = running;
    this.#down = undefined;
  }

  #settle(running: Running, reply: WorkerReply): void {
    const call = running.pending.get(reply.id);
    if (!call) return;
    running.pending.delete(reply.id);
    if (running.pending.size === 0) running.worker.unref();
    call.resolve(reply);
  }

  #stopped(running: Running, reason: string): void {
    if (this.#running !== running) return;
    this.#running = undefined;
    this.#held = [];
    const error = this.#closed ? new Error('PGlite is closed') : new EmbeddedDatabaseStoppedError(reason);
    this.#down = error;
    for (const call of running.pending.values()) call.reject(error);
    running.pending.clear();
    if (this.#closed) return;
    if (this.#start.dataDir.startsWith('memory://')) {
      // A new worker would open an empty database: the data is gone with the old one, and
      // serving on as if nothing happened would hide that.
      this.#logger.error({ reason }, "the embedded in-memory database's worker stopped; its data is lost, and it stays down");
      return;
    }
    this.#logger.error({ reason }, "the embedded database's worker stopped; restarting it on the same data directory");
    this.#restarting = this.#restart(running.generation + 1, reason);
  }

  async #restart(generation: number, reason: string): Promise<void> {
    try {
      // The dead worker's Postgres never removed its pid file; a new one would wait on it.
      await rm(join(this.#start.dataDir, 'postmaster.pid'), { force: true });
      await this.#spawn(generation);
      this.#logger.info({ reason }, "the embedded database's worker restarted");
    } catch (error) {
      this.#down = new EmbeddedDatabaseStoppedError(`${reason}; restarting it failed: ${error instanceof Error ? error.message : String(error)}`);
      this.#logger.fatal({ err: error }, 'the embedded database could not be restarted; it stays down until the process restarts');
    }
  }

  async #call(request: WorkerRequest): Promise<WorkerReply> {
    const running = this.#running;
    if (!running || this.#down) throw this.#down ?? new Error('PGlite is closed');
    if (running.generation !== this.#sectionGeneration) {
      throw new EmbeddedDatabaseStoppedError('this statement belongs to a query or transaction begun on the previous worker');
    }
    return this.#send(running, request);
  }

  async #send(running: Running, request: WorkerRequest): Promise<WorkerReply> {
    if (running.pending.size === 0) running.worker.ref();
    const reply = await new Promise<WorkerReply>((resolve, reject) => {
      running.pending.set(request.id, { resolve, reject });
      // The message is copied into a buffer of its own, which moves rather than being cloned
      // (the serializer's may be a view on a larger, reused one).
      const transfer = request.kind === 'exec' ? [(request.message = request.message.slice()).buffer as ArrayBuffer] : [];
      running.worker.postMessage(request, transfer);
    });
    if (reply.error !== undefined) throw new Error(reply.error);
    return reply;
  }

  async execProtocolRaw(message: Uint8Array, { syncToFs = true }: ExecProtocolOptions = {}): Promise<Uint8Array> {
    const reply = await this.#call({ id: this.#nextId++, kind: 'exec', message, syncToFs });
    return reply.data ?? new Uint8Array(0);
  }

  /** Parses the reply as PGlite does: the first error ends what is kept, and is thrown unless asked not to. */
  async execProtocol(message: Uint8Array, { syncToFs = true, throwOnError = true, onNotice }: ExecProtocolOptions = {}): Promise<ExecProtocolResult> {
    const data = await this.execProtocolRaw(message, { syncToFs });
    const results: messages.BackendMessage[] = [];
    let databaseError: messages.DatabaseError | undefined;
    new protocol.Parser().parse(data, (msg) => {
      if (databaseError) return;
      if (msg instanceof messages.DatabaseError) {
        if (throwOnError) databaseError = msg;
      } else if (msg instanceof messages.NoticeMessage) {
        onNotice?.(msg);
      }
      results.push(msg);
    });
    if (databaseError) throw databaseError;
    return { messages: results, data };
  }

  /**
   * PGlite's client sends a query as six messages, each awaited alone (parse, describe the
   * statement, bind, describe the portal, execute, sync): six trips to the worker, each a
   * wake-up of the other thread, which on a busy machine waits for a core. Only two answers
   * are needed before the next message can be written: the statement's description (the
   * parameters' types, which bind serializes by) and the end (sync). So parse, bind, the
   * portal's description, execute and a simple query wait here, answered with nothing, and go
   * with the next message that needs its answer, in one exchange whose answer they share;
   * Postgres answers an extended-protocol batch exactly as it would the messages one by one,
   * and after an error skips to the sync, as it would then too. A query is two trips, a
   * script one.
   */
  async execProtocolStream(message: Uint8Array, options: ExecProtocolOptions = {}): Promise<messages.BackendMessage[]> {
    if (!answerNeeded(message)) {
      this.#held.push(message);
      return [];
    }
    const batch = this.#held.length === 0 ? message : concat([...this.#held, message]);
    this.#held = [];
    return (await this.execProtocol(batch, options)).messages;
  }

  async execProtocolRawStream(message: Uint8Array, { syncToFs, onRawData }: ExecProtocolOptionsStream): Promise<void> {
    onRawData(await this.execProtocolRaw(message, { syncToFs }));
  }

  /**
   * PGlite asks for this after every statement outside a transaction. On the file systems we
   * open (a directory: Node's own file calls, which Postgres fsyncs itself; memory) the worker's
   * flush does nothing, so it is sent without waiting for its answer: the worker runs it in
   * order, before any later message, and a failure still reaches the log.
   */
  async syncToFs(): Promise<void> {
    this.#call({ id: this.#nextId++, kind: 'sync' }).catch((error: unknown) => {
      if (!(error instanceof EmbeddedDatabaseStoppedError)) this.#logger.warn({ err: error }, "the embedded database's flush to its files failed");
    });
  }

  /** COPY to and from `/dev/blob` is PGlite's; nothing of ours uses it, so it is refused rather than half-done. */
  async _handleBlob(blob?: Blob): Promise<void> {
    if (blob) throw new Error('the embedded database in a worker thread takes no blob (COPY ... /dev/blob)');
  }

  async _getWrittenBlob(): Promise<undefined> {
    return undefined;
  }

  async _cleanupBlob(): Promise<void> {}

  async _checkReady(): Promise<void> {
    if (this.#closed) throw new Error('PGlite is closed');
    if (this.#down) throw this.#down;
  }

  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T> {
    return this.#queryMutex.runExclusive(fn);
  }

  /**
   * Every query, script and transaction runs in this section; it remembers the worker it began
   * on, so that none of its statements ever runs on a worker started after that one died.
   */
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.#transactionMutex.runExclusive(() => {
      this.#sectionGeneration = this.#running?.generation ?? 0;
      return fn();
    });
  }

  /** LISTEN/NOTIFY: the bus carries events here, and nothing of ours listens on the database. */
  async listen(): Promise<never> {
    throw new Error('the embedded database in a worker thread does not offer LISTEN');
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#restarting;
    const running = this.#running;
    if (!running) return;
    await this.#send(running, { id: this.#nextId++, kind: 'close' }).catch(() => undefined);
    this.#running = undefined;
    await running.worker.terminate();
  }
}
