import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { App } from '../http/app.js';

/**
 * The process's one Prometheus registry. Metrics are process-wide (one per process, whatever
 * it runs): the all-in-one's services share it, a split-mode process has its own, and
 * Prometheus tells processes apart by their `instance` label.
 */
export const metricsRegistry = new Registry();

/** Where every process serves its metrics, on its management port (management.ts), never its public one. */
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

/**
 * `http_request_duration_seconds`: time from the request arriving to its response finishing,
 * by method, route template and status, in prom-client's default buckets (5 ms to 10 s: a
 * cached read and the upstream timeout's order).
 */
const requestDurations = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from the request arriving to its response finishing, by method, route template and status.',
  labelNames: ['method', 'route', 'status_code'] as const,
  registers: [metricsRegistry],
});

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

let defaultMetricsStarted = false;

/**
 * Times every request of `app` into `http_request_duration_seconds`, in one onResponse hook.
 * Call it on the root app, once per process's app; the default process metrics (CPU, memory,
 * event loop, GC) start with the first. The metrics are served on the management port
 * (`startManagementServer`), never on the app's public one.
 */
export function recordRequestDurations(app: App): void {
  if (!defaultMetricsStarted) {
    defaultMetricsStarted = true;
    collectDefaultMetrics({ register: metricsRegistry });
  }
  // Callback style, not async: no promise per request. Fastify measured the time already.
  app.addHook('onResponse', (request, reply, done) => {
    requestDurations.observe({ method: request.method, route: request.routeOptions.url ?? UNMATCHED_ROUTE, status_code: reply.statusCode }, reply.elapsedTime / 1000);
    done();
  });
}
