/**
 * The worker thread that owns the embedded database (see `pglite-thread.ts`): it opens PGlite
 * on the data directory it is given and runs the wire-protocol messages the main thread sends,
 * one at a time, answering each with Postgres's raw reply. Parsing, parameters, transactions
 * and the Prisma adapter all stay on the main thread; only Postgres itself runs here.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import type { WorkerReply, WorkerRequest, WorkerStart } from './pglite-thread.js';

const port = parentPort!;
const { dataDir, startParams } = workerData as WorkerStart;
const db = await PGlite.create({ dataDir, startParams });

async function answer(request: WorkerRequest): Promise<WorkerReply> {
  switch (request.kind) {
    case 'exec': {
      // PGlite returns a fresh copy of the reply, so its buffer can move to the main thread.
      const data = await db.execProtocolRaw(request.message, { syncToFs: request.syncToFs });
      return { id: request.id, data };
    }
    case 'sync':
      await db.syncToFs();
      return { id: request.id };
    case 'close':
      await db.close();
      return { id: request.id };
  }
}

// One message at a time, in the order sent: the main thread's client already serializes its
// queries, and this keeps a stray call (a sync) from running inside another's exchange.
let queue = Promise.resolve();
port.on('message', (request: WorkerRequest) => {
  queue = queue.then(async () => {
    let reply: WorkerReply;
    try {
      reply = await answer(request);
    } catch (error) {
      reply = { id: request.id, error: error instanceof Error ? error.message : String(error) };
    }
    port.postMessage(reply, reply.data ? [reply.data.buffer as ArrayBuffer] : []);
  });
});
port.postMessage({ ready: true });
