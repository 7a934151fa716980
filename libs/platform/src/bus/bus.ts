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

/**
 * Either a work-sharing group or a broadcast:
 * - `group`: subscribers sharing a group share the work: each event goes to one of them. With
 *   NATS the group is a durable JetStream consumer, so events published while it was away
 *   still arrive; a failing handler gets the event again.
 * - `broadcast`: every broadcast subscriber of every process gets every event, at most once,
 *   while it is connected (NATS: a core subscription; nothing is stored for it). A subscriber
 *   that must not miss anything re-reads its source of truth from `onReconnect`.
 */
export type SubscribeOptions = { group: string; broadcast?: never } | { broadcast: true; group?: never };

/** Answers one request (see `Bus.respond`); a rejection is sent back to the requester as an error. */
export type Responder = (data: unknown) => Promise<unknown>;

/** Nobody answers a request's subject (the in-process bus says so at once). */
export class NoResponderError extends Error {
  constructor(subject: string) {
    super(`no responder for ${subject}`);
    this.name = 'NoResponderError';
  }
}

/** Longest wait for an answer to `Bus.request` when the caller sets none. */
export const REQUEST_TIMEOUT_MS = 5_000;

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
  /**
   * Asks whoever answers `subject` (one responder of any process) and resolves with its
   * answer. Rejects when nobody answers (no responder, the broker unreachable, the timeout),
   * or with the responder's error. Nothing is stored: a request nobody hears is lost.
   */
  request(subject: string, data: unknown, options?: { timeoutMs?: number }): Promise<unknown>;
  /** Answers the requests on `subject`; several responders (replicas) share them, one answer each. */
  respond(subject: string, responder: Responder): Promise<Subscription>;
  /**
   * Calls `listener` each time the connection to the broker comes back after a loss, once
   * broadcast subscriptions are live again (never, in process). Returns a function that removes it.
   */
  onReconnect(listener: () => void): () => void;
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
