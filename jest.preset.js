// Shared jest settings for every workspace: native ESM (run node with
// --experimental-vm-modules), TypeScript transpiled by swc (type checking is `npm run
// typecheck`'s job), and workspace packages resolved to their sources through the
// "source" export condition, so tests never need a build first.
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
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // ESM-only packages that Fastify's CommonJS code requires (scripts/jest/esm-only says why).
    '^(content-disposition|cookie)$': `${new URL('./scripts/jest/esm-only/', import.meta.url).pathname}$1.cjs`,
  },
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/src/**/*.test.ts'],
  testTimeout: 30_000,
};
