/* eslint-disable no-restricted-properties -- the one module that reads process.env */
import type { z } from 'zod';
import { isSecret } from './building-blocks.js';
import { sharedConfig, type SharedConfig } from './shared.js';

/**
 * A schema of variables (a zod object, with rules across its variables in `.superRefine` if
 * it has any): the shared one, or a service's own, which the kit parses beside the shared one.
 */
export type ConfigSchema<Output extends object = object> = z.ZodType<Output> & { shape: Record<string, z.ZodType> };

type Intersection<Union> = (Union extends unknown ? (value: Union) => void : never) extends (value: infer Both) => void ? Both : never;

/** What the shared schema and `schemas` parse to, together. */
export type ConfigOf<Schemas extends readonly ConfigSchema[]> = SharedConfig & Intersection<z.output<Schemas[number]>>;

export type Env = Record<string, string | undefined>;

/** Thrown when the environment does not describe a runnable configuration. */
export class ConfigError extends Error {
  constructor(readonly problems: { variable: string; expected: string }[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.expected}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** The shared schema, then `schemas`; a variable two of them declare is a mistake of the code, not of the environment. */
function withShared(schemas: readonly ConfigSchema[]): ConfigSchema[] {
  const all = [sharedConfig, ...schemas.filter((schema) => schema !== sharedConfig)];
  const seen = new Set<string>();
  for (const name of all.flatMap((schema) => Object.keys(schema.shape))) {
    if (seen.has(name)) throw new Error(`${name} is declared by two config schemas; one variable has one owner (the shared schema, or one service)`);
    seen.add(name);
  }
  return all;
}

/** Every variable of the shared schema and `schemas`, in their order. */
export function configKeysOf(schemas: readonly ConfigSchema[] = []): string[] {
  return withShared(schemas).flatMap((schema) => Object.keys(schema.shape));
}

/** The variables of the shared schema and `schemas` whose values are secrets (`secret(...)`). */
export function secretVariablesOf(schemas: readonly ConfigSchema[] = []): Set<string> {
  return new Set(withShared(schemas).flatMap((schema) => Object.entries(schema.shape).filter(([, field]) => isSecret(field)).map(([name]) => name)));
}

/**
 * Each variable's default as its schema declares it, before any transform (`100/600`, not
 * what it parses to); undefined for a variable without one. What the README's table documents.
 */
export function declaredDefaults(schemas: readonly ConfigSchema[] = []): Record<string, unknown> {
  const defaultOf = (schema: z.core.$ZodType): unknown => {
    const def = schema._zod.def as { type: string; defaultValue?: unknown; innerType?: z.core.$ZodType; in?: z.core.$ZodType };
    if (def.type === 'default') return def.defaultValue;
    const inner = def.innerType ?? def.in;
    return def.type === 'optional' || !inner ? undefined : defaultOf(inner);
  };
  return Object.fromEntries(withShared(schemas).flatMap((schema) => Object.entries(schema.shape).map(([name, field]) => [name, defaultOf(field)])));
}

/**
 * Parses the environment once, at start-up: the shared schema and `schemas` (a service's own
 * when it runs alone; every service's in the all-in-one and the split launcher), each with
 * its rules, every problem of every schema reported at once. Empty values count as unset, so
 * `FOO=` in an env file falls back to the default instead of failing on an empty string.
 */
export function loadConfig<const Schemas extends readonly ConfigSchema[] = []>(env: Env = process.env, schemas?: Schemas): ConfigOf<Schemas> {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = withShared(schemas ?? []).map((schema) => ({ schema, result: schema.safeParse(present) }));
  const problems = parsed.flatMap(({ schema, result }) =>
    result.success
      ? []
      : result.error.issues.map((issue) => {
          const variable = String(issue.path[0] ?? '(environment)');
          const received = present[variable];
          const expected =
            issue.code === 'invalid_value' ? `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}` : issue.message;
          const field = schema.shape[variable];
          const echoed = received === undefined || (field && isSecret(field)) ? expected : `${expected}, got ${JSON.stringify(received)}`;
          return { variable, expected: echoed };
        }),
  );
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.assign({}, ...parsed.map(({ result }) => result.data)) as ConfigOf<Schemas>;
}

/**
 * The variables of `schema` a parse would have set that `config` lacks: a config parsed
 * without that schema (a wiring mistake, found at start rather than read as undefined later).
 */
export function unparsedVariables(schema: ConfigSchema, config: object): string[] {
  return Object.entries(schema.shape)
    .filter(([name, field]) => !(name in config) && field.safeParse(undefined).data !== undefined)
    .map(([name]) => name);
}
