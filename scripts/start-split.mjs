// `npm run start:split -- --replicas N`: split mode on this machine (apps/split), every
// service as its own process, N replicas each, the gateway on PORT. Transpiled first, like
// `npm start`, so a fresh clone needs no build step.
import { join } from 'node:path';
import { transpileWorkspaces } from './transpile.mjs';

await transpileWorkspaces();
await import(join(new URL('..', import.meta.url).pathname, 'apps/split/dist/main.js'));
