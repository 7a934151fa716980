// `npm test` runs every workspace's suites in one jest run, so one summary covers all.
// Suites that need real servers run only when DATABASE_URL / REDIS_URL / NATS_URL are set.
export default {
  projects: ['<rootDir>/libs/*', '<rootDir>/services/*', '<rootDir>/apps/*', '<rootDir>/test'],
  maxWorkers: process.env.CI ? 2 : '50%',
};
