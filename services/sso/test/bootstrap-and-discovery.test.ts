import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createHttpClients, createPrismaClient, enqueueEvent, migrateService } from '@app/platform';
import { openTestDependencies, testModes } from '@app/testing';
import { PrismaClient } from '../src/generated/prisma/client.js';
import { createSsoService } from '../src/index.js';
import { clientAddress, parseTrustedProxies } from '@app/platform';
import { listenSso, startSso } from './support.js';

const waitFor = async (check: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(await check()).toBe(true);
};

describe.each(testModes())('bootstrap admin (%s)', (mode) => {
  it('creates the configured admin once, with role admin and its password, and signs it in', async () => {
    const sso = await startSso(mode, { BOOTSTRAP_ADMIN_EMAIL: 'boss@example.com', BOOTSTRAP_ADMIN_PASSWORD: 'a long admin password' });
    try {
      await waitFor(() => sso.double.identityByEmail('boss@example.com') !== undefined && sso.double.passwordOf(sso.double.identityByEmail('boss@example.com')!.id) !== undefined);
      expect(sso.double.identityByEmail('boss@example.com')).toMatchObject({ roles: ['admin'], activated: true });
      const response = await sso.token({ grant_type: 'password', username: 'boss@example.com', password: 'a long admin password' });
      expect(response.status).toBe(200);
      expect(sso.announced).toEqual([]);
    } finally {
      await sso.close();
    }
  });

  it('in all-in-one mode with nothing configured, creates admin@localhost and shows its generated password once', async () => {
    const sso = await startSso(mode, { ALL_IN_ONE: 'true' });
    try {
      await waitFor(() => sso.announced.length === 1);
      const announcement = sso.announced[0]!;
      expect(announcement).toMatch(/^ {4}email: +admin@localhost$/m);
      expect(announcement).toContain('shown once');
      const password = /^ {4}password: +(\S+)$/m.exec(announcement)?.[1];
      expect(password).toMatch(/^[\w-]{24}$/);
      expect((await sso.token({ grant_type: 'password', username: 'admin@localhost', password: password! })).status).toBe(200);
      // A restart finds the admin and shows nothing.
      await sso.service.close();
      const again: string[] = [];
      const restarted = await listenSso(sso.deps, Number(new URL(sso.url).port), (message) => again.push(message));
      const identityCalls = () => sso.double.calls['/internal/v1/identities/lookup'] ?? 0;
      const before = identityCalls();
      await waitFor(() => identityCalls() > before);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(again).toEqual([]);
      expect(sso.double.passwordOf(sso.double.identityByEmail('admin@localhost')!.id)).toBe(password);
      await restarted.close();
    } finally {
      await sso.double.close();
      await sso.deps.dispose();
    }
  });
});

describe('refusing to promote a squatter', () => {
  it('leaves an identity without the admin role untouched and gives it no password', async () => {
    const { bootstrapAdmin } = await import('../src/bootstrap/admin.js');
    const { startDirectoryDouble, startTokenIssuer, silentLogger } = await import('@app/testing');
    const issuer = await startTokenIssuer();
    const double = await startDirectoryDouble({ jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: issuer.audience });
    try {
      const squatter = double.addIdentity({ email: 'boss@example.com' });
      const clients = createHttpClients({
        urls: { identity: double.url, credentials: double.url },
        systemToken: () => issuer.mint('service:sso', ['system']),
        timeoutMs: 2_000,
      });
      try {
        const outcome = await bootstrapAdmin({
          identities: clients.identity,
          credentials: clients.credentials,
          logger: silentLogger(),
          email: 'boss@example.com',
          password: 'a long admin password',
          announce: () => undefined,
        });
        expect(outcome).toBe('refused');
        expect(double.identityByEmail('boss@example.com')).toEqual(squatter);
        expect(double.passwordOf(squatter.id)).toBeUndefined();
      } finally {
        await clients.close();
      }
    } finally {
      await double.close();
      await issuer.close();
    }
  });
});

describe('discovery', () => {
  const metadata = {
    issuer: 'http://localhost:3000',
    authorization_endpoint: 'http://localhost:3000/api/v1/sso/authorize',
    token_endpoint: 'http://localhost:3000/api/v1/sso/token',
    userinfo_endpoint: 'http://localhost:3000/api/v1/sso/userinfo',
    end_session_endpoint: 'http://localhost:3000/api/v1/sso/logout',
    jwks_uri: 'http://localhost:3000/api/v1/sso/jwks',
    revocation_endpoint: 'http://localhost:3000/api/v1/sso/revoke',
    introspection_endpoint: 'http://localhost:3000/api/v1/sso/introspect',
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'password', 'refresh_token', 'client_credentials'],
    code_challenge_methods_supported: ['S256'],
    scopes_supported: ['openid', 'email', 'profile', 'offline_access'],
    claims_supported: ['sub', 'email', 'name', 'picture'],
    id_token_signing_alg_values_supported: ['ES256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    subject_types_supported: ['public'],
    authorization_response_iss_parameter_supported: true,
    request_uri_parameter_supported: false,
  };

  it.each(['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'])(
    'serves at %s only what works: the code flow with PKCE S256, ES256 ID tokens, the scopes userinfo honours',
    async (path) => {
      const sso = await startSso('embedded');
      try {
        const response = await fetch(`${sso.url}${path}`);
        expect(response.status).toBe(200);
        expect(response.headers.get('cache-control')).toBe('public, max-age=3600');
        expect(await response.json()).toEqual(metadata);
      } finally {
        await sso.close();
      }
    },
  );

  it('names the issuer JWT_ISSUER says, and every endpoint under it, absolute', async () => {
    const sso = await startSso('embedded', { JWT_ISSUER: 'https://sso.example.test' });
    try {
      const body = (await (await fetch(`${sso.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
      expect(body.issuer).toBe('https://sso.example.test');
      for (const name of ['authorization_endpoint', 'jwks_uri', 'token_endpoint', 'revocation_endpoint', 'introspection_endpoint', 'userinfo_endpoint', 'end_session_endpoint']) {
        expect(String(body[name])).toMatch(/^https:\/\/sso\.example\.test\/api\/v1\/sso\/[a-z]+$/);
      }
    } finally {
      await sso.close();
    }
  });
});

describe('client address', () => {
  const trusted = parseTrustedProxies('loopback,uniquelocal');
  it.each([
    ['a trusted peer forwarding: the last hop it appended', '127.0.0.1', '6.6.6.6, 203.0.113.9', '203.0.113.9'],
    ['an IPv4-mapped trusted peer', '::ffff:10.1.2.3', '203.0.113.9', '203.0.113.9'],
    ['an untrusted peer, whatever it claims', '203.0.113.1', '127.0.0.1', '203.0.113.1'],
    ['a trusted peer without the header', '127.0.0.1', undefined, '127.0.0.1'],
    ['a trusted peer with garbage in the header', '127.0.0.1', 'not-an-ip', '127.0.0.1'],
    ['a chain of trusted proxies: the first untrusted hop', '127.0.0.1', '6.6.6.6, 203.0.113.9, 10.0.0.5', '203.0.113.9'],
    ['a client spoofing a private address behind trusted proxies', '127.0.0.1', '10.9.9.9, 203.0.113.9', '203.0.113.9'],
  ])('%s', (_case, peer, header, expected) => {
    expect(clientAddress(trusted, peer, header)).toBe(expected);
  });

  it('rejects a TRUST_PROXY entry that is not an address, a range or a name', () => {
    expect(() => parseTrustedProxies('loopback,gateway.local')).toThrow('TRUST_PROXY: "gateway.local" is not an IP address');
  });
});

describe.each(testModes())('schema.prisma and the migrations (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    await migrateService(deps.database, createSsoService(), deps.logger);
  });
  afterAll(() => deps.dispose());

  it('round-trips every model through Prisma on a freshly migrated database', async () => {
    const prisma = createPrismaClient(PrismaClient, deps.database);
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    const key = {
      kid: 'kid-1',
      algorithm: 'ES256',
      publicJwk: { kty: 'EC', crv: 'P-256', x: 'x', y: 'y' },
      privateKey: 'v1.a.b.c',
      privateKeyEncrypted: true,
      createdAt: now,
      activatesAt: now,
      retiredAt: now,
      notAfter: now,
    };
    await prisma.signingKey.create({ data: key });
    expect(await prisma.signingKey.findUniqueOrThrow({ where: { kid: 'kid-1' } })).toEqual(key);
    const family = {
      id: randomUUID(),
      identityId: randomUUID(),
      credentialId: randomUUID(),
      clientId: randomUUID(),
      scope: 'openid offline_access',
      generation: 2,
      issuedAt: now,
      revokedAt: null,
    };
    await prisma.refreshFamily.create({ data: family });
    expect(await prisma.refreshFamily.findUniqueOrThrow({ where: { id: family.id } })).toEqual(family);
    const token = { id: randomUUID(), tokenHash: 'h'.repeat(64), familyId: family.id, generation: 2, createdAt: now, expiresAt: now };
    await prisma.refreshToken.create({ data: token });
    expect(await prisma.refreshToken.findUniqueOrThrow({ where: { id: token.id } })).toEqual(token);
    const client = {
      id: randomUUID(),
      name: 'An app',
      type: 'confidential',
      secretHash: 's'.repeat(64),
      redirectUris: ['https://app.example.com/cb'],
      postLogoutRedirectUris: [],
      grantTypes: ['authorization_code'],
      scopes: ['openid'],
      createdAt: now,
      updatedAt: now,
    };
    await prisma.oAuthClient.create({ data: client });
    expect(await prisma.oAuthClient.findUniqueOrThrow({ where: { id: client.id } })).toEqual(client);
    // The table refuses what the service never writes: a confidential client without a secret.
    await expect(prisma.oAuthClient.create({ data: { ...client, id: randomUUID(), secretHash: null } })).rejects.toThrow();
    const session = { id: randomUUID(), tokenHash: 'c'.repeat(64), identityId: randomUUID(), credentialId: null, authTime: now, expiresAt: now, endedAt: now };
    await prisma.browserSession.create({ data: session });
    expect(await prisma.browserSession.findUniqueOrThrow({ where: { id: session.id } })).toEqual(session);
    const request = {
      id: randomUUID(),
      clientId: client.id,
      redirectUri: 'https://app.example.com/cb',
      scope: 'openid',
      state: 'st',
      nonce: 'no',
      codeChallenge: 'x'.repeat(43),
      csrfHash: null,
      createdAt: now,
      expiresAt: now,
      codeHash: 'd'.repeat(64),
      codeExpiresAt: now,
      codeUsedAt: now,
      sessionId: session.id,
      identityId: session.identityId,
      credentialId: null,
      authTime: now,
      familyId: randomUUID(),
    };
    await prisma.authorizationRequest.create({ data: request });
    expect(await prisma.authorizationRequest.findUniqueOrThrow({ where: { id: request.id } })).toEqual(request);
  });

  it('creates the outbox its revocation events will go through', async () => {
    const prisma = createPrismaClient(PrismaClient, deps.database);
    const id = await prisma.$transaction((tx) => enqueueEvent(tx, 'sso', 'sso.outbox.probe', { probe: true }));
    expect(await deps.database.query('select id, subject, payload from "sso"."_outbox"')).toEqual([{ id, subject: 'sso.outbox.probe', payload: { probe: true } }]);
  });
});
