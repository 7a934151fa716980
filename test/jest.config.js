import preset from '../jest.preset.js';

// Cross-service suites: end-to-end through the gateway, reliability and security.
export default { ...preset, displayName: 'e2e', testMatch: ['<rootDir>/**/*.test.ts'] };
