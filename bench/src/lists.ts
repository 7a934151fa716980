// `BENCH_ONLY=lists npm run bench`: issue 27's lists that stay fast. One million products in a
// fresh real-Postgres database (split mode's crud behind the gateway, platform.ts), loaded by
// one INSERT ... SELECT generate_series rather than through the API, then a filtered, sorted
// page measured at the first page, 200 000 rows deep by cursor (the cursor
// reached by walking the list through its Link headers), 200 000 deep by offset (for the
// record: it reads and sorts every row it skips), and with Prefer: count=exact and
// count=estimated. crud runs with its cache off, so every request reaches the database.
import autocannon from 'autocannon';
import { createLogger, openPostgres } from '@app/platform';
import { failuresOf, paced, printRow } from './measure.js';
import { expectStatus, type Jwks, startSplit } from './platform.js';
import { CONNECTIONS, DURATION, WARMUP } from './settings.js';

/** The products loaded: the figures are for a million. */
const ROWS = 1_000_000;
/** How deep the deep pages start: the offset 200k, within one category (a quarter of the rows). */
const DEPTH = 200_000;
/** The page: one category, by price (ties broken by id), a full page. */
const LIST = '/api/v1/products?category=Fruits&sort=price&limit=100';
/** A steady rate for the deep page, evenly paced (measure.ts's open loop), about a third of what 10 connections get on 2 cores: reported, not a target. */
const STEADY_RATE = 200;
/** The target for a deep page by cursor and for count=estimated (10 connections, as fast as they go). */
const TARGET_P99_MS = 20;

/** Prices repeat (10 000 values), a tenth of descriptions are null, createdAt is distinct. */
const LOAD_SQL = `
  insert into "crud"."product" ("name", "price", "description", "stock", "category", "perishable", "createdAt", "updatedAt")
  select 'Bulk ' || g, ((g::int8 * 7919) % 10000) / 100.0, case when g % 10 = 0 then null else 'Bulk product ' || g end, g % 1000,
         (array['Fruits', 'Vegetables', 'Meats', 'Hygiene'])[g % 4 + 1], g % 2 = 0,
         now() - g * interval '1 second', now() - g * interval '1 second'
  from generate_series(1, ${ROWS}) as g;
  analyze "crud"."product";`;

const nextLink = (response: Response) => /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '')?.[1];

/** The URL of the page DEPTH rows into LIST, by following rel="next" from its first page. */
async function walkToDepth(base: string, token: string): Promise<string> {
  let url = LIST;
  for (let read = 0; read < DEPTH; read += 100) {
    const response = await expectStatus(await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${token}` } }), 200, `GET ${url}`);
    const next = nextLink(response);
    await response.arrayBuffer();
    if (!next) throw new Error(`the list ended after ${read} rows, before ${DEPTH}`);
    url = next;
  }
  return url;
}

interface ListRow {
  label: string;
  p50: number;
  p99: number;
  rps: number;
  failures: number;
}

/** One URL, warm-up then measured, as measure.ts does (10 connections as fast as they go, or paced at `rate`); a row with its p50 and p99. */
async function measureList(round: number, label: string, url: string, headers: Record<string, string>, rate?: number): Promise<ListRow> {
  // A deep offset takes seconds a request: a longer timeout than autocannon's 10 s keeps it a figure, not a timeout.
  const run = (duration: number) =>
    rate ? paced({ url, headers, overallRate: rate }, duration) : autocannon({ url, headers, connections: CONNECTIONS, duration, timeout: 60 });
  const warm = await run(WARMUP);
  const result = await run(DURATION);
  const row = { label, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, failures: failuresOf(result, warm) };
  const text = `  ${label.padEnd(48)} ${String(Math.round(row.rps)).padStart(7)} rps  p50 ${row.p50} ms  p99 ${row.p99} ms`;
  printRow(round, `lists: ${label}`, text, row.failures, `non-2xx answers, errors or timeouts (statuses ${JSON.stringify(result.statusCodeStats ?? {})})`);
  return row;
}

/** The lists scenarios of one round; prints each row and the targets. */
export async function listScenarios(round: number, jwks: Jwks): Promise<void> {
  const split = await startSplit(jwks);
  try {
    const database = openPostgres({ url: split.databaseUrl, poolMax: 1, logger: createLogger({ LOG_LEVEL: 'silent' }) });
    const started = performance.now();
    try {
      await database.exec(LOAD_SQL);
    } finally {
      await database.close();
    }
    console.log(`  loaded ${ROWS} products in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    // Cache off: a cached page would measure Redis, not the list's SQL.
    await split.restartCrud(0);
    const token = await jwks.mint();
    const auth = { authorization: `Bearer ${token}` };
    const walking = performance.now();
    const deep = await walkToDepth(split.base, token);
    console.log(`  walked ${DEPTH} rows by cursor in ${((performance.now() - walking) / 1000).toFixed(1)} s (${DEPTH / 100} pages)`);
    const rows = [
      await measureList(round, 'first page', `${split.base}${LIST}`, auth),
      await measureList(round, `${DEPTH} rows deep, by cursor`, `${split.base}${deep}`, auth),
      // The same page at a rate well below what 10 connections get: its latency when the machine is not saturated.
      await measureList(round, `${DEPTH} rows deep, by cursor, at ${STEADY_RATE}/s`, `${split.base}${deep}`, auth, STEADY_RATE),
      await measureList(round, 'first page, Prefer: count=estimated', `${split.base}${LIST}`, { ...auth, prefer: 'count=estimated' }),
      // The slow ones last: when a run ends, Postgres still works through the statements its
      // connections had in flight (seconds each), which would weigh on the next row's figures.
      await measureList(round, `${DEPTH} rows deep, by offset (slow by design)`, `${split.base}${LIST}&offset=${DEPTH}`, auth),
      await measureList(round, 'first page, Prefer: count=exact', `${split.base}${LIST}`, { ...auth, prefer: 'count=exact' }),
    ];
    for (const index of [1, 3]) {
      const row = rows[index]!;
      const verdict = row.failures > 0 ? 'BROKEN' : row.p99 <= TARGET_P99_MS ? 'PASS' : 'FAIL';
      console.log(`  target: ${row.label} p99 <= ${TARGET_P99_MS} ms: ${row.p99} ms ${verdict}`);
    }
  } finally {
    await split.stop();
  }
}
