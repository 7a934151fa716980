import { randomUUID } from 'node:crypto';
import { quoteIdent, type Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import { createOutageLog } from '../outage-log.js';
import type { Bus } from './bus.js';

/**
 * The transactional outbox: a service writes its events into `<schema>._outbox` in the same
 * transaction as the change they describe, and a relay publishes them to the bus afterwards.
 * An event whose change committed is therefore never lost, even if the bus is down or the
 * process dies between commit and publish; the relay delivers at least once.
 *
 * The table is the kit's migration (db/kit-tables.ts), applied into the schema of each
 * service that declares `outbox: true`.
 */
export function outboxTable(schema: string): string {
  return `${quoteIdent(schema)}."_outbox"`;
}

/** What `enqueueEvent` needs of a transaction: Prisma's interactive-transaction client qualifies. */
export interface RawExecutor {
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
}

/** Events committed and not yet relayed (the relay deletes what it publishes). */
export async function outboxBacklog(database: Database, schema: string): Promise<number> {
  const [row] = await database.query<{ count: string }>(`select count(*)::text as count from ${outboxTable(schema)}`);
  return Number(row?.count ?? 0);
}

/** Records an event inside the caller's transaction; it is published once that commits. */
export async function enqueueEvent(tx: RawExecutor, schema: string, subject: string, payload: unknown): Promise<string> {
  const id = randomUUID();
  await tx.$executeRawUnsafe(
    `insert into ${outboxTable(schema)} (id, subject, payload) values ($1::uuid, $2, $3::jsonb)`,
    id,
    subject,
    JSON.stringify(payload),
  );
  return id;
}

export interface OutboxRelay {
  /** Publishes pending events now instead of at the next poll (call after a commit). */
  wake(): void;
  /** Publishes what is pending and stops. */
  stop(): Promise<void>;
}

/** Events published per relay round; one round holds a transaction open while it publishes. */
const BATCH = 100;

export function startOutboxRelay(options: {
  database: Database;
  bus: Bus;
  schema: string;
  logger: Logger;
  /** Poll interval, which bounds the delay of events enqueued by another replica. */
  intervalMs?: number;
}): OutboxRelay {
  const table = outboxTable(options.schema);
  let stopped = false;
  let running: Promise<void> | undefined;
  let again = false;
  const outage = createOutageLog(options.logger, 'outbox relay', {
    down: 'outbox relay failed; retrying',
    up: 'outbox relay recovered',
    fields: { schema: options.schema },
  });

  /** One round: lock a batch (other replicas skip it), publish it, delete it, all or nothing. */
  const round = () =>
    options.database.transaction(async (tx) => {
      const rows = await tx.query<{ seq: string; id: string; subject: string; payload: unknown }>(
        `select seq, id, subject, payload from ${table} order by seq limit ${BATCH} for update skip locked`,
      );
      for (const row of rows) await options.bus.publish(row.subject, row.payload, { id: row.id });
      if (rows.length > 0) await tx.query(`delete from ${table} where seq = any($1::bigint[])`, [rows.map((r) => r.seq)]);
      return rows.length;
    });

  const drain = async () => {
    do {
      again = false;
      try {
        while ((await round()) === BATCH) {
          // a full batch: there may be more
        }
        outage.succeeded();
      } catch (error) {
        outage.failed(error);
      }
    } while (again && !stopped);
  };

  const wake = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = drain().finally(() => {
      running = undefined;
    });
  };

  const timer = setInterval(wake, options.intervalMs ?? 1_000);
  timer.unref();
  wake();

  return {
    wake,
    stop: async () => {
      clearInterval(timer);
      await running;
      stopped = true;
      await drain().catch(() => undefined);
    },
  };
}
