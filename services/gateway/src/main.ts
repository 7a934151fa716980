import { createLogger, createLocalBus, createNatsBus, DEFAULT_PORTS, loadConfigOrExit, serve } from '@app/platform';
import { gatewayConfig } from './config.js';
import { buildGateway } from './gateway.js';

const config = loadConfigOrExit([gatewayConfig]);
const logger = createLogger(config);
// The edge keeps no state, but it must know of revocations: it asks sso for them and hears sso's broadcast, on NATS.
const bus = config.NATS_URL ? await createNatsBus({ servers: config.NATS_URL, logger, name: 'gateway', stream: config.NATS_STREAM }) : createLocalBus({ logger });
await serve('gateway', config, logger, () => buildGateway(config, logger, { revocationBus: bus }), {
  defaultPort: DEFAULT_PORTS.gateway,
  onClosed: (step) => step('bus', () => bus.close()),
});
