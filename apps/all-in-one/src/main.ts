import { setTimeout as sleep } from 'node:timers/promises';
import { closeOnSignals, createLogger, loadConfigOrExit, prioritizeEventLoop } from '@app/platform';
import { PLATFORM_CONFIG, startPlatform } from './platform.js';

/** How often the start-up asks its own readiness probe before it says the platform is ready. */
const READY_POLL_MS = 50;

const config = loadConfigOrExit(PLATFORM_CONFIG);
const logger = createLogger(config);
const started = Date.now();
try {
  await prioritizeEventLoop(config, logger);
  const platform = await startPlatform(config, logger);
  closeOnSignals(platform.close, logger, config.SHUTDOWN_TIMEOUT_MS);
  // "Ready" when its probe says so (signing key, bootstrap admin), not merely when it listens.
  while ((await platform.app.inject({ method: 'GET', url: '/health/readiness' })).statusCode !== 200) await sleep(READY_POLL_MS);
  logger.info({ url: platform.url, docs: `${platform.url}/docs`, startupMs: Date.now() - started }, `platform ready on ${platform.url} (docs at ${platform.url}/docs)`);
} catch (error) {
  logger.fatal({ err: error }, 'the platform failed to start');
  process.exit(1);
}
