// `npm test` runs every workspace's suites in one jest run, so one summary covers all, but
// leaves the slow ones (the preset's SLOW_SUITES) to `npm run test:all`, which CI runs.
// Suites that need real servers run only when DATABASE_URL / REDIS_URL / NATS_URL are set.
import { LEFT_OUT } from './jest.preset.js';

export default {
  projects: ['<rootDir>/libs/*', '<rootDir>/services/*', '<rootDir>/apps/*', '<rootDir>/test'],
  maxWorkers: process.env.CI ? 2 : '50%',
  // After jest's summary: what did not run, and why.
  reporters: ['default', ['<rootDir>/libs/testing/reporter.js', { slow: LEFT_OUT }]],
  // A start-up hook that timed out on a loaded machine leaves its platform starting in the
  // background, open after the suite's afterAll: jest printed its summary, then never exited.
  // The summary is the run's result; exit once it is printed.
  forceExit: true,
};
