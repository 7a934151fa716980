/** One event as a subscriber receives it. */
export interface BusMessage<T = unknown> {
  subject: string;
  /** Unique per event; a publisher retrying with the same id is deduplicated. */
  id: string;
  data: T;
  /** 1 on first delivery; higher when a handler failed before and the event came back. */
  attempt: number;
}

export type BusHandler = (message: BusMessage) => Promise<void>;

export interface Subscription {
  unsubscribe(): Promise<void>;
}

export interface SubscribeOptions {
  /**
   * Subscribers sharing a group share the work: each event goes to one of them. With NATS the
   * group is a durable JetStream consumer, so events published while it was away still arrive.
   */
  group: string;
}

/**
 * The event bus port: NATS JetStream when `NATS_URL` is set, in-process otherwise. Delivery
 * is at least once: a handler that rejects gets the event again, so handlers are idempotent.
 */
export interface Bus {
  readonly kind: 'nats' | 'local';
  /** Resolves once the event is stored (NATS) or queued (local). */
  publish(subject: string, data: unknown, options?: { id?: string }): Promise<void>;
  /** `pattern` uses NATS wildcards: `*` is one token, `>` the rest (`credential.>`). */
  subscribe(pattern: string, handler: BusHandler, options: SubscribeOptions): Promise<Subscription>;
  /** Rejects when the broker cannot be reached. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Whether a subject matches a NATS-style pattern. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const want = pattern.split('.');
  const have = subject.split('.');
  for (let i = 0; i < want.length; i++) {
    if (want[i] === '>') return have.length > i;
    if (i >= have.length) return false;
    if (want[i] !== '*' && want[i] !== have[i]) return false;
  }
  return want.length === have.length;
}

/** How many times an event is offered to a failing handler before it is dropped (and logged). */
export const MAX_DELIVERIES = 10;

/** Back-off before the next attempt of a failed delivery. */
export function redeliveryDelayMs(attempt: number): number {
  return Math.min(100 * 2 ** (attempt - 1), 30_000);
}
