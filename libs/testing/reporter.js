// A jest reporter that ends the run by saying what did not run and why: the suites left to
// `npm run test:all` (the preset's SLOW_SUITES, passed in as `slow`), the suites and tests
// skipped where they cannot run here (their titles carry the reason: src/skips.ts), and, with
// no real servers named, that every suite ran on the embedded default only.
// Plain JavaScript: jest loads a reporter as it is, untransformed.
/* eslint-disable no-restricted-properties -- tests pick their mode from the environment */
import { relative } from 'node:path';

const SKIP_REASON = /\[skipped: ([^\]]+)\]/;
const NO_REASON = 'skipped without a reason (route it through describeIf/itIf of @app/testing)';

export default class SkipReporter {
  /** @param {{ rootDir: string, testNamePattern?: string }} globalConfig @param {{ slow?: Record<string, string> }} options */
  constructor(globalConfig, options = {}) {
    this.rootDir = globalConfig.rootDir;
    // With -t (--testNamePattern) jest reports the tests it filtered out as pending too: those were asked away, not skipped.
    this.filtered = globalConfig.testNamePattern ? new RegExp(globalConfig.testNamePattern, 'i') : undefined;
    this.slow = options.slow ?? {};
    // As testModes() of src/index.ts decides: the real mode needs all three.
    this.realServers = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL && process.env.NATS_URL);
  }

  /** @param {unknown} _contexts @param {{ testResults: { testFilePath: string, testResults: { status: string, title: string, ancestorTitles: string[] }[] }[] }} results */
  onRunComplete(_contexts, results) {
    /** @type {Map<string, Map<string, number>>} reason -> suite -> skipped tests */
    const skipped = new Map();
    let filteredOut = 0;
    for (const suite of results.testResults) {
      for (const test of suite.testResults) {
        if (test.status !== 'pending') continue;
        const titles = [...test.ancestorTitles, test.title];
        const given = titles.map((title) => SKIP_REASON.exec(title)?.[1]).find(Boolean);
        if (!given && this.filtered && !this.filtered.test(titles.join(' '))) {
          filteredOut += 1;
          continue;
        }
        const reason = given ?? NO_REASON;
        const suites = skipped.get(reason) ?? new Map();
        const file = relative(this.rootDir, suite.testFilePath);
        suites.set(file, (suites.get(file) ?? 0) + 1);
        skipped.set(reason, suites);
      }
    }
    const lines = [];
    const slow = Object.entries(this.slow);
    if (slow.length > 0) {
      lines.push(`Not run (slow; \`npm run test:all\` runs them, as CI does):`);
      const width = Math.max(...slow.map(([path]) => path.length));
      for (const [path, why] of slow) lines.push(`  ${path.padEnd(width)}  ${why}`);
    }
    for (const [reason, suites] of skipped) {
      lines.push(`Skipped, ${reason}:`);
      for (const [file, count] of suites) lines.push(`  ${file}  (${count} ${count === 1 ? 'test' : 'tests'})`);
    }
    if (filteredOut > 0) lines.push(`Not run, not matching -t: ${filteredOut} ${filteredOut === 1 ? 'test' : 'tests'}.`);
    if (!this.realServers) {
      lines.push('Every suite ran on the embedded default only: set DATABASE_URL, REDIS_URL and NATS_URL to run them on the real servers too.');
    }
    if (lines.length > 0) process.stderr.write(`\n${lines.join('\n')}\n\n`);
  }
}
