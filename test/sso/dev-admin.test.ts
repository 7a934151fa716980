import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { startPlatform, type Platform } from '@app/all-in-one';
import { eventually, verifyIndependently } from '@app/testing';
import { openPlatformDependencies, type PlatformDependencies } from '../support/platform.js';

describe('the all-in-one development admin (embedded)', () => {
  let deps: PlatformDependencies;
  let platform: Platform;
  // The generated password goes to the console, once; record what is printed (still printed).
  const printed = jest.spyOn(console, 'log');
  const start = () =>
    startPlatform(deps.config, deps.logger, { dependencies: deps, port: 0 });

  beforeAll(async () => {
    deps = await openPlatformDependencies('embedded', { PLATFORM_SERVICES: 'identity,credentials,sso' });
    platform = await start();
  });
  afterAll(async () => {
    printed.mockRestore();
    await platform.close();
    await deps.dispose();
  });

  const passwordsShown = () =>
    printed.mock.calls.flatMap((args) => /^ {4}password: +(\S+)$/m.exec(String(args[0]))?.[1] ?? []);

  it('creates admin@localhost with a generated password shown once, which signs in as an admin', async () => {
    expect(await eventually(async () => passwordsShown().length === 1)).toBe(true);
    const password = passwordsShown()[0]!;
    const response = await fetch(`${platform.url}/api/v1/sso/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', username: 'admin@localhost', password }),
    });
    expect(response.status).toBe(200);
    const { access_token } = (await response.json()) as { access_token: string };
    const jwks = (await (await fetch(`${platform.url}/api/v1/sso/jwks`)).json()) as { keys: Record<string, unknown>[] };
    expect(verifyIndependently(access_token, jwks)).toMatchObject({ roles: ['admin'] });
  });

  it('shows nothing on the next start, when the admin exists', async () => {
    await platform.close();
    platform = await start();
    const lookups = async () => (await fetch(`${platform.url}/api/v1/health/readiness`)).status === 200;
    expect(await eventually(lookups)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(passwordsShown()).toHaveLength(1);
  });
});
