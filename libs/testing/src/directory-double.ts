import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { credentialsApi, identityApi, type InternalIdentity } from '@app/contracts';
import { createTokenVerifier, isOwnerOrAdmin, isPlatformService } from '@app/platform';

/**
 * A stand-in for the identity and credentials services' *contracts* (the internal routes in
 * @app/contracts, the identity and credential create routes, and identity's reads of one
 * identity), over real HTTP and demanding a real token checked against a JWKS: a `system` token
 * of the platform's own for the internal routes, the caller's own for the reads. It lets sso's
 * and credentials' suites run without the other service, in isolation; end-to-end suites use
 * the real services.
 */
export interface DirectoryDouble {
  url: string;
  addIdentity(input: { email: string; password?: string; roles?: string[]; activated?: boolean }): InternalIdentity;
  addApiKey(identityId: string): { apiKey: string; credentialId: string };
  setActivated(identityId: string, activated: boolean): void;
  identityByEmail(email: string): InternalIdentity | undefined;
  passwordOf(identityId: string): string | undefined;
  /** The id of the identity's LOCAL credential (its password), as verify-password answers it. */
  localCredentialOf(identityId: string): string | undefined;
  /** Calls answered, by path. */
  calls: Record<string, number>;
  /** Every authorized call, in order, with the JSON body it sent: what a caller asked, and how. */
  requests: { path: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

const same = (a: string, b: string) => {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
};

export async function startDirectoryDouble(options: { jwksUrl: string; issuer: string; audience: string }): Promise<DirectoryDouble> {
  const verifier = createTokenVerifier({ jwksUrl: options.jwksUrl, issuer: options.issuer, audience: options.audience, cooldownMs: 1_000 });
  const identities = new Map<string, InternalIdentity>();
  const passwords = new Map<string, string>();
  const localCredentials = new Map<string, string>();
  const apiKeys = new Map<string, { credentialId: string; identityId: string }>();
  const calls: Record<string, number> = {};
  const requests: DirectoryDouble['requests'] = [];
  // The internal routes' request shapes, as the real services validate them: a caller off contract gets 400.
  const { verifyPassword, verifyApiKey, createLocalPassword } = credentialsApi.methods;
  const { lookup, create } = identityApi.methods;
  const contracts: Record<string, { safeParse(body: unknown): { success: boolean } }> = {
    [verifyPassword.path]: verifyPassword.input,
    [verifyApiKey.path]: verifyApiKey.input,
    [lookup.path]: lookup.input,
  };
  const byEmail = (email: string) => [...identities.values()].find((identity) => identity.email.toLowerCase() === email.toLowerCase());

  const send = (res: ServerResponse, status: number, body?: unknown) => {
    res.statusCode = status;
    res.setHeader('content-type', 'application/json');
    res.end(body === undefined ? '' : JSON.stringify(body));
  };
  const readBody = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, string>;
  };

  const routes: Record<string, (body: Record<string, string>) => [number, unknown?]> = {
    [verifyPassword.path]: (body) => {
      const identity = body.email ? byEmail(body.email) : identities.get(body.identityId ?? '');
      const stored = identity ? passwords.get(identity.id) : undefined;
      const valid = same(stored ?? 'dummy-password-never-matches', body.password ?? '') && stored !== undefined;
      return [200, valid ? { valid, identityId: identity!.id, credentialId: localCredentials.get(identity!.id) } : { valid: false }];
    },
    [verifyApiKey.path]: (body) => {
      const key = apiKeys.get(body.apiKey ?? '');
      return [200, key ? { valid: true, identityId: key.identityId, credentialId: key.credentialId, roles: identities.get(key.identityId)?.roles ?? [] } : { valid: false }];
    },
    [lookup.path]: (body) => {
      const identity = body.email ? byEmail(body.email) : identities.get(body.id ?? '');
      return identity ? [200, identity] : [404];
    },
    // identity's internal create route (roles included), for the platform's own services.
    [create.path]: (body) => {
      if (byEmail(body.email ?? '')) return [422];
      const identity = { id: randomUUID(), name: body.name ?? '', email: body.email ?? '', roles: (body.roles as unknown as string[]) ?? [], activated: true };
      identities.set(identity.id, identity);
      return [201, identity];
    },
    // credentials' internal route for sso's bootstrap admin password.
    [createLocalPassword.path]: (body) => {
      if (!identities.has(body.identityId ?? '')) return [422];
      if (!body.password) return [400];
      if (passwords.has(body.identityId!)) return [422];
      passwords.set(body.identityId!, body.password);
      return [201, [{ id: randomUUID() }]];
    },
  };

  // identity's reads of one identity, as a peer asks them on its caller's behalf (forwarding the
  // caller's bearer): the identity itself, an admin or a system token may read it; anyone else
  // gets 403, whether or not it exists.
  const reads: [RegExp, (match: RegExpExecArray) => InternalIdentity | undefined][] = [
    [/^\/api\/v1\/identity\/email\/([^/?]+)$/, (match) => byEmail(decodeURIComponent(match[1]!))],
    [/^\/api\/v1\/identity\/([^/?]+)$/, (match) => identities.get(decodeURIComponent(match[1]!))],
  ];
  const read = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method !== 'GET') return false;
    const found = reads.map(([path, find]) => [path.exec(req.url ?? ''), find] as const).find(([match]) => match);
    if (!found) return false;
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    calls[req.url!] = (calls[req.url!] ?? 0) + 1;
    void (async () => {
      const principal = await verifier.verify(token ?? '').catch(() => undefined);
      if (!principal) return send(res, 401);
      const identity = found[1](found[0]!);
      if (!isOwnerOrAdmin(principal, identity?.id ?? '')) return send(res, 403);
      send(res, identity ? 200 : 404, identity ? [identity] : undefined);
    })();
    return true;
  };

  const server = createServer((req, res) => {
    if (read(req, res)) return;
    const handler = req.method === 'POST' ? routes[req.url ?? ''] : undefined;
    if (!handler) return send(res, 404);
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    calls[req.url!] = (calls[req.url!] ?? 0) + 1;
    void (async () => {
      try {
        const principal = await verifier.verify(token ?? '');
        if (!isPlatformService(principal)) return send(res, 403);
        const request = await readBody(req);
        requests.push({ path: req.url!, body: request });
        if (contracts[req.url!]?.safeParse(request).success === false) return send(res, 400);
        const [status, body] = handler(request);
        send(res, status, body);
      } catch {
        send(res, 401);
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    addIdentity: ({ email, password, roles = [], activated = true }) => {
      const identity = { id: randomUUID(), name: email.split('@')[0] ?? email, email, roles, activated };
      identities.set(identity.id, identity);
      if (password) {
        passwords.set(identity.id, password);
        localCredentials.set(identity.id, randomUUID());
      }
      return identity;
    },
    addApiKey: (identityId) => {
      const apiKey = `ak_${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`;
      const credentialId = randomUUID();
      apiKeys.set(apiKey, { credentialId, identityId });
      return { apiKey, credentialId };
    },
    setActivated: (identityId, activated) => {
      const identity = identities.get(identityId);
      if (identity) identity.activated = activated;
    },
    identityByEmail: byEmail,
    passwordOf: (identityId) => passwords.get(identityId),
    localCredentialOf: (identityId) => localCredentials.get(identityId),
    calls,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
