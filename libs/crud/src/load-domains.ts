import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isDomain, type Domain } from './define-domain.js';

/** A domain's module: its TypeScript source (tests run it) or its JavaScript; never a declaration file, a map, a test or an index. */
const DOMAIN_MODULE = /^(?!index\.)[a-z0-9-]+\.(ts|js)$/;

/**
 * The domains declared in a folder, one module each exporting what `defineDomain` returned, in
 * file-name order: adding a domain is adding its file, and no list names them again.
 */
export async function loadDomains(directory: string): Promise<Domain[]> {
  const files = (await readdir(directory)).filter((file) => DOMAIN_MODULE.test(file)).sort();
  const domains: Domain[] = [];
  for (const file of files) {
    const path = join(directory, file);
    const exported = Object.values((await import(pathToFileURL(path).href)) as Record<string, unknown>).filter(isDomain);
    if (exported.length !== 1) throw new Error(`${path} must export exactly one domain (what defineDomain returns), and exports ${exported.length}`);
    domains.push(exported[0]!);
  }
  for (const key of ['name', 'prefix'] as const) {
    const taken = domains.map((domain) => domain[key]).find((value, i, all) => all.indexOf(value) !== i);
    if (taken !== undefined) throw new Error(`two domains in ${directory} have the ${key} "${taken}"`);
  }
  return domains;
}
