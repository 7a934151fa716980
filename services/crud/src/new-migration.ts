import { mkdir, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { domainTableSql } from '@app/crud';
import { CRUD_SCHEMA } from './repository.js';
import { crudService, DOMAINS } from './service.js';

/*
 * Writes the migration that creates a declared domain's table, from its declaration:
 * `npm run new-migration --workspace @app/crud-service -- <domain>`. Review it, then commit it
 * beside the definition; the migrator applies it and checks it against the declaration.
 */
const name = process.argv[2];
const domain = DOMAINS.find((candidate) => candidate.name === name);
if (!domain) {
  process.stderr.write(`usage: new-migration <domain>, one of the files in src/domains: ${DOMAINS.map((d) => d.name).join(', ')}\n`);
  process.exit(64); // EX_USAGE
}
// Prisma Migrate's folder name: a UTC timestamp to the second, then the migration's name.
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const folder = join(crudService.migrations!, `${stamp}_${domain.name}`);
await mkdir(folder);
await writeFile(
  join(folder, 'migration.sql'),
  `-- The table of the ${domain.name} domain (src/domains/${domain.name}.ts), as its declaration needs it.\n${domainTableSql(domain, CRUD_SCHEMA)}\n`,
);
process.stdout.write(`wrote ${relative(process.cwd(), join(folder, 'migration.sql'))}\n`);
