import { randomUUID } from 'node:crypto';
import type { ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../logger.js';
import { MAX_DELIVERIES, redeliveryDelayMs, REQUEST_TIMEOUT_MS, type Bus, type BusHandler, type Responder, type Subscription } from './bus.js';

export interface NatsBusOptions {
  /** Comma-separated server URLs. */
  servers: string;
  logger: Logger;
  /** JetStream stream holding the events; its subjects are `<stream prefix>.>`. */
  stream?: string;
  /** Connection name shown by the server's monitoring. */
  name?: string;
  /** Delete the stream on close: for tests, which each use a stream of their own. */
  deleteStreamOnClose?: boolean;
}

/** Events are kept this long so a consumer that was down for a while still gets them. */
const RETENTION_NS = 7 * 24 * 60 * 60 * 1e9;
/** Longest wait for a graceful drain on close before the connection is simply closed. */
const CLOSE_TIMEOUT_MS = 2_000;
/** Window in which a re-published event id is recognized as a duplicate. */
const DUPLICATE_WINDOW_NS = 2 * 60 * 1e9;

/**
 * Logs the connection's outages once each, and its end, and tells `reconnected` when the
 * connection is back. The client reconnects by itself for
 * ever (`maxReconnectAttempts: -1`); while it is away, publishes fail after their timeout
 * (the outbox keeps the events) and consumers resume on their own.
 */
function watchConnection(nc: NatsConnection, logger: Logger, reconnected: () => void): void {
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') logger.warn({ server: status.server }, 'nats disconnected; reconnecting');
      else if (status.type === 'reconnect') {
        logger.info({ server: status.server }, 'nats connection restored');
        reconnected();
      }
      else if (status.type === 'error') logger.warn({ err: status.error }, 'nats connection error');
    }
  })().catch((error: unknown) => logger.warn({ err: error }, 'nats status stream ended'));
  nc.closed().then(
    (error) => {
      if (error) logger.error({ err: error }, 'nats connection closed for good');
    },
    (error: unknown) => logger.error({ err: error }, 'nats connection closed for good'),
  );
}

/** Pause between attempts to reach NATS when it was not there at start. */
const FIRST_CONNECT_RETRY_MS = 1_000;

/** What the bus works with once NATS has answered: the connection and its JetStream handles. */
interface Link {
  nc: NatsConnection;
  jsm: JetStreamManager;
  js: JetStreamClient;
}

/**
 * NATS JetStream: events are stored in one stream and each subscriber group is a durable
 * pull consumer with explicit acks, so nothing published is lost while a consumer is away.
 *
 * NATS down at start ends nothing: the bus is returned at once and reaches NATS in the
 * background, retrying every second. Until then publishes reject (the outbox keeps the
 * events and relays them later), subscriptions wait and open when the link does, `ping`
 * rejects, and `onReconnect` listeners are called once it is up, to catch up on broadcasts.
 */
export async function createNatsBus(options: NatsBusOptions): Promise<Bus> {
  // Loaded on first use: the embedded default never pays for the client.
  const [{ AckPolicy, DeliverPolicy, jetstream, jetstreamManager }, { connect }] = await Promise.all([
    import('@nats-io/jetstream'),
    import('@nats-io/transport-node'),
  ]);
  const stream = options.stream ?? 'EVENTS';
  const prefix = stream.toLowerCase();
  const reconnectListeners = new Set<() => void>();
  const notifyReconnected = () => {
    for (const listener of reconnectListeners) {
      try {
        listener();
      } catch (error) {
        options.logger.warn({ err: error }, 'a nats reconnect listener failed');
      }
    }
  };
  const running = new Set<ConsumerMessages>();
  let closing = false;

  /** One attempt: connect, watch the connection, make sure the stream exists. */
  const open = async (): Promise<Link> => {
    const nc = await connect({
      servers: options.servers.split(',').map((s) => s.trim()),
      name: options.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1_000,
      timeout: 3_000,
    });
    try {
      const jsm = await jetstreamManager(nc);
      const config = {
        name: stream,
        subjects: [`${prefix}.>`],
        max_age: RETENTION_NS,
        duplicate_window: DUPLICATE_WINDOW_NS,
      };
      try {
        await jsm.streams.info(stream);
      } catch {
        await jsm.streams.add(config).catch(async (error: unknown) => {
          // Another replica created it between our look-up and our add.
          if (!(await jsm.streams.info(stream).catch(() => undefined))) throw error;
        });
      }
      // The client has re-sent its core subscriptions with a reconnect: broadcasts flow again.
      watchConnection(nc, options.logger, notifyReconnected);
      return { nc, jsm, js: jetstream(nc) };
    } catch (error) {
      await nc.close().catch(() => undefined);
      throw error;
    }
  };

  let link: Link | undefined;
  /** Settles with the link, or undefined if the bus closed before NATS answered. */
  let linked: Promise<Link | undefined> = Promise.resolve(undefined);
  /** Subscriptions asked for before the link; each opens on it before anyone is told it is up. */
  const waiting = new Set<{ open: (up: Link) => Promise<Subscription>; opened?: Subscription }>();
  /** Ends the pause between two attempts early (close). */
  let wake = () => {};

  /**
   * Opens every waiting subscription on `up`, those asked for meanwhile too: when it returns,
   * none is left, so a subscription asked for after `link` is set opens on it at once.
   */
  const openWaiting = async (up: Link) => {
    for (let next = [...waiting].find((entry) => !entry.opened); next; next = [...waiting].find((entry) => !entry.opened)) {
      const opened = await next.open(up);
      next.opened = opened;
      // Unsubscribed while it opened.
      if (!waiting.has(next)) await opened.unsubscribe();
    }
  };

  /** One attempt after a failed start: reach NATS, then open what waits, then say it is up. */
  const attach = async (): Promise<Link | undefined> => {
    const up = await open();
    try {
      if (!closing) await openWaiting(up);
    } catch (error) {
      for (const entry of waiting) await entry.opened?.unsubscribe().catch(() => undefined);
      for (const entry of waiting) entry.opened = undefined;
      await up.nc.close().catch(() => undefined);
      throw error;
    }
    if (closing) {
      for (const entry of waiting) await entry.opened?.unsubscribe().catch(() => undefined);
      await up.nc.close().catch(() => undefined);
      return undefined;
    }
    link = up;
    waiting.clear();
    options.logger.info('nats reached; the event bus is connected');
    notifyReconnected();
    return up;
  };

  try {
    link = await open();
  } catch (error) {
    options.logger.warn({ err: error }, 'nats unreachable at start; running without it and retrying every second (events wait in the outbox)');
    let said = String(error);
    linked = (async () => {
      while (!closing) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, FIRST_CONNECT_RETRY_MS);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        if (closing) return undefined;
        try {
          return await attach();
        } catch (failure) {
          // Each new cause is said once (refused, then an authorization or JetStream error...).
          if (String(failure) !== said) options.logger.warn({ err: failure }, 'nats not reached yet; retrying every second');
          said = String(failure);
        }
      }
      return undefined;
    })();
  }

  /** A durable consumer of `pattern` on `link`, consumed until unsubscribed or closed. */
  const consume = async ({ jsm, js }: Link, pattern: string, handler: BusHandler, group: string): Promise<Subscription> => {
    const durable = `${group}-${pattern}`.replace(/[^\w-]/g, '_');
    await jsm.consumers
      .add(stream, {
        durable_name: durable,
        filter_subject: `${prefix}.${pattern}`,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.New,
        max_deliver: MAX_DELIVERIES,
        ack_wait: 30 * 1e9,
      })
      .catch(async (error: unknown) => {
        if (!(await jsm.consumers.info(stream, durable).catch(() => undefined))) throw error;
      });
    const consumer = await js.consumers.get(stream, durable);
    let messages = await consumer.consume();
    let unsubscribed = false;
    const stopped = () => unsubscribed || closing;
    running.add(messages);
    const handle = async (message: JsMsg) => {
      const attempt = message.info.deliveryCount;
      try {
        await handler({
          subject: message.subject.slice(prefix.length + 1),
          id: message.headers?.get('Nats-Msg-Id') || String(message.seq),
          data: message.json(),
          attempt,
        });
        settle(() => message.ack());
      } catch (error) {
        options.logger.warn({ err: error, subject: message.subject, attempt }, 'event handler failed; will retry');
        settle(() => message.nak(redeliveryDelayMs(attempt)));
      }
    };
    /** An ack lost with the connection is no loss: the server redelivers after `ack_wait`. */
    const settle = (fn: () => void) => {
      try {
        fn();
      } catch (error) {
        options.logger.warn({ err: error, durable }, 'event ack not sent; the server will redeliver');
      }
    };
    // The consume loop outlives any outage: when its iterator ends in an error (heartbeats
    // missed, consumer gone), it is logged and the consumer opened again, never left to
    // reject unheard, which would end the process.
    void (async () => {
      while (!stopped()) {
        try {
          for await (const message of messages) {
            // Closing: what is still buffered is left unacknowledged, for the server to deliver again.
            if (stopped()) return;
            await handle(message);
          }
          if (stopped()) return;
        } catch (error) {
          if (stopped()) return;
          options.logger.warn({ err: error, durable }, 'event consumer stopped; reopening it');
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        if (stopped()) return;
        try {
          running.delete(messages);
          messages = await (await js.consumers.get(stream, durable)).consume();
          running.add(messages);
        } catch (error) {
          options.logger.warn({ err: error, durable }, 'event consumer not reopened yet; retrying');
        }
      }
    })();
    return {
      unsubscribe: async () => {
        unsubscribed = true;
        running.delete(messages);
        await messages.close();
      },
    };
  };

  /** A core subscription to `pattern` on `link`: every process hears each event, nothing is kept. */
  const listen = async ({ nc }: Link, pattern: string, handler: BusHandler): Promise<Subscription> => {
    // JetStream stores what is published on its subjects, and core NATS still fans every
    // message out to plain subscribers: each process hears it, nothing is kept for it.
    const subscription = nc.subscribe(`${prefix}.${pattern}`, {
      callback: (error, message) => {
        if (error) return;
        let data: unknown;
        try {
          data = message.json();
        } catch {
          options.logger.warn({ subject: message.subject }, 'ignoring a broadcast event that is not JSON');
          return;
        }
        const event = { subject: message.subject.slice(prefix.length + 1), id: message.headers?.get('Nats-Msg-Id') || randomUUID(), data, attempt: 1 };
        handler(event).catch((failure: unknown) => options.logger.warn({ err: failure, subject: event.subject }, 'broadcast event handler failed'));
      },
    });
    // Live at the server once this resolves: what is published after it is heard.
    await nc.flush();
    return {
      unsubscribe: async () => {
        subscription.unsubscribe();
      },
    };
  };

  /**
   * Requests travel outside the stream's subjects (`<prefix>.>`): JetStream would store them
   * and answer each with its own acknowledgement, racing the responder.
   */
  const requestSubject = (subject: string) => `${prefix}-requests.${subject}`;

  /** A core queue subscription: one responder of the group answers each request, `{ ok, data | error }`. */
  const answer = async ({ nc }: Link, subject: string, responder: Responder): Promise<Subscription> => {
    const subscription = nc.subscribe(requestSubject(subject), {
      queue: 'responders',
      callback: (error, message) => {
        if (error) return;
        void (async () => {
          let reply: unknown;
          try {
            reply = { ok: true, data: await responder(message.json()) };
          } catch (failure) {
            options.logger.warn({ err: failure, subject }, 'request responder failed');
            reply = { ok: false, error: (failure as Error).message };
          }
          // A requester gone since (timed out, disconnected) loses nothing: it asks again.
          try {
            message.respond(JSON.stringify(reply));
          } catch (failure) {
            options.logger.warn({ err: failure, subject }, 'request answer not sent');
          }
        })();
      },
    });
    await nc.flush();
    return {
      unsubscribe: async () => {
        subscription.unsubscribe();
      },
    };
  };

  /** Opens a subscription on the link, now if it is up, else with the others waiting for it. */
  const subscribeOn = async (open: (up: Link) => Promise<Subscription>): Promise<Subscription> => {
    if (link) return open(link);
    const entry: { open: typeof open; opened?: Subscription } = { open };
    waiting.add(entry);
    return {
      unsubscribe: async () => {
        waiting.delete(entry);
        await entry.opened?.unsubscribe();
      },
    };
  };

  return {
    kind: 'nats',
    publish: async (subject, data, publishOptions) => {
      if (!link) throw new Error('nats has not been reached yet; the event stays in the outbox');
      await link.js.publish(`${prefix}.${subject}`, JSON.stringify(data), { msgID: publishOptions?.id ?? randomUUID() });
    },
    subscribe: (pattern, handler, subscribeOptions) =>
      subscribeOptions.broadcast
        ? subscribeOn((up) => listen(up, pattern, handler))
        : subscribeOn((up) => consume(up, pattern, handler, subscribeOptions.group)),
    request: async (subject, data, requestOptions) => {
      if (!link) throw new Error('nats has not been reached yet');
      const message = await link.nc.request(requestSubject(subject), JSON.stringify(data ?? null), { timeout: requestOptions?.timeoutMs ?? REQUEST_TIMEOUT_MS });
      const reply = message.json<{ ok: boolean; data?: unknown; error?: string }>();
      if (!reply.ok) throw new Error(`the responder to ${subject} failed: ${reply.error ?? 'no reason given'}`);
      return reply.data;
    },
    respond: (subject, responder) => subscribeOn((up) => answer(up, subject, responder)),
    onReconnect: (listener) => {
      reconnectListeners.add(listener);
      return () => reconnectListeners.delete(listener);
    },
    ping: async () => {
      if (!link) throw new Error('nats has not been reached yet');
      await link.nc.flush();
    },
    close: async () => {
      closing = true;
      // A consumer closes once its handler in progress has finished; a handler that hangs must
      // not hold the shutdown (its message is delivered again after ack_wait).
      await Promise.race([
        Promise.all([...running].map((messages) => messages.close())),
        new Promise((resolve) => setTimeout(resolve, CLOSE_TIMEOUT_MS).unref()),
      ]);
      // Not reached yet: the retry loop stops at once, or with the attempt under way, if that
      // ends soon; there is nothing to drain.
      if (!link) {
        wake();
        await Promise.race([linked, new Promise((resolve) => setTimeout(resolve, CLOSE_TIMEOUT_MS).unref())]);
        return;
      }
      const { nc, jsm } = link;
      if (options.deleteStreamOnClose) await jsm.streams.delete(stream).catch(() => undefined);
      // Draining needs the server: with NATS unreachable it would wait for a reconnection forever.
      const drained = nc.drain().then(
        () => true,
        () => false,
      );
      const timer = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), CLOSE_TIMEOUT_MS).unref());
      if (!(await Promise.race([drained, timer]))) await nc.close().catch(() => undefined);
    },
  };
}
