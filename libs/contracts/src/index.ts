export * from './clients.js';
export * from './events.js';
export * from './internal.js';
export * from './jwt.js';
export * from './registry.js';
export * from './services.js';
export * from './oauth.js';
