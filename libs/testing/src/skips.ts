// Where a suite or a test cannot run on this machine, it skips and says why, in one way: the
// skipped block's title carries the reason, and the reporter (libs/testing/reporter.js) lists
// every skipped suite with its reason at the end of the run. A skip is never silent.
import type { describe as Describe, it as It } from '@jest/globals';

export const NEEDS_REAL_SERVERS = 'needs the real servers: set DATABASE_URL, REDIS_URL and NATS_URL';
export const NEEDS_REAL_POSTGRES = 'needs a real Postgres: set DATABASE_URL';
export const NEEDS_REAL_REDIS = 'needs a real Redis: set REDIS_URL';
export const NEEDS_REAL_NATS = 'needs a real NATS: set NATS_URL';
/** For the embedded variant of a test that sets up a race PGlite, one transaction at a time, cannot have. */
export const ON_REAL_POSTGRES_ONLY = 'a race on row locks: runs on the real Postgres only';

/** A block named `name`, marked with why it is skipped, as the reporter reads it. */
export const skippedTitle = (name: string, reason: string) => `${name} [skipped: ${reason}]`;

// jest's own describe and it, as it injects them into every test file's global scope; read
// there, not imported from @jest/globals, which throws outside a test run, so `@app/testing`
// stays importable by a script (the bench) that never skips anything.
const jestGlobals = () => globalThis as unknown as { describe: typeof Describe; it: typeof It };

/**
 * `describe` where `condition` holds; elsewhere the block is skipped, its title saying `reason`.
 * This is the one place a suite skips: the reporter lists each skip under its reason.
 */
export function describeIf(condition: unknown, reason: string): (name: string, suite: () => void) => void {
  // The skip is the point: this machine lacks what the block needs, and the title says what (`reason`).
  return (name, suite) => (condition ? jestGlobals().describe(name, suite) : jestGlobals().describe.skip(skippedTitle(name, reason), suite));
}

/** `it` where `condition` holds; elsewhere the test is skipped, its title saying `reason`. */
export function itIf(condition: unknown, reason: string): (name: string, test: () => Promise<unknown> | void, timeout?: number) => void {
  // As describeIf: skipped only where `condition` fails, with `reason` in the title the reporter lists.
  return (name, test, timeout) => (condition ? jestGlobals().it(name, test, timeout) : jestGlobals().it.skip(skippedTitle(name, reason), test));
}
