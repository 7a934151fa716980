import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { App } from '../http/app.js';

/**
 * The process's one Prometheus registry. Metrics are process-wide (one per process, whatever
 * it runs): the all-in-one's services share it, a split-mode process has its own, and
 * Prometheus tells processes apart by their `instance` label.
 */
export const metricsRegistry = new Registry();

/** Where every process serves its metrics; never routed to a service by the gateway. */
export const METRICS_PATH = '/metrics';

/** The route label of a request that matched no route: one value, so no client can mint series. */
export const UNMATCHED_ROUTE = 'unmatched';

/** A counter in the process's registry; the existing one when a module asks twice (tests build many apps). */
export function defineCounter<Label extends string>(options: { name: string; help: string; labelNames: readonly Label[] }): Counter<Label> {
  return (metricsRegistry.getSingleMetric(options.name) as Counter<Label> | undefined) ?? new Counter({ ...options, registers: [metricsRegistry] });
}

/** A gauge in the process's registry, read when Prometheus scrapes (`collect`). */
export function defineGauge<Label extends string>(options: {
  name: string;
  help: string;
  labelNames: readonly Label[];
  collect(this: Gauge<Label>): Promise<void> | void;
}): Gauge<Label> {
  return (metricsRegistry.getSingleMetric(options.name) as Gauge<Label> | undefined) ?? new Gauge({ ...options, registers: [metricsRegistry] });
}

const requestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from the request arriving to its response finishing, by method, route template and status.',
  labelNames: ['method', 'route', 'status_code'] as const,
  // prom-client's defaults (5 ms to 10 s): covers a cached read and the upstream timeout's order.
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [metricsRegistry],
});

type Observe = (seconds: number) => void;

/** Each mounted outbox's backlog reader, by schema; read only when Prometheus scrapes. */
const outboxBacklogs = new Map<string, () => Promise<number>>();

defineGauge({
  name: 'outbox_backlog_events',
  help: 'Events committed to a service\'s transactional outbox and not yet relayed to the bus.',
  labelNames: ['service'] as const,
  async collect() {
    this.reset();
    // A database that does not answer leaves the series out of this scrape rather than failing it.
    const counts = await Promise.all([...outboxBacklogs].map(async ([service, count]) => [service, await count().catch(() => undefined)] as const));
    for (const [service, count] of counts) if (count !== undefined) this.set({ service }, count);
  },
});

/** Reports `service`'s outbox backlog at every scrape until the returned function is called. */
export function trackOutboxBacklog(service: string, count: () => Promise<number>): () => void {
  outboxBacklogs.set(service, count);
  return () => {
    if (outboxBacklogs.get(service) === count) outboxBacklogs.delete(service);
  };
}

/**
 * Each label set's `observe`, by route, method and status: after the first request of a kind
 * a request costs three map lookups and one observe, and builds no label object. Bounded:
 * routes are templates (or UNMATCHED_ROUTE), methods those Node parses, statuses 100-599.
 */
const observers = new Map<string, Map<string, Map<number, Observe>>>();

function observerOf(route: string, method: string, status: number): Observe {
  let byMethod = observers.get(route);
  if (!byMethod) observers.set(route, (byMethod = new Map()));
  let byStatus = byMethod.get(method);
  if (!byStatus) byMethod.set(method, (byStatus = new Map()));
  let observe = byStatus.get(status);
  if (!observe) {
    observe = requestDuration.labels(method, route, String(status)).observe;
    byStatus.set(status, observe);
  }
  return observe;
}

let defaultMetricsStarted = false;

/**
 * Serves GET /metrics (public, undocumented) and times every request of `app` into
 * `http_request_duration_seconds`, in one onResponse hook. Call it on the root app, once per
 * process's app; the default process metrics (CPU, memory, event loop, GC) start with the first.
 */
export function registerMetrics(app: App): void {
  if (!defaultMetricsStarted) {
    defaultMetricsStarted = true;
    collectDefaultMetrics({ register: metricsRegistry });
  }
  // Callback style, not async: no promise per request. Fastify measured the time already.
  app.addHook('onResponse', (request, reply, done) => {
    observerOf(request.routeOptions.url ?? UNMATCHED_ROUTE, request.method, reply.statusCode)(reply.elapsedTime / 1000);
    done();
  });
  app.get(METRICS_PATH, { config: { auth: 'public' }, schema: { hide: true } }, async (_request, reply) => {
    reply.type(metricsRegistry.contentType);
    return metricsRegistry.metrics();
  });
}
