// The tables: one per round as it ends, one with the median of the rounds at the end.
import { median } from './measure.js';
import { LABELS, TARGETS, TIME_BOUNDS, type Row, type ScenarioKey, type Summary, type Target } from './scenarios.js';
import { EXTRA, runs } from './settings.js';

/** Sets each row's ratio to the round's nginx baseline (none for rows at a fixed rate), and prints the round's table. */
export function reportRound(rows: Row[]): void {
  const baseline = rows.find((row) => row.key === 'baseline' && row.failures === 0);
  for (const row of rows) row.ratio = row.rate || !baseline || row.rps === undefined ? undefined : row.rps / baseline.rps!;
  console.table(
    rows.map((row) => ({
      scenario: LABELS[row.key] + (row.rate ? ` (${row.rate} rps asked)` : '') + (row.idleP99 !== undefined ? ` (idle p99 ${row.idleP99} ms)` : ''),
      rps: row.rps === undefined ? '-' : Math.round(row.rps),
      'p50 ms': row.p50,
      'p99 ms': row.p99,
      'x nginx': row.ratio === undefined ? '-' : row.ratio.toFixed(2),
      ...(row.failures ? { BROKEN: row.failures } : {}),
    })),
  );
}

/** Whether the system a scenario belongs to was asked for (BENCH_ONLY). */
function systemRan(key: ScenarioKey): boolean {
  if (key === 'baseline') return runs('nginx');
  if (TIME_BOUNDS.includes(key)) return runs('bounds');
  if (key.startsWith('compare')) return false;
  if (key.startsWith('split')) return runs('split');
  return runs('all-in-one');
}

/** What a target's verdict was taken from, after its text: a ratio (0.97x) or a time (812 ms). */
function targetFigure(target: Target | undefined, summary: Summary): string {
  if (!target?.needs || target.needs === 'ratio' || summary[target.needs] === undefined) return '';
  return target.needs === 'max' ? ` (${Math.round(summary.max!)} ms)` : ` (${summary[target.needs]!.toFixed(2)}x)`;
}

const defined = (values: (number | undefined)[]) => values.filter((value): value is number => value !== undefined);

/** The median of each scenario's rounds and its target's verdict. */
export function report(rounds: Row[][]): void {
  const extras: ScenarioKey[] = ['splitList', 'splitCreate', 'splitUncached', 'splitListUncached'];
  const keys = (Object.keys(LABELS) as ScenarioKey[]).filter((key) => !extras.includes(key) || EXTRA);
  console.log(`\nmedian of ${rounds.length} round(s); ratios are to the same round's nginx baseline, then their median`);
  // Scenarios of a system BENCH_ONLY left out were not run: no row, not a broken one.
  const table = keys.filter(systemRan).map((key) => {
    const counted = rounds.flatMap((rows) => rows.filter((row) => row.key === key && row.failures === 0));
    const summary: Summary = {
      rps: median(defined(counted.map((r) => r.rps))),
      max: median(defined(counted.map((r) => r.max))),
      p50: median(defined(counted.map((r) => r.p50))),
      p99: median(defined(counted.map((r) => r.p99))),
      ratio: median(defined(counted.map((r) => r.ratio))),
      idleP99: median(counted.map((r) => r.idleP99 ?? 0)),
      ofSplit: median(defined(counted.map((r) => r.ofSplit))),
      withFeature: median(defined(counted.map((r) => r.withFeature))),
      readOver: median(defined(counted.map((r) => r.readOver))),
    };
    const target = TARGETS[key];
    let verdict = '';
    if (target) {
      const measurable = counted.length > 0 && (target.needs === undefined || summary[target.needs] !== undefined);
      verdict = measurable ? (target.pass(summary) ? 'PASS' : 'FAIL') : 'BROKEN';
    }
    return {
      scenario: LABELS[key],
      rps: summary.rps === undefined ? '-' : Math.round(summary.rps),
      'p50 ms': summary.p50 ?? '-',
      'p99 ms': summary.p99 ?? '-',
      'x nginx': summary.ratio === undefined ? '-' : summary.ratio.toFixed(2),
      target: (target?.text ?? '') + targetFigure(target, summary),
      verdict,
      rounds: `${counted.length}/${rounds.length}`,
    };
  });
  console.table(table);
}
