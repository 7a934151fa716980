/* eslint-disable @typescript-eslint/no-require-imports, no-undef -- a CommonJS file by necessity */
// @fastify/static (behind the gateway's /docs UI) require()s content-disposition, which
// ships only as ESM. Node >= 20.19 loads that natively, but jest's module registry cannot,
// so tests get the package through Node's own require instead.
const { createRequire } = require('node:module');

module.exports = createRequire(__filename)('content-disposition');
