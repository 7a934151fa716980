/* eslint-disable @typescript-eslint/no-require-imports, no-undef -- a CommonJS file by necessity */
// Fastify's own CommonJS dependencies require() packages that ship only as ESM
// (@fastify/static -> content-disposition, light-my-request -> cookie). Node >= 20.19 loads
// those natively, but jest's module registry cannot, so tests get them through Node's own
// require instead (jest.preset.js maps each name to its file here).
const { createRequire } = require('node:module');

module.exports = createRequire(__filename)('cookie');
