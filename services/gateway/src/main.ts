import { createLogger, DEFAULT_PORTS, loadConfigOrExit, serve } from '@app/platform';
import { buildGateway, GATEWAY_CONFIG } from './gateway.js';

const config = loadConfigOrExit(GATEWAY_CONFIG);
const logger = createLogger(config);
await serve('gateway', config, logger, () => buildGateway(config, logger), { defaultPort: DEFAULT_PORTS.gateway });
