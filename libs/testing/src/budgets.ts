/**
 * How long a test or a hook may take before jest calls it hung: the default of every one
 * (set by the jest preset through `jest-setup.ts`), sized for the slowest thing a hook does,
 * starting a platform with its embedded database (PGlite) on a 2-core machine that other work
 * keeps busy. A suite that needs longer asks for it; none asks for less, since what a test
 * asserts is behaviour and never how fast it came, so a budget only guards against a hang.
 */
export const START_BUDGET_MS = 300_000;

/**
 * The longest a test waits for something that will happen (a revocation applied everywhere,
 * an event delivered) before it gives up: a hang guard, well inside the test's own budget.
 */
export const SETTLE_BUDGET_MS = 60_000;
