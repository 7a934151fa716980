export * from './jwt.js';
export * from './services.js';
