import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  buildServiceApp,
  ConfigError,
  configKeysOf,
  configSchemasOf,
  declaredDefaults,
  defineService,
  loadConfig,
  positiveInt,
  secret,
  secretVariablesOf,
  together,
  unparsedVariables,
} from '@app/platform';
import { openTestDependencies } from '@app/testing';

describe('loadConfig', () => {
  it('applies the defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      HOST: '0.0.0.0',
      DATA_DIR: '.data',
      BODY_LIMIT: 1_048_576,
      HEALTH_URL: 'http://127.0.0.1:3005',
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.PORT).toBeUndefined();
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', PORT: '' }).DATABASE_URL).toBeUndefined();
  });

  it('parses typed values', () => {
    const config = loadConfig({ PORT: '8080', DATABASE_URL: 'postgres://u@db:5432/app', PLATFORM_SERVICES: 'crud, identity' });
    expect(config.PORT).toBe(8080);
    expect(config.PLATFORM_SERVICES).toEqual(['crud', 'identity']);
  });

  it('names every bad variable and what it expects', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', REDIS_URL: 'http://cache' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems.map((p) => p.variable).sort()).toEqual(['DATABASE_URL', 'LOG_LEVEL', 'PORT', 'REDIS_URL']);
    expect((error as ConfigError).message).toContain('PORT: expected a port number from 0 to 65535, got "eighty"');
    expect((error as ConfigError).message).toContain('DATABASE_URL: expected a URL starting with postgres:// or postgresql://');
    expect((error as ConfigError).message).toContain('LOG_LEVEL: expected one of "fatal"');
  });

  it('rejects a port out of range and an unknown service name', () => {
    expect(() => loadConfig({ PORT: '70000' })).toThrow('PORT: expected a port number from 0 to 65535, got "70000"');
    expect(() => loadConfig({ PLATFORM_SERVICES: 'crud,billing' })).toThrow(/PLATFORM_SERVICES: expected one of "gateway"/);
  });

  it('trusts no proxy by default and refuses a TRUST_PROXY entry that is not an address, a range or a name', () => {
    expect(loadConfig({}).TRUST_PROXY).toBe('none');
    expect(() => loadConfig({ TRUST_PROXY: 'loopback,gateway.local' })).toThrow(/TRUST_PROXY: expected IPs, CIDR ranges.*"gateway\.local"/);
  });
});

/** A service's own variables as a service declares them: a default, a secret, a rule across two. */
const widgetConfig = z
  .object({
    WIDGET_LIMIT: positiveInt('a number of widgets, at least 1').default(5),
    WIDGET_ID: z.string().optional(),
    WIDGET_SECRET: secret(z.string().min(8, { error: 'expected at least 8 characters' }).optional()),
  })
  .superRefine(together('WIDGET_ID', 'WIDGET_SECRET'));

const widgetService = defineService({
  name: 'crud',
  description: 'widgets',
  config: widgetConfig,
  checks: [],
  routes: async (app, { config }) => {
    // Typed as the shared variables and its own.
    app.get('/widgets', { config: { auth: 'public' } }, async () => ({ limit: config.WIDGET_LIMIT, level: config.LOG_LEVEL }));
  },
});

describe('a service\'s own config schema, beside the shared one', () => {
  it('parses the shared variables and its own, each with its default', () => {
    const config = loadConfig({ WIDGET_LIMIT: '7' }, [widgetConfig]);
    expect([config.WIDGET_LIMIT, config.LOG_LEVEL, config.WIDGET_ID]).toEqual([7, 'info', undefined]);
    expect(loadConfig({}, [widgetConfig]).WIDGET_LIMIT).toBe(5);
  });

  it('reports the problems of every schema at once, its rules included, never echoing a secret', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', WIDGET_LIMIT: '0', WIDGET_ID: 'w', WIDGET_SECRET: 'short' }, [widgetConfig]);
    } catch (caught) {
      error = caught;
    }
    expect((error as ConfigError).problems).toEqual([
      { variable: 'PORT', expected: 'expected a port number from 0 to 65535, got "eighty"' },
      { variable: 'WIDGET_LIMIT', expected: 'expected a number of widgets, at least 1, got "0"' },
      { variable: 'WIDGET_SECRET', expected: 'expected at least 8 characters' },
    ]);
    expect(() => loadConfig({ WIDGET_SECRET: 'a-long-secret' }, [widgetConfig])).toThrow('WIDGET_ID: expected WIDGET_ID and WIDGET_SECRET together');
  });

  it('ignores the variables of a schema it was not given, as a process that does not run that service', () => {
    expect(loadConfig({ WIDGET_LIMIT: 'many' })).not.toHaveProperty('WIDGET_LIMIT');
  });

  it('refuses a variable two schemas declare: one variable, one owner', () => {
    expect(() => loadConfig({}, [z.object({ LOG_LEVEL: z.string().default('loud') })])).toThrow('LOG_LEVEL is declared by two config schemas');
  });

  it('derives the variables, the defaults and the secrets from the schemas', () => {
    expect(configKeysOf([widgetConfig]).slice(-3)).toEqual(['WIDGET_LIMIT', 'WIDGET_ID', 'WIDGET_SECRET']);
    expect(configKeysOf()).toContain('LOG_LEVEL');
    expect(declaredDefaults([widgetConfig])).toMatchObject({ WIDGET_LIMIT: 5, WIDGET_ID: undefined, LOG_LEVEL: 'info' });
    expect([...secretVariablesOf([widgetConfig])]).toEqual(['WIDGET_SECRET']);
  });

  it('lists the schemas of the services a process runs, one for a service without variables of its own', () => {
    const bare = defineService({ name: 'health', description: 'bare', checks: [], routes: async () => undefined });
    const [own, none] = configSchemasOf([widgetService, bare]);
    expect(own).toBe(widgetConfig);
    expect(Object.keys(none.shape)).toEqual([]);
  });

  it('serves a service its own variables, and refuses to mount it on a config parsed without its schema', async () => {
    const deps = await openTestDependencies('embedded', { WIDGET_LIMIT: '9' }, [widgetConfig]);
    try {
      const app = await buildServiceApp(widgetService, deps);
      expect((await app.inject({ method: 'GET', url: '/widgets' })).json()).toEqual({ limit: 9, level: 'silent' });
      await app.close();
      const unparsed = { ...deps, config: loadConfig({}) };
      expect(unparsedVariables(widgetConfig, unparsed.config)).toEqual(['WIDGET_LIMIT']);
      // @ts-expect-error -- the types refuse it too: the config lacks the service's variables.
      await expect(buildServiceApp(widgetService, unparsed)).rejects.toThrow('crud: the configuration was parsed without its schema (no WIDGET_LIMIT)');
    } finally {
      await deps.dispose();
    }
  });
});
