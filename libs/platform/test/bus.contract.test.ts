import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createLocalBus, createNatsBus, subjectMatches, type Bus, type BusMessage } from '@app/platform';
import { eventually, REAL, SETTLE_BUDGET_MS, silentLogger, startFaultProxy, startTcpProxy } from '@app/testing';

/** Resolves once `count` messages arrived (or rejects after the timeout). */
function collector(count: number, timeoutMs = SETTLE_BUDGET_MS) {
  const received: BusMessage[] = [];
  let done!: () => void;
  const finished = new Promise<void>((resolve, reject) => {
    done = resolve;
    setTimeout(() => reject(new Error(`received ${received.length} of ${count} messages`)), timeoutMs).unref();
  });
  // A test that expects nothing never awaits this; its timeout must not become an unhandled rejection.
  finished.catch(() => undefined);
  return {
    received,
    finished,
    handler: async (message: BusMessage) => {
      received.push(message);
      if (received.length >= count) done();
    },
  };
}

const settle = (ms = 300) => new Promise((resolve) => setTimeout(resolve, ms));

/** The contract every bus adapter passes: what services may rely on when they publish or consume. */
function busContract(name: string, open: () => Promise<Bus>) {
  describe(`${name} bus`, () => {
    let bus: Bus;
    beforeEach(async () => {
      bus = await open();
    });
    afterEach(async () => {
      await bus.close();
    });

    it('delivers a published event with its subject, id and data', async () => {
      const inbox = collector(1);
      await bus.subscribe('identity.created', inbox.handler, { group: 'test' });
      await bus.publish('identity.created', { identityId: 'x', n: 1 }, { id: 'event-1' });
      await inbox.finished;
      expect(inbox.received[0]).toEqual({ subject: 'identity.created', id: 'event-1', data: { identityId: 'x', n: 1 }, attempt: 1 });
    });

    it('matches NATS wildcards', async () => {
      const all = collector(2);
      const one = collector(1);
      await bus.subscribe('credential.>', all.handler, { group: 'all' });
      await bus.subscribe('credential.*', one.handler, { group: 'one' });
      await bus.publish('credential.revoked', { a: 1 });
      await bus.publish('credential.updated.secret', { b: 2 });
      await Promise.all([all.finished, one.finished]);
      expect(all.received.map((m) => m.subject).sort()).toEqual(['credential.revoked', 'credential.updated.secret']);
      expect(one.received.map((m) => m.subject)).toEqual(['credential.revoked']);
    });

    it('gives each event to one subscriber of a group and to every group', async () => {
      const a = collector(1);
      const b = collector(1);
      const other = collector(4);
      await bus.subscribe('crud.>', a.handler, { group: 'workers' });
      await bus.subscribe('crud.>', b.handler, { group: 'workers' });
      await bus.subscribe('crud.>', other.handler, { group: 'audit' });
      for (let i = 0; i < 4; i++) await bus.publish('crud.product.created', { i });
      await other.finished;
      await settle();
      expect(a.received.length + b.received.length).toBe(4);
    });

    it('gives every broadcast subscriber every event, beside the groups', async () => {
      const first = collector(3);
      const second = collector(3);
      const worker = collector(3);
      await bus.subscribe('revocation.>', first.handler, { broadcast: true });
      await bus.subscribe('revocation.>', second.handler, { broadcast: true });
      await bus.subscribe('revocation.>', worker.handler, { group: 'store' });
      for (let i = 0; i < 3; i++) await bus.publish('revocation.session', { i }, { id: `r-${i}` });
      await Promise.all([first.finished, second.finished, worker.finished]);
      for (const inbox of [first, second]) {
        expect(inbox.received.map((m) => [m.subject, m.data]).sort()).toEqual([0, 1, 2].map((i) => ['revocation.session', { i }]));
      }
    });

    it('stops a broadcast after unsubscribe, and lets a reconnect listener be removed', async () => {
      const inbox = collector(1);
      const subscription = await bus.subscribe('revocation.>', inbox.handler, { broadcast: true });
      await subscription.unsubscribe();
      const remove = bus.onReconnect(() => undefined);
      remove();
      await bus.publish('revocation.subject', {});
      await settle();
      expect(inbox.received).toEqual([]);
    });

    it('delivers again, with a higher attempt, when a handler fails', async () => {
      const attempts: number[] = [];
      const done = collector(1);
      await bus.subscribe(
        'sso.retry',
        async (message) => {
          attempts.push(message.attempt);
          if (message.attempt < 2) throw new Error('transient');
          await done.handler(message);
        },
        { group: 'retry' },
      );
      await bus.publish('sso.retry', { ok: true });
      await done.finished;
      expect(attempts).toEqual([1, 2]);
    });

    it('stops delivering after unsubscribe', async () => {
      const inbox = collector(1);
      const subscription = await bus.subscribe('identity.updated', inbox.handler, { group: 'gone' });
      await subscription.unsubscribe();
      await bus.publish('identity.updated', {});
      await settle();
      expect(inbox.received).toEqual([]);
    });

    it('answers a request through one of its responders, with the data both ways as JSON', async () => {
      const subject = `test.ask.${randomUUID().slice(0, 8)}`;
      const asked: unknown[] = [];
      const answer = async (data: unknown) => {
        asked.push(data);
        return { echoed: data, at: 1 };
      };
      const first = await bus.respond(subject, answer);
      await bus.respond(subject, answer);
      expect(await bus.request(subject, { n: 1 })).toEqual({ echoed: { n: 1 }, at: 1 });
      expect(await bus.request(subject, { n: 2 })).toEqual({ echoed: { n: 2 }, at: 1 });
      // One responder per request, not every one.
      expect(asked).toEqual([{ n: 1 }, { n: 2 }]);
      await first.unsubscribe();
      expect(await bus.request(subject, { n: 3 })).toEqual({ echoed: { n: 3 }, at: 1 });
    });

    it('rejects a request nobody answers, and one whose responder fails', async () => {
      const subject = `test.ask.${randomUUID().slice(0, 8)}`;
      await expect(bus.request(subject, {}, { timeoutMs: 1_000 })).rejects.toThrow();
      const responding = await bus.respond(subject, async () => {
        throw new Error('cannot read the record');
      });
      await expect(bus.request(subject, {})).rejects.toThrow(/cannot read the record/);
      await responding.unsubscribe();
      await expect(bus.request(subject, {}, { timeoutMs: 1_000 })).rejects.toThrow();
    });

    it('answers a ping while open', async () => {
      await expect(bus.ping()).resolves.toBeUndefined();
    });
  });
}

busContract('local', async () => createLocalBus({ logger: silentLogger() }));

if (REAL.natsUrl) {
  const servers = REAL.natsUrl;
  busContract('nats', () =>
    createNatsBus({ servers, logger: silentLogger(), stream: `TEST_${randomUUID().slice(0, 8).toUpperCase()}`, deleteStreamOnClose: true }),
  );

  describe('nats bus reconnection', () => {
    it('tells reconnect listeners when the connection comes back, and broadcasts flow again', async () => {
      const stream = `TEST_${randomUUID().slice(0, 8).toUpperCase()}`;
      const target = new URL(servers.split(',')[0]!);
      const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 4222) });
      const publisher = await createNatsBus({ servers, logger: silentLogger(), stream, deleteStreamOnClose: true });
      const listener = await createNatsBus({ servers: `nats://127.0.0.1:${proxy.port}`, logger: silentLogger(), stream });
      try {
        let reconnects = 0;
        listener.onReconnect(() => reconnects++);
        const inbox = collector(1);
        await listener.subscribe('revocation.>', inbox.handler, { broadcast: true });
        await proxy.stop();
        await settle(500);
        await proxy.start();
        expect(await eventually(async () => reconnects > 0)).toBe(true);
        await publisher.publish('revocation.session', { after: 'reconnect' });
        await inbox.finished;
        expect(inbox.received[0]?.data).toEqual({ after: 'reconnect' });
      } finally {
        await listener.close();
        await publisher.close();
        await proxy.stop();
      }
    });
  });

  describe('nats bus with NATS down at start', () => {
    it('is returned at once, refuses publishes, and connects, subscribes and publishes once NATS is there', async () => {
      const stream = `TEST_${randomUUID().slice(0, 8).toUpperCase()}`;
      const target = new URL(servers.split(',')[0]!);
      const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 4222) });
      // The port is known, nobody listens on it yet.
      await proxy.stop();
      const bus = await createNatsBus({ servers: `nats://127.0.0.1:${proxy.port}`, logger: silentLogger(), stream, deleteStreamOnClose: true });
      const publisher = await createNatsBus({ servers, logger: silentLogger(), stream });
      try {
        let reconnects = 0;
        // Told once the link is up, after the waiting subscriptions opened: what is published
        // from then on reaches them (a verifier re-reads its source of truth at this moment).
        bus.onReconnect(() => {
          reconnects++;
          void publisher.publish('credential.revoked', { told: 'up' });
          void publisher.publish('revocation.session', { told: 'up' });
        });
        await expect(bus.publish('credential.revoked', { too: 'early' })).rejects.toThrow(/not been reached/);
        await expect(bus.ping()).rejects.toThrow();
        const group = collector(2);
        const broadcast = collector(2);
        await bus.subscribe('credential.revoked', group.handler, { group: 'sso' });
        await bus.subscribe('revocation.>', broadcast.handler, { broadcast: true });
        await proxy.start();
        expect(await eventually(async () => reconnects > 0)).toBe(true);
        await bus.ping();
        await bus.publish('credential.revoked', { after: 'start' });
        await bus.publish('revocation.session', { after: 'start' });
        await Promise.all([group.finished, broadcast.finished]);
        expect(reconnects).toBe(1);
        expect(group.received.map((message) => message.data)).toEqual(expect.arrayContaining([{ told: 'up' }, { after: 'start' }]));
        expect(broadcast.received.map((message) => message.data)).toEqual(expect.arrayContaining([{ told: 'up' }, { after: 'start' }]));
      } finally {
        await bus.close();
        await publisher.close();
        await proxy.stop();
      }
    });

    it('stops trying once closed before NATS was reached', async () => {
      const target = new URL(servers.split(',')[0]!);
      const proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 4222) });
      proxy.cut();
      try {
        const bus = await createNatsBus({ servers: proxy.url(servers.split(',')[0]!), logger: silentLogger(), stream: `TEST_${randomUUID().slice(0, 8).toUpperCase()}` });
        await bus.subscribe('credential.revoked', async () => undefined, { group: 'sso' });
        // Closes while NATS is still cut: it waits for no connection.
        await bus.close();
        // NATS answers again: a bus that was closed never calls.
        const attempts = proxy.accepted;
        proxy.restore();
        await settle(2_500);
        expect(proxy.accepted).toBe(attempts);
      } finally {
        await proxy.close();
      }
    });
  });

  describe('nats bus durability', () => {
    it('keeps events for a group while its subscriber is away', async () => {
      const stream = `TEST_${randomUUID().slice(0, 8).toUpperCase()}`;
      const first = await createNatsBus({ servers, logger: silentLogger(), stream });
      const gone = await first.subscribe('credential.revoked', async () => undefined, { group: 'sso' });
      await gone.unsubscribe();
      await first.publish('credential.revoked', { while: 'away' });
      await first.close();
      const second = await createNatsBus({ servers, logger: silentLogger(), stream, deleteStreamOnClose: true });
      const inbox = collector(1);
      await second.subscribe('credential.revoked', inbox.handler, { group: 'sso' });
      await inbox.finished;
      expect(inbox.received[0]?.data).toEqual({ while: 'away' });
      await second.close();
    });

    it('closes while a handler never finishes, leaving its event and those buffered behind it unacknowledged', async () => {
      const stream = `TEST_${randomUUID().slice(0, 8).toUpperCase()}`;
      const bus = await createNatsBus({ servers, logger: silentLogger(), stream, deleteStreamOnClose: true });
      let started!: () => void;
      const handling = new Promise<void>((resolve) => (started = resolve));
      const handled: unknown[] = [];
      await bus.subscribe(
        'credential.revoked',
        async (message) => {
          handled.push(message.data);
          started();
          await new Promise(() => undefined);
        },
        { group: 'sso' },
      );
      for (let n = 1; n <= 5; n++) await bus.publish('credential.revoked', { n });
      await handling;
      // Resolves (a hang here is the failure, caught by the test's budget), and the handler saw only the first.
      await bus.close();
      expect(handled).toEqual([{ n: 1 }]);
    });
  });
}

describe('subjectMatches', () => {
  it.each([
    ['a.b', 'a.b', true],
    ['a.*', 'a.b', true],
    ['a.*', 'a.b.c', false],
    ['a.>', 'a.b.c', true],
    ['a.>', 'a', false],
    ['*.b', 'a.b', true],
    ['a.b', 'a.c', false],
  ])('%s against %s is %s', (pattern, subject, expected) => {
    expect(subjectMatches(pattern, subject)).toBe(expected);
  });
});
