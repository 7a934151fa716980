// Shared jest settings for every workspace: native ESM (run node with
// --experimental-vm-modules), TypeScript transpiled by swc (type checking is `npm run
// typecheck`'s job), and workspace packages resolved to their sources through the
// "source" export condition, so tests never need a build first.
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('.', import.meta.url));

/**
 * The suites `npm test` leaves to `npm run test:all` (which CI runs), and why: each starts
 * whole platforms (several, or as real processes), faults their dependencies, drives a browser
 * or fuzzes, and together they took most of the run. What they check of one service alone is
 * checked beside it, through app.inject; `npm test` keeps test/'s journeys. Paths from the
 * repository root; a folder holds every suite under it. A later slow suite goes here too.
 */
export const SLOW_SUITES = {
  'test/scale/': 'replicas of every service as processes, on the real servers',
  'libs/platform/test/faults.test.ts': 'faults the real servers under the ports',
  'test/e2e/faults.test.ts': 'faults Postgres, Redis and NATS under whole platforms',
  'test/fuzz/': 'fuzzes every operation of both deployments',
  'test/e2e/docs-page.test.ts': 'drives the docs page in Chromium',
  'test/sso/browser-sign-in.test.ts': 'drives the sign-in pages in Chromium',
  'test/sso/federation-browser.test.ts': 'drives a Google sign-in in Chromium',
  'test/sso/login-page-browser.test.ts': 'drives the login page in Chromium',
  'test/e2e/platform.test.ts': 'starts the all-in-one as processes',
  'test/e2e/ready.test.ts': 'starts platforms until ready, split mode as processes',
  'test/e2e/hostile-input.test.ts': 'whole platforms, all-in-one and split',
  'test/e2e/openapi.test.ts': 'whole platforms, all-in-one and split',
  'test/e2e/observability.test.ts': 'whole platforms, all-in-one and split',
  'test/e2e/idempotency.test.ts': 'whole platforms, all-in-one and split',
  'test/sso/attacks.test.ts': 'sso through whole platforms, all-in-one and split',
  'test/sso/federation.test.ts': 'sso through whole platforms, all-in-one and split',
  'test/sso/grant-cache.test.ts': 'sso through whole platforms, all-in-one and split',
  'test/sso/grants.test.ts': 'sso through whole platforms, all-in-one and split',
  'test/sso/oauth.test.ts': 'sso through whole platforms, all-in-one and split',
  'test/sso/revocation.test.ts': 'sso through whole platforms, all-in-one and split',
  'test/sso/throttling.test.ts': 'sso through whole platforms, all-in-one and split',
  'test/identity/': 'identity and credentials through a whole platform',
};

/** What this run leaves out: nothing under TEST_ALL (`npm run test:all`). */
export const LEFT_OUT = process.env.TEST_ALL ? {} : SLOW_SUITES;

const escape = (path) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export default {
  testEnvironment: 'node',
  testEnvironmentOptions: { customExportConditions: ['source', 'node', 'node-addons'] },
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'es6' },
      },
    ],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/src/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...Object.keys(LEFT_OUT).map((path) => `^${escape(ROOT + path)}`)],
  // Every test's and hook's default budget (START_BUDGET_MS): jest takes testTimeout only from
  // the root config in projects mode, so the setup file sets it in each test file instead.
  setupFilesAfterEnv: [fileURLToPath(new URL('./libs/testing/src/jest-setup.ts', import.meta.url))],
};
