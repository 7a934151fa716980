// `npm test` runs every workspace's suites in one jest run, so one summary covers all, but
// leaves the slow ones (the preset's SLOW_SUITES) to `npm run test:all`, which CI runs.
// Suites that need real servers run only when DATABASE_URL / REDIS_URL / NATS_URL are set.
import { availableParallelism } from 'node:os';
import { LEFT_OUT } from './jest.preset.js';

export default {
  projects: ['<rootDir>/libs/*', '<rootDir>/services/*', '<rootDir>/apps/*', '<rootDir>/test'],
  // Half the cores, but at least two: on a 2-core machine half was one worker and the other
  // core sat idle. CI runs two, as before.
  maxWorkers: process.env.CI ? 2 : Math.max(2, Math.floor(availableParallelism() / 2)),
  // At the end of the run, just above jest's counts: what did not run, and why.
  reporters: ['default', ['<rootDir>/libs/testing/reporter.js', { slow: LEFT_OUT }]],
  // A start-up hook that timed out on a loaded machine leaves its platform starting in the
  // background, open after the suite's afterAll: jest printed its summary, then never exited.
  // The summary is the run's result; exit once it is printed.
  forceExit: true,
};
