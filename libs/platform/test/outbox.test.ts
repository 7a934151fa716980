import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { enqueueEvent, migrate, startOutboxRelay, type BusMessage, type Database } from '@app/platform';
import { openTestDependencies, silentLogger, testModes } from '@app/testing';

/** What Prisma's transaction client offers enqueueEvent, over a raw session. */
const rawExecutor = (database: Pick<Database, 'query'>) => ({
  $executeRawUnsafe: async (sql: string, ...values: unknown[]) => (await database.query(sql, values)).length,
});

/** The table as a service declaring `outbox: true` gets it: the kit's migration. */
const createOutbox = (database: Database, schema: string) => migrate(database, { schema, kitTables: ['outbox'], logger: silentLogger() });

describe.each(testModes())('outbox relay (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  beforeEach(async () => {
    deps = await openTestDependencies(mode);
    await createOutbox(deps.database, 'shop');
  });
  afterEach(async () => {
    await deps.dispose();
  });

  it('publishes committed events in order, and only committed ones', async () => {
    const received: BusMessage[] = [];
    await deps.bus.subscribe('shop.>', async (message) => void received.push(message), { group: 'test' });
    await deps.database.transaction(async (tx) => {
      await enqueueEvent(rawExecutor(tx), 'shop', 'shop.item.created', { n: 1 });
      await enqueueEvent(rawExecutor(tx), 'shop', 'shop.item.updated', { n: 2 });
    });
    await deps.database
      .transaction(async (tx) => {
        await enqueueEvent(rawExecutor(tx), 'shop', 'shop.item.deleted', { n: 3 });
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    const relay = startOutboxRelay({ database: deps.database, bus: deps.bus, schema: 'shop', logger: silentLogger(), intervalMs: 50 });
    for (let i = 0; i < 100 && received.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    await relay.stop();
    expect(received.map((m) => [m.subject, m.data])).toEqual([
      ['shop.item.created', { n: 1 }],
      ['shop.item.updated', { n: 2 }],
    ]);
    expect(await deps.database.query('select * from "shop"."_outbox"')).toEqual([]);
  });

  it('keeps events while the bus refuses them and delivers them once it accepts again', async () => {
    await deps.database.transaction((tx) => enqueueEvent(rawExecutor(tx), 'shop', 'shop.item.created', { kept: true }));
    const failing = { ...deps.bus, publish: async () => Promise.reject(new Error('bus down')) };
    const down = startOutboxRelay({ database: deps.database, bus: failing, schema: 'shop', logger: silentLogger(), intervalMs: 50 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await down.stop();
    expect(await deps.database.query('select subject from "shop"."_outbox"')).toEqual([{ subject: 'shop.item.created' }]);

    const received: BusMessage[] = [];
    await deps.bus.subscribe('shop.>', async (message) => void received.push(message), { group: 'test' });
    const up = startOutboxRelay({ database: deps.database, bus: deps.bus, schema: 'shop', logger: silentLogger(), intervalMs: 50 });
    for (let i = 0; i < 100 && received.length < 1; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    await up.stop();
    expect(received.map((m) => m.data)).toEqual([{ kept: true }]);
  });
});
