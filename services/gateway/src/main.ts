import { closeOnSignals, createLogger, DEFAULT_PORTS, listenApp, loadConfigOrExit } from '@app/platform';
import { buildApp } from './app.js';
import { routingTable } from './routing.js';

const config = loadConfigOrExit();
const logger = createLogger(config);
const app = await buildApp({ config, logger }, { routes: routingTable(config) });
const gateway = await listenApp('gateway', app, { host: config.HOST, port: config.PORT ?? DEFAULT_PORTS.gateway });
closeOnSignals(() => gateway.close(), logger, config.SHUTDOWN_TIMEOUT_MS);
