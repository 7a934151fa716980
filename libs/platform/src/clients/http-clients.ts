import {
  federatedCredentialSchema,
  INTERNAL_ROUTES,
  internalIdentitySchema,
  serviceReadinessSchema,
  UpstreamError,
  verifyApiKeyResponseSchema,
  verifyPasswordResponseSchema,
  type CallAuthority,
  type CredentialsClient,
  type IdentityClient,
  type ReadinessClient,
  type ServiceName,
} from '@app/contracts';
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import { z } from 'zod';
import { replicaUrls, roundRobin } from './replicas.js';

/** undici is loaded on first use: the all-in-one, whose peers are in-process, never pays for it. */
const load = createRequire(import.meta.url);

/** A hung peer must not hold the request that needs it longer than this. */
const CLIENT_TIMEOUT_MS = 5_000;
/** Connections kept open per peer origin: a burst of sign-ins reuses them instead of reconnecting. */
const CONNECTIONS_PER_PEER = 32;

/** The public routes the HTTP clients use: identity reads on a caller's behalf, the bootstrap admin's password. */
const IDENTITY_PATH = '/api/v1/identity';

/** Read and create answers are arrays of one record (DESIGN.md); extra fields are ignored. */
const createdIdentitySchema = z.array(internalIdentitySchema).length(1).transform((records) => records[0]!);
const createdCredentialSchema = z.array(z.object({ id: z.uuid() })).length(1);

export interface HttpClientsOptions {
  /** Base URL of each peer service (IDENTITY_URL, ...). */
  urls: Partial<Record<ServiceName, string>>;
  /**
   * The calling service's own short-lived system token, for calls made on its own behalf; a
   * call that forwards its caller's bearer uses that instead. Absent: only forwarded calls work.
   */
  systemToken?: () => Promise<string>;
  timeoutMs?: number;
}

export interface HttpClients {
  identity: IdentityClient;
  credentials: CredentialsClient;
  readiness: ReadinessClient['readiness'];
  close(): Promise<void>;
}

/** The typed clients of split mode: each call one HTTP request on a kept-alive connection. */
export function createHttpClients(options: HttpClientsOptions): HttpClients {
  const { Agent, request } = load('undici') as typeof Undici;
  const timeoutMs = options.timeoutMs ?? CLIENT_TIMEOUT_MS;
  const dispatcher = new Agent({ connections: CONNECTIONS_PER_PEER, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, keepAliveTimeout: 10_000 });

  // Each peer's replicas (its URL variable may list several), taken in turn; one nobody
  // answers at is skipped for the next.
  const peers = new Map<ServiceName, ReturnType<typeof roundRobin>>();
  const call = <T>(service: ServiceName, path: string, attempt: (url: URL) => Promise<T>): Promise<T> => {
    let replicas = peers.get(service);
    if (!replicas) {
      const urls = replicaUrls(options.urls[service] ?? '');
      if (urls.length === 0) throw new UpstreamError(service, 'no URL is configured for it');
      peers.set(service, (replicas = roundRobin(urls)));
    }
    return replicas((base) => attempt(new URL(path, base)));
  };

  const authorizationFor = async (service: ServiceName, authority?: CallAuthority): Promise<string> => {
    if (authority?.authorization) return authority.authorization;
    if (!options.systemToken) throw new UpstreamError(service, 'this process has no system token to call it with');
    return `Bearer ${await options.systemToken()}`;
  };

  /** Sends JSON; answers the parsed body for 2xx, undefined for an `expected` non-2xx status. */
  const send = async <T>(
    service: ServiceName,
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    schema: z.ZodType<T>,
    expected: number[] = [],
    authority?: CallAuthority,
  ): Promise<{ status: number; data?: T }> => {
    const authorization = await authorizationFor(service, authority);
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await call(service, path, (url) =>
        request(url, {
          method,
          dispatcher,
          headers: body === undefined ? { authorization } : { 'content-type': 'application/json', authorization },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutMs),
        }),
      );
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      throw new UpstreamError(service, `unreachable (${(error as Error).name})`);
    }
    const status = response.statusCode;
    if (status >= 200 && status < 300) {
      const parsed = schema.safeParse(await response.body.json().catch(() => undefined));
      if (!parsed.success) throw new UpstreamError(service, `answered an unexpected body on ${path}`);
      return { status, data: parsed.data };
    }
    await response.body.dump();
    if (expected.includes(status)) return { status };
    throw new UpstreamError(service, `answered ${status} on ${path}`);
  };
  const post = <T>(service: ServiceName, path: string, body: unknown, schema: z.ZodType<T>, expected: number[] = []) =>
    send(service, 'POST', path, body, schema, expected);

  return {
    identity: {
      lookup: async (query, authority) => {
        if (!authority?.authorization) return (await post('identity', INTERNAL_ROUTES.identityLookup, query, internalIdentitySchema, [404])).data;
        // On a caller's behalf: the public read routes, with exactly the caller's authority.
        const path = 'email' in query ? `${IDENTITY_PATH}/email/${encodeURIComponent(query.email)}` : `${IDENTITY_PATH}/${encodeURIComponent(query.id)}`;
        return (await send('identity', 'GET', path, undefined, createdIdentitySchema, [404], authority)).data;
      },
      // Roles are set by admins only on the public route; the platform's own services use the internal one.
      create: async (input) => (await post('identity', INTERNAL_ROUTES.identityCreate, input, internalIdentitySchema, [422])).data,
    },
    credentials: {
      verifyPassword: async (input) => (await post('credentials', INTERNAL_ROUTES.verifyPassword, input, verifyPasswordResponseSchema)).data!,
      verifyApiKey: async (apiKey) => (await post('credentials', INTERNAL_ROUTES.verifyApiKey, { apiKey }, verifyApiKeyResponseSchema)).data!,
      createLocalPassword: async (identityId, password) => {
        const { status } = await post('credentials', INTERNAL_ROUTES.localPasswordCreate, { identityId, password }, createdCredentialSchema, [422]);
        return status === 201;
      },
      findFederated: async (request) => (await post('credentials', INTERNAL_ROUTES.federatedLookup, request, federatedCredentialSchema, [404])).data,
      createFederated: async (request) => (await post('credentials', INTERNAL_ROUTES.federatedCreate, request, federatedCredentialSchema, [422])).data,
    },
    readiness: async (service) => {
      try {
        const response = await call(service, '/health/readiness', (url) => request(url, { dispatcher, signal: AbortSignal.timeout(timeoutMs) }));
        const parsed = serviceReadinessSchema.safeParse(await response.body.json().catch(() => undefined));
        if (!parsed.success) throw new UpstreamError(service, 'answered an unexpected readiness report');
        return parsed.data;
      } catch (error) {
        if (error instanceof UpstreamError) throw error;
        throw new UpstreamError(service, `unreachable (${(error as Error).name})`);
      }
    },
    close: () => dispatcher.close(),
  };
}
