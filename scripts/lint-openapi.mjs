// `npm run lint:openapi`: lints the platform's OpenAPI document with Redocly's recommended
// rules (redocly.yaml). The document is the one the all-in-one serves at /docs/json, built in
// this process on an in-memory embedded database (no port, no .data/), written to a temporary
// file, and handed to `redocly lint`. Its exit code is the script's. Split mode's gateway
// serves the same document (test/e2e/openapi.test.ts holds them equal).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transpileWorkspaces } from './transpile.mjs';

const root = new URL('..', import.meta.url).pathname;
await transpileWorkspaces();
const { buildPlatform, PLATFORM_CONFIG } = await import(join(root, 'apps/all-in-one/dist/index.js'));
const { createSsoService } = await import(join(root, 'services/sso/dist/index.js'));
const { createLocalBus, createLogger, createMemoryCache, loadConfig, openPGlite } = await import(join(root, 'libs/platform/dist/index.js'));

const config = { ...loadConfig({ LOG_LEVEL: 'silent', NODE_ENV: 'test' }, PLATFORM_CONFIG), ALL_IN_ONE: true };
const logger = createLogger(config);
const deps = { config, logger, database: await openPGlite({ dataDir: 'memory://', logger }), cache: createMemoryCache({ maxEntries: 100 }), bus: createLocalBus({ logger }) };
// The development admin's generated password is nobody's business here.
const app = await buildPlatform(config, deps, { sso: createSsoService({ announce: () => undefined }) });
const response = await app.inject({ method: 'GET', url: '/docs/json' });
await app.close();
await Promise.all([deps.bus.close(), deps.cache.close()]);
await deps.database.close();
if (response.statusCode !== 200) {
  process.stderr.write(`GET /docs/json answered ${response.statusCode}\n${response.body}\n`);
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
const file = join(dir, 'openapi.json');
// Indented, so a finding's location reads as a line of the document.
writeFileSync(file, JSON.stringify(JSON.parse(response.body), null, 2));
const lint = spawnSync(join(root, 'node_modules/.bin/redocly'), ['lint', '--config', join(root, 'redocly.yaml'), ...process.argv.slice(2), file], {
  stdio: 'inherit',
});
rmSync(dir, { recursive: true, force: true });
process.exit(lint.status ?? 1);
