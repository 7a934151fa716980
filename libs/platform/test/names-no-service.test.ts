// The kit knows none of its tenants (STYLE.md 14): it takes what a service declares and reads
// the registry of `@app/contracts`, but never spells a service's name, URL variable or routes.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { SERVICE_NAMES, SERVICES } from '@app/contracts';

const SOURCE = fileURLToPath(new URL('../src', import.meta.url));

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/**
 * What naming a service looks like: its name as a string (`'sso'`), its URL variable
 * (`SSO_URL`), a path under its public prefix, or the two names that mean nothing but a
 * service (`sso`, `gateway`, lower case), but in the translated HTTP status texts ("504
 * Tempo de gateway esgotado").
 */
const NAMING = [
  ...SERVICE_NAMES.map((name) => new RegExp(`['"\`]${name}['"\`]`)),
  ...SERVICE_NAMES.map((name) => new RegExp(`\\b${SERVICES[name].urlVariable}\\b`)),
  ...SERVICE_NAMES.flatMap((name) => SERVICES[name].prefixes.filter((prefix) => prefix !== '/api/v1').map((prefix) => new RegExp(`${prefix}\\b`))),
  /\bsso\b/,
  /\bgateway\b/,
];

const STATUS_TEXT = /^\s*'status\.\d{3}': '[^']*',$/;

describe('libs/platform', () => {
  it('names no service: not its name, URL variable or routes, in code or comments', () => {
    const found = sourceFiles(SOURCE).flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, index) => (!STATUS_TEXT.test(line) && NAMING.some((pattern) => pattern.test(line)) ? [`${relative(SOURCE, file)}:${index + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });

  it('finds a name where one is spelled (the check can fail)', () => {
    const spelled = ["const peer = 'credentials';", 'config.IDENTITY_URL', "fetch('/api/v1/sso/jwks')", '// ask sso'];
    for (const line of spelled) expect(NAMING.some((pattern) => pattern.test(line))).toBe(true);
  });
});
