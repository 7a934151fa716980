export { buildGateway, type GatewayOptions } from './gateway.js';
export { gatewayConfig, type GatewayConfig } from './config.js';
export { mergeDocuments, registerDocs, PLATFORM_DESCRIPTION, PLATFORM_TITLE } from './docs.js';
export { routingTable, type Route } from './routing.js';
