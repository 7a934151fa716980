import { closeOnSignals, createLogger, loadConfigOrExit, prioritizeEventLoop } from '@app/platform';
import { startPlatform } from './platform.js';

const config = loadConfigOrExit();
const logger = createLogger(config);
const started = Date.now();
try {
  await prioritizeEventLoop(config, logger);
  const platform = await startPlatform(config, logger);
  logger.info({ url: platform.url, docs: `${platform.url}/docs`, startupMs: Date.now() - started }, `platform ready on ${platform.url} (docs at ${platform.url}/docs)`);
  closeOnSignals(platform.close, logger, config.SHUTDOWN_TIMEOUT_MS);
} catch (error) {
  logger.fatal({ err: error }, 'the platform failed to start');
  process.exit(1);
}
