// Every time budget of the suites, in one place. A budget only guards against a hang: what a test
// asserts is behaviour, never how fast it came, so each is sized for a 2-core machine that other
// work keeps busy (`npm test` beside `stress-ng --cpu 2` must pass). A suite imports these
// rather than writing a number; a figure a test asserts (an answer within N ms) is its own.

/**
 * How long a test or a hook may take before jest calls it hung: the default of every one
 * (set by the jest preset through `jest-setup.ts`), sized for the slowest thing a hook does,
 * starting a platform with its embedded database (PGlite). A suite that needs longer asks for
 * a multiple of it; none asks for less.
 */
export const START_BUDGET_MS = 300_000;

/**
 * How long a test waits for one platform process it started (or restarted) to answer ready,
 * or to log that it did: well inside the test's own budget, which has more to do after.
 */
export const READY_BUDGET_MS = 120_000;

/**
 * The longest a test waits for something that will happen (a revocation applied everywhere,
 * an event delivered, a child process exiting on a bad setting) before it gives up: a hang
 * guard, well inside the test's own budget.
 */
export const SETTLE_BUDGET_MS = 60_000;
