import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { identityApi, UpstreamError, type InternalIdentity, type ServiceReadiness } from '@app/contracts';
import {
  buildPlatformApp,
  buildServiceApp,
  createServiceHub,
  defineService,
  isDependencyUnavailable,
  principalOf,
  type App,
  type InternalImplementation,
  type ServiceContext,
} from '@app/platform';
import { freePort, openTestDependencies, startTokenIssuer, testConfig, type TokenIssuer } from '@app/testing';
import { createLocalJWKSet } from 'jose';

/** A peer service over HTTP: records every request and answers as identity, credentials or any probe would. */
interface Peer {
  url: string;
  requests: { method: string; url: string; authorization?: string }[];
  close(): Promise<void>;
}

const REMOTE_IDENTITY: InternalIdentity = { id: randomUUID(), name: 'Remote', email: 'remote@example.com', roles: [], activated: true };
const LOCAL_IDENTITY: InternalIdentity = { id: randomUUID(), name: 'Local', email: 'local@example.com', roles: [], activated: true };

async function startPeer(): Promise<Peer> {
  const requests: Peer['requests'] = [];
  const server: Server = createServer((req, res) => {
    requests.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization });
    req.resume();
    res.setHeader('content-type', 'application/json');
    if (req.url === '/health/readiness') {
      res.end(JSON.stringify({ status: 'active', service: 'remote', version: '9.9.9', date: new Date().toISOString(), dependencies: {} }));
    } else if (req.url?.startsWith('/api/v1/identity/')) {
      res.end(JSON.stringify([REMOTE_IDENTITY]));
    } else if (req.url === '/internal/v1/credentials/verify-api-key') {
      res.end(JSON.stringify({ valid: false }));
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const localReadiness = (service: string): ServiceReadiness => ({ status: 'degraded', service, version: 'local', date: '', dependencies: {} });

const inProcessIdentity: InternalImplementation<typeof identityApi> = {
  lookup: async () => LOCAL_IDENTITY,
  create: async () => LOCAL_IDENTITY,
};

let peer: Peer;
let issuer: TokenIssuer;
beforeAll(async () => {
  peer = await startPeer();
  issuer = await startTokenIssuer();
});
afterAll(async () => {
  await peer.close();
  await issuer.close();
});

describe('createServiceHub', () => {
  const config = () => testConfig({ IDENTITY_URL: peer.url, CREDENTIALS_URL: peer.url, CRUD_URL: peer.url, JWKS_URL: issuer.jwksUrl });

  it('asks a peer that does not run here for its readiness over HTTP, and one that does in process', async () => {
    const hub = createServiceHub(config());
    try {
      const before = peer.requests.length;
      expect(await hub.clients.readiness('crud')).toMatchObject({ status: 'active', service: 'remote' });
      expect(peer.requests.slice(before)).toEqual([{ method: 'GET', url: '/health/readiness', authorization: undefined }]);

      hub.addLocal('crud', async () => localReadiness('crud'));
      expect(await hub.clients.readiness('crud')).toEqual(localReadiness('crud'));
      expect(peer.requests.length).toBe(before + 1);
    } finally {
      await hub.close();
    }
  });

  it('resolves a client at each call: one taken before its peer provides itself calls it in process afterwards', async () => {
    const hub = createServiceHub(config());
    const { identity } = hub.clients;
    try {
      const before = peer.requests.length;
      // Not provided yet: over HTTP, on the caller's behalf, with exactly its authority.
      expect(await identity.lookup({ id: REMOTE_IDENTITY.id }, { authorization: 'Bearer caller' })).toEqual(REMOTE_IDENTITY);
      expect(peer.requests.slice(before)).toEqual([{ method: 'GET', url: `/api/v1/identity/${REMOTE_IDENTITY.id}`, authorization: 'Bearer caller' }]);

      hub.serve(identityApi, inProcessIdentity);
      expect(await identity.lookup({ id: LOCAL_IDENTITY.id }, { authorization: 'Bearer caller' })).toEqual(LOCAL_IDENTITY);
      expect(peer.requests.length).toBe(before + 1);
    } finally {
      await hub.close();
    }
  });

  it('calls a peer on its own behalf only with the system token sso provides', async () => {
    const hub = createServiceHub(config());
    try {
      const before = peer.requests.length;
      const refused = hub.clients.credentials.verifyApiKey({ apiKey: 'key' });
      await expect(refused).rejects.toBeInstanceOf(UpstreamError);
      await expect(refused).rejects.toThrow('no system token');
      expect(peer.requests.length).toBe(before);

      hub.provide({ systemToken: async () => 'system-token' });
      expect(await hub.clients.credentials.verifyApiKey({ apiKey: 'key' })).toEqual({ valid: false });
      expect(peer.requests.slice(before)).toEqual([{ method: 'POST', url: '/internal/v1/credentials/verify-api-key', authorization: 'Bearer system-token' }]);
    } finally {
      await hub.close();
    }
  });

  it('verifies tokens with the keys sso provides in process, never fetching its JWKS', async () => {
    // Nobody listens at this JWKS: only the provided keys can verify anything.
    const hub = createServiceHub(testConfig({ JWKS_URL: `http://127.0.0.1:${await freePort()}/jwks` }));
    try {
      const token = await issuer.mint(LOCAL_IDENTITY.id, ['admin']);
      // No keys provided yet and no JWKS to fetch: that is not the token's fault (503 and retry, not 401).
      const before = await hub.verifier.verify(token).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(isDependencyUnavailable(before)).toBe(true);
      hub.provide({ verificationKeys: createLocalJWKSet({ keys: [issuer.publicJwk] }) });
      expect(await hub.verifier.verify(token)).toMatchObject({ id: LOCAL_IDENTITY.id, roles: ['admin'] });
    } finally {
      await hub.close();
    }
  });
});

describe('buildServiceApp', () => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let migrations: string;
  const contexts: Partial<Record<string, ServiceContext>> = {};

  /** Stands in for identity: a table of its own, and an in-process client it offers the others. */
  const identityLike = () =>
    defineService({
      name: 'identity',
      description: 'test identity',
      migrations,
      checks: ['database'],
      routes: async (app, context) => {
        contexts.identity = context;
        await context.serve(identityApi, inProcessIdentity);
        app.get('/api/v1/identity/me', async (request) => ({ id: principalOf(request).id }));
      },
    });

  /** Stands in for sso: calls identity through its clients, whatever runs where. */
  const ssoLike = defineService({
    name: 'sso',
    description: 'test sso',
    checks: ['database', 'cache'],
    routes: async (app, context) => {
      contexts.sso = context;
      const open = { config: { auth: 'public' as const } };
      app.get('/api/v1/sso/peer', open, async () => context.clients.identity.lookup({ id: REMOTE_IDENTITY.id }, { authorization: 'Bearer caller' }));
      app.get('/api/v1/sso/peer-readiness', open, async () => context.clients.readiness('identity'));
    },
  });

  beforeAll(async () => {
    migrations = await mkdtemp(join(tmpdir(), 'migrations-'));
    await mkdir(join(migrations, '20260101000000_widget'));
    await writeFile(join(migrations, '20260101000000_widget', 'migration.sql'), 'create table "identity"."widget" (id integer primary key);');
    deps = await openTestDependencies('embedded', { IDENTITY_URL: peer.url, JWKS_URL: issuer.jwksUrl });
  });
  afterAll(async () => {
    await deps.dispose();
    await rm(migrations, { recursive: true, force: true });
  });

  describe('one service as its own app', () => {
    let app: App;
    beforeAll(async () => {
      app = await buildServiceApp(identityLike(), deps);
    });
    afterAll(() => app.close());

    it('applies its migrations itself', async () => {
      expect(await deps.database.query('select count(*)::int as n from "identity"."widget"')).toEqual([{ n: 0 }]);
      expect(await deps.database.query('select name from "identity"."_migrations"')).toEqual([{ name: '20260101000000_widget' }]);
    });

    it('answers its probes without a token, readiness with the checks it declares and its revocations', async () => {
      const live = await app.inject({ method: 'GET', url: '/health/liveness' });
      expect(live.statusCode).toBe(200);
      expect(live.json()).toMatchObject({ status: 'active', service: 'identity' });
      const ready = await app.inject({ method: 'GET', url: '/health/readiness' });
      expect(ready.statusCode).toBe(200);
      expect(Object.keys(ready.json().dependencies)).toEqual(['database', 'revocations']);
    });

    it('serves its OpenAPI document titled by its name', async () => {
      const response = await app.inject({ method: 'GET', url: '/openapi.json' });
      expect(response.json()).toMatchObject({ info: { title: 'identity', description: 'test identity' } });
    });

    it('runs its routes standalone, behind route auth as a service (not the edge)', async () => {
      expect(contexts.identity).toMatchObject({ name: 'identity', mode: 'standalone' });
      expect((await app.inject({ method: 'GET', url: '/api/v1/identity/me' })).statusCode).toBe(401);
      const id = randomUUID();
      const me = await app.inject({ method: 'GET', url: '/api/v1/identity/me', headers: { authorization: `Bearer ${await issuer.mint(id)}` } });
      expect(me.json()).toEqual({ id });
      expect((await app.inject({ method: 'GET', url: '/nowhere' })).statusCode).toBe(404);
    });
  });

  it('reaches a peer that is not in its hub over HTTP', async () => {
    const app = await buildServiceApp(ssoLike, deps);
    try {
      const before = peer.requests.length;
      expect((await app.inject({ method: 'GET', url: '/api/v1/sso/peer' })).json()).toEqual(REMOTE_IDENTITY);
      expect((await app.inject({ method: 'GET', url: '/api/v1/sso/peer-readiness' })).json()).toMatchObject({ service: 'remote' });
      expect(peer.requests.slice(before).map((request) => request.url)).toEqual([`/api/v1/identity/${REMOTE_IDENTITY.id}`, '/health/readiness']);
    } finally {
      await app.close();
    }
  });

  it('reaches a peer of the same hub in process, even one built after it', async () => {
    const hub = createServiceHub(deps.config);
    const sso = await buildServiceApp(ssoLike, deps, { hub });
    const identity = await buildServiceApp(identityLike(), deps, { hub });
    try {
      const before = peer.requests.length;
      expect((await sso.inject({ method: 'GET', url: '/api/v1/sso/peer' })).json()).toEqual(LOCAL_IDENTITY);
      expect((await sso.inject({ method: 'GET', url: '/api/v1/sso/peer-readiness' })).json()).toMatchObject({
        status: 'active',
        service: 'identity',
        dependencies: { database: { status: 'connected' } },
      });
      expect(peer.requests.length).toBe(before);
    } finally {
      await sso.close();
      await identity.close();
      await hub.close();
    }
  });
});

describe('buildPlatformApp', () => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let app: App;
  const modes: string[] = [];
  beforeAll(async () => {
    deps = await openTestDependencies('embedded', { JWKS_URL: issuer.jwksUrl });
    const service = (name: 'identity' | 'crud') =>
      defineService({
        name,
        description: name,
        checks: [],
        routes: async (scope, context) => {
          modes.push(`${context.name}:${context.mode}`);
          scope.get(`/api/v1/${name}/open`, { config: { auth: 'public' } }, async () => ({ name }));
        },
      });
    app = await buildPlatformApp([service('identity'), service('crud')], deps);
  });
  afterAll(async () => {
    await app.close();
    await deps.dispose();
  });

  it('mounts every service in one instance, all-in-one', () => {
    expect(modes).toEqual(['identity:all-in-one', 'crud:all-in-one']);
  });

  it('is the edge: a route its service declares public opens, an unknown path or a sibling wants a token', async () => {
    expect((await app.inject({ method: 'GET', url: '/api/v1/crud/open' })).json()).toEqual({ name: 'crud' });
    expect((await app.inject({ method: 'GET', url: '/nowhere' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/api/v1/crud/open/x' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'POST', url: '/api/v1/crud/open' })).statusCode).toBe(401);
    const authorization = `Bearer ${await issuer.mint(randomUUID())}`;
    expect((await app.inject({ method: 'GET', url: '/nowhere', headers: { authorization } })).statusCode).toBe(404);
  });

  it('answers one pair of probes for the process', async () => {
    const ready = await app.inject({ method: 'GET', url: '/health/readiness' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ service: 'platform', dependencies: { database: { status: 'connected' }, cache: { status: 'connected' } } });
  });
});

describe("a service's housekeeping", () => {
  it('runs its timers (a failed run does not stop the next) and bus subscriptions while it runs, and stops both when it closes', async () => {
    const deps = await openTestDependencies('embedded', { JWKS_URL: issuer.jwksUrl });
    const runs: string[] = [];
    const heard: unknown[] = [];
    const housekeeper = defineService({
      name: 'crud',
      description: 'housekeeper',
      checks: [],
      routes: async (_scope, context) => {
        // Fails every time: at once (a throw before any promise) and as a rejection, in turn.
        context.every('sweeping', 5, () => {
          runs.push('sweep');
          if (runs.length % 2 === 1) throw new Error('the sweep failed at once');
          return Promise.reject(new Error('the sweep failed'));
        });
        await context.subscribe('housekeeping.>', async (message) => void heard.push(message.data), { broadcast: true });
        await context.respond('housekeeping.ask', async (question) => ({ answer: question }));
      },
    });
    const app = await buildServiceApp(housekeeper, deps);
    try {
      await waitFor(() => runs.length >= 3);
      await deps.bus.publish('housekeeping.done', { n: 1 });
      await waitFor(() => heard.length === 1);
      expect(heard).toEqual([{ n: 1 }]);
      expect(await deps.bus.request('housekeeping.ask', 42)).toEqual({ answer: 42 });
    } finally {
      await app.close();
    }
    const runsAtClose = runs.length;
    await deps.bus.publish('housekeeping.done', { n: 2 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(runs.length).toBe(runsAtClose);
    expect(heard).toEqual([{ n: 1 }]);
    await expect(deps.bus.request('housekeeping.ask', 1)).rejects.toThrow(/no responder/);
    await deps.dispose();
  });
});

/** Waits for `condition`, polling; the suite's own timeout bounds it. */
async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}
