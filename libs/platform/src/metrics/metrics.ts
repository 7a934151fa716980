import { collectDefaultMetrics, Counter, Gauge, Registry, type Histogram } from 'prom-client';
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

/** prom-client's default buckets (5 ms to 10 s): they cover a cached read and the upstream timeout's order. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One series of `http_request_duration_seconds`: a method, route template and status. */
class DurationSeries {
  /** Requests per bucket (not cumulative): counts[i] took at most DURATION_BUCKETS[i] and more than the bound before. */
  readonly counts = new Float64Array(DURATION_BUCKETS.length);
  sum = 0;
  count = 0;
  constructor(readonly labels: Readonly<Record<'method' | 'route' | 'status_code', string>>) {}

  observe(seconds: number): void {
    for (let bucket = 0; bucket < DURATION_BUCKETS.length; bucket++) {
      if (seconds <= DURATION_BUCKETS[bucket]!) {
        this.counts[bucket]! += 1;
        break;
      }
    }
    this.sum += seconds;
    this.count += 1;
  }
}

/**
 * `http_request_duration_seconds`, counted by hand and exposed through the same registry, in
 * the same format as a prom-client Histogram. prom-client's `observe` validates and hashes the
 * label values again and looks the bucket up by a property name made from the bound, on every
 * observation: ~3% of a cached read's CPU here. This counts a request with three Map look-ups,
 * a scan of eleven bounds and three additions; the exposition is built only when Prometheus scrapes.
 */
class RequestDurations {
  readonly name = 'http_request_duration_seconds';
  readonly help = 'Time from the request arriving to its response finishing, by method, route template and status.';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** By route, method and status. Bounded: routes are templates (or UNMATCHED_ROUTE), methods those Node parses, statuses 100-599. */
  private readonly series = new Map<string, Map<string, Map<number, DurationSeries>>>();

  /** The series of a route, method and status; after the first request of a kind, three Map look-ups and no allocation. */
  of(route: string, method: string, status: number): DurationSeries {
    let byMethod = this.series.get(route);
    if (!byMethod) this.series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (!series) byStatus.set(status, (series = new DurationSeries({ method, route, status_code: String(status) })));
    return series;
  }

  /** The samples of every series, as prom-client's Histogram gives them: cumulative buckets, +Inf, sum, count. */
  async get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const byMethod of this.series.values()) {
      for (const byStatus of byMethod.values()) {
        for (const { labels, counts, sum, count } of byStatus.values()) {
          let cumulative = 0;
          DURATION_BUCKETS.forEach((bound, bucket) => {
            cumulative += counts[bucket]!;
            values.push({ labels: { le: bound, ...labels }, value: cumulative, metricName: `${this.name}_bucket` });
          });
          values.push({ labels: { le: '+Inf', ...labels }, value: count, metricName: `${this.name}_bucket` });
          values.push({ labels: { ...labels }, value: sum, metricName: `${this.name}_sum` });
          values.push({ labels: { ...labels }, value: count, metricName: `${this.name}_count` });
        }
      }
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.series.clear();
  }
}

const requestDurations = new RequestDurations();
// The registry reads any object with a name, help, type, get() and reset(); its types name only
// prom-client's own classes.
metricsRegistry.registerMetric(requestDurations as unknown as Histogram);

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
    requestDurations.of(request.routeOptions.url ?? UNMATCHED_ROUTE, request.method, reply.statusCode).observe(reply.elapsedTime / 1000);
    done();
  });
}
