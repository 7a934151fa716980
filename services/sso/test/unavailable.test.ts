// How the OAuth endpoints and the browser pages answer a dependency that cannot answer (503
// with Retry-After, in their own shape) and a fault of ours (500). The errors are the ones the
// drivers really throw: a PrismaClientKnownRequestError as Prisma 7 wraps a server starting up
// (57P03, reproduced against libs/testing's fake Postgres), and a refused socket. The
// platform-level fault runs (test/e2e/faults.test.ts) produce them from a real outage.
import { BlockList } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createApp, createLogger, type App, type TokenVerifier } from '@app/platform';
import { Prisma } from '../src/generated/prisma/client.js';
import { browserRoutes } from '../src/browser/routes.js';
import { LOGIN_PATH } from '../src/browser/paths.js';
import type { BrowserSignIn } from '../src/browser/service.js';
import { REVOKE_PATH, TOKEN_PATH, tokenRoutes } from '../src/tokens/routes.js';
import type { TokenService } from '../src/tokens/service.js';

const startingUp = () => {
  const message = 'the database system is starting up';
  const driverAdapterError = Object.assign(new Error(message), {
    name: 'DriverAdapterError',
    cause: { originalCode: '57P03', originalMessage: message, kind: 'postgres', code: '57P03', severity: 'FATAL', message },
  });
  return new Prisma.PrismaClientKnownRequestError(`Database error. Code: \`57P03\`. Message: \`${message}\``, {
    code: 'P2039',
    clientVersion: Prisma.prismaVersion.client,
    meta: { modelName: 'RefreshToken', driverAdapterError },
  });
};
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect' });
const bug = () => new TypeError("Cannot read properties of undefined (reading 'id')");

let app: App | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** sso's token routes and browser pages, whose every call to the service fails with `failure()`. */
async function failingSso(failure: () => Error): Promise<App> {
  const fail = async () => {
    throw failure();
  };
  app = await createApp({ name: 'sso', version: '1.0.0', logger: createLogger({ LOG_LEVEL: 'silent' }), bodyLimit: 16_384 });
  const tokens = { grant: fail, revoke: fail, introspect: fail, authenticateClient: fail } as unknown as TokenService;
  await app.register(tokenRoutes, { tokens, verifier: { verify: fail } as unknown as TokenVerifier, trustedProxies: new BlockList() });
  const browser = { authorize: fail, login: fail } as unknown as BrowserSignIn;
  await app.register(browserRoutes, { browser, endSession: fail });
  await app.ready();
  return app;
}

const formPost = (url: string, fields: Record<string, string>) => ({
  method: 'POST' as const,
  url,
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  payload: new URLSearchParams(fields).toString(),
});
const passwordGrant = formPost(TOKEN_PATH, { grant_type: 'password', username: 'someone@example.com', password: 'a password' });

describe('the token endpoint when a dependency cannot answer', () => {
  it.each([
    ['the database starting up (57P03, through Prisma)', startingUp],
    ['the database refusing connections', refused],
  ])('answers %s with 503 temporarily_unavailable and Retry-After, never 500', async (_name, failure) => {
    const response = await (await failingSso(failure)).inject(passwordGrant);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.json()).toEqual({ error: 'temporarily_unavailable', error_description: 'The sign-in service is temporarily unavailable; retry shortly.' });
  });

  it('answers a fault of ours with 500 server_error, without Retry-After', async () => {
    const response = await (await failingSso(bug)).inject(passwordGrant);
    expect(response.statusCode).toBe(500);
    expect(response.headers['retry-after']).toBeUndefined();
    expect(response.json()).toEqual({ error: 'server_error', error_description: 'Something went wrong on our side.' });
  });

  it('answers a revocation the same way: 503 with Retry-After', async () => {
    const response = await (await failingSso(startingUp)).inject(formPost(REVOKE_PATH, { token: 'an-opaque-refresh-token' }));
    expect([response.statusCode, response.headers['retry-after'], response.json().error]).toEqual([503, '5', 'temporarily_unavailable']);
  });
});

describe('the browser pages when a dependency cannot answer', () => {
  const login = formPost(LOGIN_PATH, { request: '6b1e1d1e-0000-4000-8000-000000000000', csrf: 'x', username: 'someone@example.com', password: 'x' });

  it('answer an HTML page with 503 and Retry-After', async () => {
    const response = await (await failingSso(startingUp)).inject(login);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.body).toContain('Signing in is not possible right now. Try again in a moment.');
  });

  it('answer a fault of ours with a 500 page, without Retry-After', async () => {
    const response = await (await failingSso(bug)).inject(login);
    expect(response.statusCode).toBe(500);
    expect(response.headers['retry-after']).toBeUndefined();
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
  });
});
