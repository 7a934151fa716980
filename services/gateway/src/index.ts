export { buildGateway, GATEWAY_CONFIG, type GatewayOptions } from './gateway.js';
export { mergeDocuments, registerDocs, PLATFORM_DESCRIPTION, PLATFORM_TITLE } from './docs.js';
export { routingTable, type Route } from './routing.js';
