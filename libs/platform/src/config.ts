// Configuration: the building blocks of a schema, the shared schema every process parses, and
// the loader that parses it with the schemas of the services a process runs.
export * from './config/building-blocks.js';
export * from './config/shared.js';
export * from './config/load.js';
