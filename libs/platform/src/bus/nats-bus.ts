import { randomUUID } from 'node:crypto';
import type { ConsumerMessages } from '@nats-io/jetstream';
import type { Logger } from '../logger.js';
import { MAX_DELIVERIES, redeliveryDelayMs, type Bus } from './bus.js';

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
/** Window in which a re-published event id is recognized as a duplicate. */
const DUPLICATE_WINDOW_NS = 2 * 60 * 1e9;

/**
 * NATS JetStream: events are stored in one stream and each subscriber group is a durable
 * pull consumer with explicit acks, so nothing published is lost while a consumer is away.
 */
export async function createNatsBus(options: NatsBusOptions): Promise<Bus> {
  // Loaded on first use: the embedded default never pays for the client.
  const [{ AckPolicy, DeliverPolicy, jetstream, jetstreamManager }, { connect }] = await Promise.all([
    import('@nats-io/jetstream'),
    import('@nats-io/transport-node'),
  ]);
  const stream = options.stream ?? 'EVENTS';
  const prefix = stream.toLowerCase();
  const nc = await connect({
    servers: options.servers.split(',').map((s) => s.trim()),
    name: options.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1_000,
    timeout: 3_000,
  });
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
  const js = jetstream(nc);
  const running = new Set<ConsumerMessages>();

  return {
    kind: 'nats',
    publish: async (subject, data, publishOptions) => {
      await js.publish(`${prefix}.${subject}`, JSON.stringify(data), { msgID: publishOptions?.id ?? randomUUID() });
    },
    subscribe: async (pattern, handler, subscribeOptions) => {
      const durable = `${subscribeOptions.group}-${pattern}`.replace(/[^\w-]/g, '_');
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
      const messages = await consumer.consume();
      running.add(messages);
      void (async () => {
        for await (const message of messages) {
          const attempt = message.info.deliveryCount;
          try {
            await handler({
              subject: message.subject.slice(prefix.length + 1),
              id: message.headers?.get('Nats-Msg-Id') || String(message.seq),
              data: message.json(),
              attempt,
            });
            message.ack();
          } catch (error) {
            options.logger.warn({ err: error, subject: message.subject, attempt }, 'event handler failed; will retry');
            message.nak(redeliveryDelayMs(attempt));
          }
        }
      })();
      return {
        unsubscribe: async () => {
          running.delete(messages);
          await messages.close();
        },
      };
    },
    ping: async () => {
      await nc.flush();
    },
    close: async () => {
      await Promise.all([...running].map((messages) => messages.close()));
      if (options.deleteStreamOnClose) await jsm.streams.delete(stream).catch(() => undefined);
      await nc.drain();
    },
  };
}
