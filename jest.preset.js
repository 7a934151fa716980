// Shared jest settings for every workspace: native ESM (run node with
// --experimental-vm-modules), TypeScript transpiled by swc (type checking is `npm run
// typecheck`'s job), and workspace packages resolved to their sources through the
// "source" export condition, so tests never need a build first.
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('.', import.meta.url));

/**
 * The suites `npm test` leaves to `npm run test:all` (which CI runs), and why: each starts
 * whole platforms as real processes, faults their dependencies, drives a browser or fuzzes,
 * and together they took most of the run. Paths from the repository root; a folder holds
 * every suite under it. A later slow suite goes here too.
 */
export const SLOW_SUITES = {
  'test/scale/': 'replicas of every service as real processes, on the real servers',
  'test/fuzz/': 'fuzzes every route of both deployments',
  'test/e2e/faults.test.ts': 'faults Postgres, Redis and NATS under whole platforms',
  'libs/platform/test/faults.test.ts': 'faults the real servers under the ports',
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
