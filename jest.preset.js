// Shared jest settings for every workspace: native ESM (run node with
// --experimental-vm-modules), TypeScript transpiled by swc (type checking is `npm run
// typecheck`'s job), and workspace packages resolved to their sources through the
// "source" export condition, so tests never need a build first.
import { fileURLToPath } from 'node:url';

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
  // Every test's and hook's default budget (START_BUDGET_MS): jest takes testTimeout only from
  // the root config in projects mode, so the setup file sets it in each test file instead.
  setupFilesAfterEnv: [fileURLToPath(new URL('./libs/testing/src/jest-setup.ts', import.meta.url))],
};
