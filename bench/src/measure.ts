// The measurement: autocannon for what it can replay, a closed loop of undici requests for
// what it cannot, and times for the bounds. Each prints its row as it ends.
import autocannon from 'autocannon';
import { Pool, type Dispatcher } from 'undici';
import { CONNECTIONS, DURATION, WARMUP } from './settings.js';
import { LABELS, type Row, type ScenarioKey } from './scenarios.js';

/** Broken runs, by scenario and round: they do not count, and make the exit code 1. */
export const broken: string[] = [];

const line = (label: string, row: { rps: number; p50: number; p99: number }) =>
  `  ${label.padEnd(48)} ${String(Math.round(row.rps)).padStart(7)} rps  p50 ${row.p50} ms  p99 ${row.p99} ms`;

/** Says a row broke, counts it as broken, or prints it as it is. */
export function printRow(round: number | string, label: string, text: string, failures: number, why = 'unexpected answers or errors'): void {
  console.log(failures > 0 ? `${text}\n  !!!!! BROKEN: ${failures} ${why}; this scenario does not count !!!!!` : text);
  if (failures > 0) broken.push(`round ${round}: ${label} (${failures} failures)`);
}

export type Load = Omit<autocannon.Options, 'connections' | 'duration'>;

export const failuresOf = (...results: autocannon.Result[]) => results.reduce((sum, r) => sum + r.non2xx + r.errors + r.timeouts, 0);

export const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);

/** How long a paced request may wait for its answer before it counts as a timeout, as autocannon's default. */
const PACED_TIMEOUT_MS = 10_000;

/**
 * An open loop at `overallRate` requests a second, evenly spaced: request i is due at
 * i / overallRate seconds, whatever the answers before it, over at most `connections`
 * connections (undici queues the rest). Each latency runs from when its request was due, so
 * a stall counts against every request it delays (no coordinated omission). autocannon's own
 * rate limit is no such thing: each connection sends its share of a second back to back as
 * the second starts, so "200/s over 10 connections" is a burst of 200 requests each second.
 * For rates up to a few hundred a second: undici costs this process more per request than
 * autocannon, and at thousands a second (measured: 3,600/s beside the all-in-one on 2 cores)
 * the loop itself falls behind and its p99 is its own.
 */
export async function paced(options: Load & { connections?: number; overallRate: number }, duration = DURATION): Promise<autocannon.Result> {
  const { origin, pathname, search } = new URL(options.url);
  const pool = new Pool(origin, { connections: options.connections ?? CONNECTIONS, keepAliveTimeout: 60_000 });
  const latencies: number[] = [];
  const statusCodeStats: Record<string, { count: number }> = {};
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  const one = async (due: number) => {
    try {
      const response = await pool.request({
        path: `${pathname}${search}`,
        method: (options.method ?? 'GET') as Dispatcher.HttpMethod,
        headers: options.headers,
        body: options.body,
        headersTimeout: PACED_TIMEOUT_MS,
        bodyTimeout: PACED_TIMEOUT_MS,
      });
      await response.body.dump({ limit: Number.POSITIVE_INFINITY });
      const status = String(response.statusCode);
      statusCodeStats[status] = { count: (statusCodeStats[status]?.count ?? 0) + 1 };
      if (response.statusCode >= 200 && response.statusCode < 300) latencies.push(performance.now() - due);
      else non2xx++;
    } catch (error) {
      if ((error as { code?: string }).code?.endsWith('_TIMEOUT')) timeouts++;
      else errors++;
    }
  };
  const interval = 1000 / options.overallRate;
  const count = Math.round(duration * options.overallRate);
  const started = performance.now();
  let sent = 0;
  let settled = 0;
  let allSettled!: () => void;
  const done = new Promise<void>((resolve) => (allSettled = resolve));
  const send = (due: number) =>
    void one(due).finally(() => {
      if (++settled === count) allSettled();
    });
  while (sent < count) {
    const now = performance.now();
    // Every request due by now goes out now, late ones included: the schedule never slips.
    while (sent < count && started + sent * interval <= now) send(started + sent++ * interval);
    if (sent < count) await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + sent * interval - performance.now())));
  }
  if (count > 0) await done;
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const ms = (value: number) => Math.round(value * 10) / 10;
  const average = latencies.reduce((sum, value) => sum + value, 0) / (latencies.length || 1);
  return {
    requests: { average: latencies.length / elapsed, p50: 0, p99: 0 },
    latency: { average: ms(average), p50: ms(percentile(latencies, 50)), p99: ms(percentile(latencies, 99)) },
    non2xx,
    errors,
    timeouts,
    statusCodeStats,
  };
}

/** autocannon for BENCH_WARMUP seconds (not counted), then for BENCH_DURATION seconds. */
export async function measure(round: number | string, key: ScenarioKey, options: Load, label: string = LABELS[key]): Promise<Row & { rps: number; p50: number; p99: number }> {
  const run = (duration: number) => autocannon({ ...options, connections: CONNECTIONS, duration });
  const warm = options.overallRate ? undefined : await run(WARMUP);
  const result = await run(DURATION);
  const failures = failuresOf(result, ...(warm ? [warm] : []));
  const row = { key, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, failures };
  const statuses = JSON.stringify(result.statusCodeStats ?? {});
  printRow(round, label, line(label, row), failures, `non-2xx answers, errors or timeouts (statuses ${statuses})`);
  return row;
}

export function median(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export interface ClosedLoop {
  /** The request of `worker`'s next turn. */
  next?(worker: number): Dispatcher.RequestOptions;
  /** Whether `worker`'s answer was the expected one. */
  settle?(worker: number, status: number, body: string): boolean;
  /** A step of several requests instead: resolves whether all went right. */
  run?(pool: Pool, worker: number): Promise<boolean>;
  workers?: number;
}

/**
 * A closed-loop load for requests that autocannon cannot replay, because each one needs what
 * the last one answered (a rotating refresh token): BENCH_CONNECTIONS workers, each sending its
 * next request when the last one is answered, for `seconds`.
 */
async function closedLoop(url: string, seconds: number, { next, settle, run, workers = CONNECTIONS }: ClosedLoop) {
  const pool = new Pool(url, { connections: workers, keepAliveTimeout: 60_000 });
  const latencies: number[] = [];
  let failures = 0;
  const deadline = Date.now() + seconds * 1000;
  const worker = async (index: number) => {
    while (Date.now() < deadline) {
      const started = performance.now();
      try {
        let settled: boolean;
        if (run) settled = await run(pool, index);
        else {
          const response = await pool.request(next!(index));
          settled = settle!(index, response.statusCode, await response.body.text());
        }
        if (settled) latencies.push(performance.now() - started);
        else failures++;
      } catch {
        failures++;
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: workers }, (_, index) => worker(index)));
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / elapsed, p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)), failures };
}

/** BENCH_WARMUP seconds of a closed loop (not counted), then BENCH_DURATION seconds; prints and returns the row. */
export async function measureLoop(round: number | string, key: ScenarioKey, url: string, options: ClosedLoop, label: string = LABELS[key]): Promise<Row & { rps: number }> {
  const warm = await closedLoop(url, WARMUP, options);
  const result = await closedLoop(url, DURATION, options);
  const row = { key, rps: result.rps, p50: result.p50, p99: result.p99, failures: warm.failures + result.failures };
  printRow(round, label, line(label, row), row.failures);
  return row;
}

/** A row of times (ms): p50, p99 and max of the samples; printed like the other rows. */
export function timesRow(round: number, key: ScenarioKey, times: number[], failures: number): Row {
  const sorted = [...times].sort((a, b) => a - b);
  const row = { key, p50: Math.round(percentile(sorted, 50)), p99: Math.round(percentile(sorted, 99)), max: Math.round(sorted.at(-1) ?? 0), failures };
  const text = `  ${LABELS[key].padEnd(48)} ${String(sorted.length).padStart(7)} times  p50 ${row.p50} ms  p99 ${row.p99} ms  max ${row.max} ms`;
  printRow(round, LABELS[key], text, failures, 'unexpected answers, errors or misses');
  return row;
}
