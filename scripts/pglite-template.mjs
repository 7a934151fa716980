// Makes the embedded database's template at `npm ci` (postinstall): one pristine PGlite
// cluster per PGlite version in node_modules/.cache/pglite/<version>. openPGlite
// (libs/platform/src/db/pglite.ts, pgliteTemplateDir) copies it into an empty data directory,
// so even the first `npm start` skips initdb's ~8 s; it makes the template itself when this
// did not run (`npm ci --ignore-scripts`). Same folder, same atomic rename as there.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const entry = createRequire(join(new URL('..', import.meta.url).pathname, 'libs/platform/package.json')).resolve('@electric-sql/pglite');
let dir = dirname(entry);
while (!(existsSync(join(dir, 'package.json')) && JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name === '@electric-sql/pglite')) {
  if (dirname(dir) === dir) process.exit(0); // not installed: nothing to prepare
  dir = dirname(dir);
}
const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const template = join(dir, '..', '..', '.cache', 'pglite', version);
if (existsSync(join(template, 'PG_VERSION'))) process.exit(0);

const scratch = `${template}.${process.pid}-${Date.now()}`;
mkdirSync(dirname(template), { recursive: true });
try {
  const script = `require(${JSON.stringify(entry)}).PGlite.create({ dataDir: ${JSON.stringify(scratch)} }).then((db) => db.close())`;
  execFileSync(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 120_000 });
  try {
    renameSync(scratch, template);
  } catch (error) {
    if (!existsSync(join(template, 'PG_VERSION'))) throw error;
  }
  console.log(`pglite: template ${version} ready`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
