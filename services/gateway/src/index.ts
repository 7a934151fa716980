export { buildApp, type GatewayDependencies, type GatewayOptions } from './app.js';
export { mergeDocuments } from './docs.js';
export { routingTable, SERVICE_PREFIXES, type Route } from './routing.js';
export { edgeVerifier, isPublic, PUBLIC_ROUTES } from './edge-auth.js';
