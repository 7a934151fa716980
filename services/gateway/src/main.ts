import { createLogger, createMemoryCache, createLocalBus, createNatsBus, createRedisCache, DEFAULT_PORTS, loadConfigOrExit, serve } from '@app/platform';
import { buildGateway, GATEWAY_CONFIG } from './gateway.js';

const config = loadConfigOrExit(GATEWAY_CONFIG);
const logger = createLogger(config);
// The edge keeps no state, but it must hear of revocations: sso records them in Redis and broadcasts them on NATS.
const cache = config.REDIS_URL
  ? await createRedisCache({ url: config.REDIS_URL, logger, keyPrefix: config.CACHE_KEY_PREFIX || undefined })
  : createMemoryCache({ maxEntries: config.CACHE_MAX_ENTRIES });
const bus = config.NATS_URL ? await createNatsBus({ servers: config.NATS_URL, logger, name: 'gateway', stream: config.NATS_STREAM }) : createLocalBus({ logger });
await serve('gateway', config, logger, () => buildGateway(config, logger, { revocationSources: { cache, bus } }), {
  defaultPort: DEFAULT_PORTS.gateway,
  onClosed: async () => {
    await Promise.allSettled([bus.close(), cache.close()]);
  },
});
