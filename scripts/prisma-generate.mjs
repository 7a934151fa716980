// Generates each service's Prisma client (`services/<name>/prisma/schema.prisma`), after
// `npm ci` and before builds and tests. Prisma's CLI wants its native schema engine even
// for `generate`, which does not use it; where the engine cannot be downloaded, pointing
// PRISMA_SCHEMA_ENGINE_BINARY at any existing file lets `generate` run.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const schemas = readdirSync(join(root, 'services'))
  .map((name) => join(root, 'services', name, 'prisma', 'schema.prisma'))
  .filter((path) => existsSync(path));
if (schemas.length === 0) process.exit(0);

const prismaCli = createRequire(import.meta.url).resolve('prisma/build/index.js');
const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' };
env.PRISMA_SCHEMA_ENGINE_BINARY ??= process.execPath;
for (const schema of schemas) {
  execFileSync(process.execPath, [prismaCli, 'generate', '--schema', schema], { env, stdio: ['ignore', 'ignore', 'inherit'] });
}
console.log(`prisma: generated ${schemas.length} client(s)`);
