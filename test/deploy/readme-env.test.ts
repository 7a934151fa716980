// The README's environment table against the config schemas (the shared one in libs/platform,
// each service's own: the all-in-one's PLATFORM_CONFIG): the same variables, and each default
// the table states is the one the code applies.
import { describe, expect, it } from '@jest/globals';
import { PLATFORM_CONFIG } from '@app/all-in-one';
import { configKeysOf, declaredDefaults } from '@app/platform';
import { read } from './artifacts.js';

const CONFIG_KEYS = configKeysOf(PLATFORM_CONFIG);

interface Row {
  names: string[];
  /** The default cell as written. */
  text: string;
}

/** The rows of the table under "## Environment": each names one or more `VARIABLES`. */
function environmentTable(readme: string): Row[] {
  const start = readme.indexOf('\n## Environment\n');
  if (start < 0) throw new Error('README.md has no "## Environment" section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return section
    .split('\n')
    .filter((line) => /^\| `[A-Z]/.test(line))
    .map((line) => {
      const [, variables = '', text = ''] = line.split('|').map((cell) => cell.trim());
      return { names: [...variables.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1]!), text };
    });
}

/**
 * What a default cell claims, per variable: `unset` (no default, or an empty one), literal
 * values in backticks (one for all, or one each), or a description (`per service`, `sso's
 * /api/v1/sso/jwks`) that states no value and is not compared.
 */
function claimedDefaults(row: Row): Record<string, { unset: true } | { literal: string } | undefined> {
  if (/^unset\b/.test(row.text)) return Object.fromEntries(row.names.map((name) => [name, { unset: true as const }]));
  if (!row.text.startsWith('`')) return Object.fromEntries(row.names.map((name) => [name, undefined]));
  const literals = [...row.text.matchAll(/`([^`]*)`/g)].map((match) => match[1]!);
  if (literals.length !== 1 && literals.length !== row.names.length) throw new Error(`${row.names.join(', ')}: ${literals.length} defaults for ${row.names.length} variables`);
  return Object.fromEntries(row.names.map((name, index) => [name, { literal: literals.length === 1 ? literals[0]! : literals[index]! }]));
}

/** Whether a literal of the table matches a value; `<port>` in it stands for any number. */
const matchesLiteral = (literal: string, value: unknown) =>
  new RegExp(`^${literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/<[a-z]+>/g, '\\d+')}$`).test(String(value));

const rows = environmentTable(read('README.md'));
const documented = rows.flatMap((row) => row.names);
const defaults = declaredDefaults(PLATFORM_CONFIG);

describe('the README\'s environment table', () => {
  it('names every variable of the config schemas, once, and none they do not know', () => {
    expect(documented.filter((name) => !CONFIG_KEYS.includes(name))).toEqual([]);
    expect(CONFIG_KEYS.filter((key) => !documented.includes(key))).toEqual([]);
    expect(documented.filter((name, index) => documented.indexOf(name) !== index)).toEqual([]);
  });

  it.each(rows.flatMap((row) => Object.entries(claimedDefaults(row)).filter(([, claim]) => claim !== undefined)))('states the default of %s the code applies', (name, claim) => {
    const declared = defaults[name as keyof typeof defaults];
    if (claim && 'unset' in claim) expect([name, declared ?? '']).toEqual([name, '']);
    else expect([name, String(declared), matchesLiteral(claim!.literal, declared)]).toEqual([name, String(declared), true]);
  });

  it('catches a stated default the code does not apply (the check can fail)', () => {
    const [row] = environmentTable('\n## Environment\n| `TRUST_PROXY` | `loopback,linklocal,uniquelocal` | x |\n');
    const claim = claimedDefaults(row!).TRUST_PROXY;
    expect(claim && 'literal' in claim && matchesLiteral(claim.literal, defaults.TRUST_PROXY)).toBe(false);
  });
});
