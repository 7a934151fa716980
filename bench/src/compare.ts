// `BENCH_ONLY=nginx,compare`: the headline figures of variants of the platform in the same
// rounds, so a trick (a flag, a piece of code) stays only where it shows: (a) on the
// all-in-one and its idle memory, and (c) in split mode when a variant is another build. A is
// this checkout as `npm start` runs it; the others are BENCH_B_ROOT started as BENCH_B_START says.
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { median, measure } from './measure.js';
import { hundredRequestsThenIdle, nodeMegabytes, processTree } from './npm-start.js';
import { createProduct, nodeCommandOf, startAllInOne, startScriptOf, startSplit, THIS_CHECKOUT, type AllInOne, type Jwks, type Variant } from './platform.js';
import { LABELS } from './scenarios.js';
import { B_ROOTS, B_STARTS, COMPARE_SPLIT, CONNECTIONS, DURATION } from './settings.js';

const others = B_ROOTS.flatMap((root) => (B_STARTS.length > 0 ? B_STARTS : [startScriptOf(root)]).map((script) => ({ root, node: nodeCommandOf(script) })));

export const VARIANTS: Variant[] = [{ ...THIS_CHECKOUT, name: 'A' }, ...others.map((other, index) => ({ ...other, name: String.fromCharCode(66 + index) }))];

const otherBuild = COMPARE_SPLIT && B_ROOTS.some((root) => resolve(root) !== resolve(THIS_CHECKOUT.root));

/** A variant's figures in one round; ratios to the round's nginx baseline. */
interface Figures {
  read?: number;
  split?: number;
  idleMb?: number;
}

/** Each round's figures, by variant name. */
const rounds: Record<string, Figures>[] = [];

/**
 * One round: every variant's all-in-one started (the order of starts alternating by round: of
 * two identical processes the first-started served ~2% less), each's idle memory after the
 * bench's 100 requests and a 5 s pause, then (a) on each in order and again in reverse (A B C
 * C B A) once all are warm, so a drift over the phase weighs on all alike; then, when the
 * variants are different builds, split mode's (c) on each in turn.
 */
export async function compareRound(round: number, jwks: Jwks, baselineRps: number | undefined): Promise<void> {
  const order = round % 2 === 1 ? [...VARIANTS] : [...VARIANTS].reverse();
  const figures: Record<string, Figures> = Object.fromEntries(VARIANTS.map((variant) => [variant.name, {}]));
  const ratio = (rps: number, failures: number) => (baselineRps && failures === 0 ? rps / baselineRps : undefined);
  const platforms = new Map<Variant, AllInOne>();
  try {
    for (const variant of order) platforms.set(variant, await startAllInOne({ variant }));
    for (const variant of order) {
      const platform = platforms.get(variant)!;
      const pool = new Pool(platform.base, { connections: 1, keepAliveTimeout: 60_000 });
      try {
        await hundredRequestsThenIdle(pool, platform.password);
      } finally {
        await pool.close();
      }
      figures[variant.name]!.idleMb = nodeMegabytes(processTree(platform.pid));
      console.log(`  ${`compare: idle RSS of ${variant.name}'s node process`.padEnd(48)} ${figures[variant.name]!.idleMb!.toFixed(0)} MB`);
    }
    const options = (platform: AllInOne) => ({ url: `${platform.base}/api/v1/products/${platform.id}`, headers: { authorization: `Bearer ${platform.token}` } });
    for (const variant of order) await autocannon({ ...options(platforms.get(variant)!), connections: CONNECTIONS, duration: DURATION });
    const reads = new Map<Variant, { rps: number; failures: number }[]>(VARIANTS.map((variant) => [variant, []]));
    for (const variant of [...order, ...[...order].reverse()]) {
      reads.get(variant)!.push(await measure(round, 'compareRead', options(platforms.get(variant)!), `${LABELS.compareRead}, ${variant.name}`));
    }
    for (const [variant, rows] of reads) {
      figures[variant.name]!.read = ratio(rows.reduce((sum, row) => sum + row.rps, 0) / rows.length, rows.reduce((sum, row) => sum + row.failures, 0));
    }
  } finally {
    await Promise.all([...platforms.values()].map((platform) => platform.stop()));
  }
  if (otherBuild) {
    for (const variant of order) {
      const split = await startSplit(jwks, { variant });
      try {
        const token = await jwks.mint();
        const id = await createProduct(split.base, token);
        const row = await measure(round, 'compareSplit', { url: `${split.base}/api/v1/products/${id}`, headers: { authorization: `Bearer ${token}` } }, `${LABELS.compareSplit}, ${variant.name}`);
        figures[variant.name]!.split = ratio(row.rps, row.failures);
      } finally {
        await split.stop();
      }
    }
  }
  rounds.push(figures);
  console.table(VARIANTS.map((variant) => ({ variant: variant.name, ...printable(figures[variant.name]!) })));
}

const printable = (figures: Figures) => ({
  '(a) x nginx': figures.read?.toFixed(3) ?? '-',
  '(c) x nginx': figures.split?.toFixed(3) ?? '-',
  'idle MB': figures.idleMb?.toFixed(0) ?? '-',
});

const describe = (variant: Variant) => `${variant.root}: ${[...Object.entries(variant.node.env).map(([name, value]) => `${name}=${value}`), 'node', ...variant.node.flags].join(' ')}`;

/** Each variant's median figures over the rounds, and each against A's. */
export function reportCompare(): void {
  console.log(`\ncompare, median of ${rounds.length} round(s) (ratios to the same round's nginx baseline):`);
  for (const variant of VARIANTS) console.log(`  ${variant.name} = ${describe(variant)}`);
  const medianOf = (name: string, figure: keyof Figures) => median(rounds.flatMap((round) => (round[name]?.[figure] === undefined ? [] : [round[name]![figure]!])));
  const a = { read: medianOf('A', 'read'), split: medianOf('A', 'split'), idleMb: medianOf('A', 'idleMb') };
  const against = (value: number | undefined, base: number | undefined) => (value === undefined || base === undefined ? '-' : (value / base).toFixed(3));
  console.table(
    VARIANTS.map((variant) => {
      const figures = { read: medianOf(variant.name, 'read'), split: medianOf(variant.name, 'split'), idleMb: medianOf(variant.name, 'idleMb') };
      return {
        variant: variant.name,
        ...printable(figures),
        '(a) / A': against(figures.read, a.read),
        '(c) / A': against(figures.split, a.split),
        'idle / A': against(figures.idleMb, a.idleMb),
        'per round (a)': rounds.map((round) => round[variant.name]?.read?.toFixed(3) ?? '-').join(' '),
        'per round MB': rounds.map((round) => round[variant.name]?.idleMb?.toFixed(0) ?? '-').join(' '),
      };
    }),
  );
}
