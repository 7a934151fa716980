// Nothing here loads the proxy (./proxy.js, and undici under it) at module load: the
// gateway's routes import it when they are built, so the all-in-one, which takes the docs and
// the config from here, never does.
export { buildGateway, type GatewayOptions } from './gateway.js';
export { gatewayConfig, type GatewayConfig } from './config.js';
export { mergeDocuments, registerDocs, PLATFORM_DESCRIPTION, PLATFORM_TITLE } from './docs.js';
export { routingTable, type Route } from './routing.js';
export { gatewayEdge } from './service.js';
