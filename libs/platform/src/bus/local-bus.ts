import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import { MAX_DELIVERIES, redeliveryDelayMs, subjectMatches, type Bus, type BusHandler, type BusMessage, NoResponderError, type Responder } from './bus.js';

interface Group {
  pattern: string;
  handlers: BusHandler[];
  next: number;
}

/**
 * The in-process bus of the all-in-one default. Same contract as NATS: asynchronous,
 * at-least-once delivery with retries, one delivery per group; broadcast subscribers each get every event.
 */
export function createLocalBus(options: { logger: Logger }): Bus {
  const groups = new Map<string, Group>();
  const timers = new Set<NodeJS.Timeout>();
  /** Each responder wrapped, so one function registered twice is two responders. */
  const responders = new Map<string, { responders: { answer: Responder }[]; next: number }>();
  let closed = false;

  const deliver = (group: Group, message: BusMessage) => {
    if (closed || group.handlers.length === 0) return;
    const handler = group.handlers[group.next++ % group.handlers.length]!;
    handler(message).catch((error: unknown) => {
      if (message.attempt >= MAX_DELIVERIES) {
        options.logger.error({ err: error, subject: message.subject, id: message.id }, 'event dropped after repeated failures');
        return;
      }
      const timer = setTimeout(() => {
        timers.delete(timer);
        deliver(group, { ...message, attempt: message.attempt + 1 });
      }, redeliveryDelayMs(message.attempt));
      timers.add(timer);
    });
  };

  return {
    kind: 'local',
    publish: async (subject, data, publishOptions) => {
      if (closed) throw new Error('the bus is closed');
      // Serialize like the wire would, so no subscriber can mutate the publisher's object.
      const payload = JSON.stringify(data);
      const id = publishOptions?.id ?? randomUUID();
      for (const group of groups.values()) {
        if (!subjectMatches(group.pattern, subject)) continue;
        setImmediate(() => deliver(group, { subject, id, data: JSON.parse(payload), attempt: 1 }));
      }
    },
    subscribe: async (pattern, handler, subscribeOptions) => {
      // A broadcast subscriber is a group of its own: it gets every event.
      const key = subscribeOptions.broadcast ? `\u0000broadcast\u0000${randomUUID()}` : `${subscribeOptions.group}\u0000${pattern}`;
      const group = groups.get(key) ?? { pattern, handlers: [], next: 0 };
      group.handlers.push(handler);
      groups.set(key, group);
      return {
        unsubscribe: async () => {
          group.handlers = group.handlers.filter((h) => h !== handler);
          if (group.handlers.length === 0) groups.delete(key);
        },
      };
    },
    request: async (subject, data) => {
      if (closed) throw new Error('the bus is closed');
      const entry = responders.get(subject);
      if (!entry || entry.responders.length === 0) throw new NoResponderError(subject);
      const { answer } = entry.responders[entry.next++ % entry.responders.length]!;
      // Serialized both ways like the wire would: neither side can mutate the other's object.
      const answered = await answer(JSON.parse(JSON.stringify(data ?? null)));
      return JSON.parse(JSON.stringify(answered ?? null));
    },
    respond: async (subject, responder) => {
      const entry = responders.get(subject) ?? { responders: [], next: 0 };
      const registered = { answer: responder };
      entry.responders.push(registered);
      responders.set(subject, entry);
      return {
        unsubscribe: async () => {
          entry.responders = entry.responders.filter((r) => r !== registered);
        },
      };
    },
    // Nothing in process ever disconnects.
    onReconnect: () => () => undefined,
    ping: async () => {
      if (closed) throw new Error('the bus is closed');
    },
    close: async () => {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      groups.clear();
      responders.clear();
    },
  };
}
