// `BENCH_ONLY=nginx,compare`: the headline figures of two variants of the platform in the same
// round, so a trick (a flag, a piece of code) is kept only where it shows: (a) on the
// all-in-one, (c) in split mode, and the all-in-one's idle memory. A is this checkout as `npm
// start` runs it; B is BENCH_B_ROOT (a built checkout) started as BENCH_B_START says.
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { median, measure } from './measure.js';
import { nodeMegabytes, processTree, hundredRequestsThenIdle } from './npm-start.js';
import { createProduct, nodeCommandOf, startAllInOne, startScriptOf, startSplit, THIS_CHECKOUT, type AllInOne, type Jwks, type Variant } from './platform.js';
import type { Row, ScenarioKey } from './scenarios.js';
import { B_ROOT, B_START, CONNECTIONS, DURATION } from './settings.js';

export const VARIANTS: Record<'A' | 'B', Variant> = {
  A: THIS_CHECKOUT,
  B: { name: 'B', root: B_ROOT, node: nodeCommandOf(B_START ?? startScriptOf(B_ROOT)) },
};

/** Each round's idle memory of each variant's all-in-one node process, MB. */
export const idleMemory: { A: number[]; B: number[] } = { A: [], B: [] };

type Name = keyof typeof VARIANTS;

/**
 * One round: both all-in-ones started (the first-started alternates by round: of two
 * identical processes the first-started served ~2% less), each's idle memory after the
 * bench's 100 requests and a 5 s pause, then (a) on A, B, B, A after both warmed (a drift over
 * the phase weighs on both alike); then split mode's (c) on each in turn, in the round's order.
 */
export async function compareRound(round: number, jwks: Jwks): Promise<Row[]> {
  const order: Name[] = round % 2 === 1 ? ['A', 'B'] : ['B', 'A'];
  const platforms = {} as Record<Name, AllInOne>;
  const rows: Row[] = [];
  try {
    for (const name of order) platforms[name] = await startAllInOne({ variant: VARIANTS[name] });
    for (const name of order) {
      const pool = new Pool(platforms[name].base, { connections: 1, keepAliveTimeout: 60_000 });
      try {
        await hundredRequestsThenIdle(pool, platforms[name].password);
      } finally {
        await pool.close();
      }
      const mb = nodeMegabytes(processTree(platforms[name].pid));
      idleMemory[name].push(mb);
      console.log(`  compare: idle RSS of variant ${name}'s node process${' '.repeat(14)} ${mb.toFixed(0)} MB`);
    }
    const options = (platform: AllInOne) => ({ url: `${platform.base}/api/v1/products/${platform.id}`, headers: { authorization: `Bearer ${platform.token}` } });
    for (const name of order) await autocannon({ ...options(platforms[name]), connections: CONNECTIONS, duration: DURATION });
    const reads: Record<Name, Row[]> = { A: [], B: [] };
    for (const name of [...order, ...[...order].reverse()]) reads[name].push(await measure(round, `read${name}` as ScenarioKey, options(platforms[name])));
    for (const name of ['A', 'B'] as const) rows.push(mean(`read${name}`, reads[name]));
  } finally {
    await Promise.all(Object.values(platforms).map((platform) => platform.stop()));
  }
  for (const name of order) {
    const split = await startSplit(jwks, { variant: VARIANTS[name] });
    try {
      const token = await jwks.mint();
      const id = await createProduct(split.base, token);
      rows.push(await measure(round, `split${name}`, { url: `${split.base}/api/v1/products/${id}`, headers: { authorization: `Bearer ${token}` } }));
    } finally {
      await split.stop();
    }
  }
  return rows;
}

/** One row for a variant's measurements of a round: their mean rate, counted only when all are. */
function mean(key: string, rows: Row[]): Row {
  const rps = rows.reduce((sum, row) => sum + (row.rps ?? 0), 0) / rows.length;
  return { key: key as ScenarioKey, rps, p50: rows[0]?.p50, p99: Math.max(...rows.map((row) => row.p99 ?? 0)), failures: rows.reduce((sum, row) => sum + row.failures, 0) };
}

/** B against A: each headline figure's median over the rounds, and B's over A's. */
export function reportCompare(rounds: Row[][]): void {
  console.log(`\ncompare: A = ${VARIANTS.A.root} (${describe(VARIANTS.A)}), B = ${VARIANTS.B.root} (${describe(VARIANTS.B)})`);
  const ratioOf = (key: string) => median(rounds.flatMap((rows) => rows.filter((row) => row.key === key && row.failures === 0 && row.ratio !== undefined).map((row) => row.ratio!)));
  const line = (figure: string, a: number | undefined, b: number | undefined, digits: number) => ({
    figure,
    A: a === undefined ? '-' : a.toFixed(digits),
    B: b === undefined ? '-' : b.toFixed(digits),
    'B / A': a === undefined || b === undefined ? '-' : (b / a).toFixed(3),
  });
  console.table([
    line('(a) all-in-one, x nginx', ratioOf('readA'), ratioOf('readB'), 3),
    line('(c) split, x nginx', ratioOf('splitA'), ratioOf('splitB'), 3),
    line('idle RSS of the node process, MB', median(idleMemory.A), median(idleMemory.B), 0),
  ]);
  console.log(`  per round, (a) A/B x nginx: ${rounds.map((rows) => ['readA', 'readB'].map((key) => rows.find((row) => row.key === key)?.ratio?.toFixed(3) ?? '-').join('/')).join(', ')}`);
  console.log(`  per round, (c) A/B x nginx: ${rounds.map((rows) => ['splitA', 'splitB'].map((key) => rows.find((row) => row.key === key)?.ratio?.toFixed(3) ?? '-').join('/')).join(', ')}`);
  console.log(`  per round, idle MB A/B: ${idleMemory.A.map((a, i) => `${a.toFixed(0)}/${idleMemory.B[i]?.toFixed(0) ?? '-'}`).join(', ')}`);
}

const describe = (variant: Variant) =>
  [...Object.entries(variant.node.env).map(([name, value]) => `${name}=${value}`), 'node', ...variant.node.flags].join(' ');
