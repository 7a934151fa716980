import { describe, expect, it, jest } from '@jest/globals';
// @ts-expect-error -- plain JavaScript, loaded by jest as it is (no declarations)
import SkipReporter from '../reporter.js';

type Result = { status: string; title: string; ancestorTitles: string[] };

/** What the reporter writes at the end of a run over one suite with these results. */
function report(tests: Result[], globalConfig: { testNamePattern?: string } = {}): string {
  const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const reporter = new SkipReporter({ rootDir: '/repo', ...globalConfig }, {});
    reporter.onRunComplete(undefined, { testResults: [{ testFilePath: '/repo/test/a.test.ts', testResults: tests }] });
    return write.mock.calls.map(([text]) => String(text)).join('');
  } finally {
    write.mockRestore();
  }
}

describe('the skip reporter', () => {
  it("names a skipped test's reason from its title, and one skipped without a reason as such", () => {
    const text = report([
      { status: 'pending', title: 'sends mail [skipped: no SMTP server here]', ancestorTitles: [] },
      { status: 'pending', title: 'hangs', ancestorTitles: ['a suite'] },
    ]);
    expect(text).toContain('Skipped, no SMTP server here:\n  test/a.test.ts  (1 test)');
    expect(text).toContain('Skipped, skipped without a reason');
  });

  it('counts the tests -t filtered out apart, not as skipped without a reason', () => {
    const text = report(
      [
        { status: 'passed', title: 'answers 200', ancestorTitles: ['routes'] },
        { status: 'pending', title: 'answers 404', ancestorTitles: ['routes'] },
      ],
      { testNamePattern: 'answers 200' },
    );
    expect(text).toContain('Not run, not matching -t: 1 test.');
    expect(text).not.toContain('without a reason');
  });
});
