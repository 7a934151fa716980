import {
  INTERNAL_APIS,
  serviceReadinessSchema,
  UpstreamError,
  type CallAuthority,
  type ClientOf,
  type InternalApi,
  type InternalMethod,
  type ServiceClients,
  type ServiceName,
} from '@app/contracts';
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import type { z } from 'zod';
import { replicaUrls, roundRobin } from './replicas.js';

/** undici is loaded on first use: the all-in-one, whose peers are in-process, never pays for it. */
const load = createRequire(import.meta.url);

/** A hung peer must not hold the request that needs it longer than this. */
const CLIENT_TIMEOUT_MS = 5_000;
/** Connections kept open per peer origin: a burst of sign-ins reuses them instead of reconnecting. */
const CONNECTIONS_PER_PEER = 32;

export interface HttpClientsOptions {
  /** Base URL of each peer service (its URL variable, as the registry of `@app/contracts` names it). */
  urls: Partial<Record<ServiceName, string>>;
  /**
   * The calling process's own short-lived system token, for calls made on its own behalf; a
   * call that forwards its caller's bearer uses that instead. Absent (or answering undefined,
   * when no service of the process offers one): only forwarded calls work.
   */
  systemToken?: () => Promise<string> | undefined;
  timeoutMs?: number;
}

/** The typed clients of split mode, one per internal API, and the readiness of any peer. */
export type HttpClients = ServiceClients & { close(): Promise<void> };

/**
 * The typed clients of split mode, derived from each service's internal API table: each call
 * one HTTP request on a kept-alive connection to one of the peer's replicas.
 */
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
    const token = options.systemToken?.();
    if (!token) throw new UpstreamError(service, 'this process has no system token to call it with');
    return `Bearer ${await token}`;
  };

  /** Sends JSON (a GET without a body); answers the parsed body for 2xx, undefined for the `absent` status. */
  const send = async <T>(
    service: ServiceName,
    target: { method: 'GET' | 'POST'; path: string; body?: unknown; output: z.ZodType<T>; absent?: number },
    authority?: CallAuthority,
  ): Promise<T | undefined> => {
    const { method, path, body } = target;
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
      const parsed = target.output.safeParse(await response.body.json().catch(() => undefined));
      if (!parsed.success) throw new UpstreamError(service, `answered an unexpected body on ${path}`);
      return parsed.data;
    }
    await response.body.dump();
    if (status === target.absent) return undefined;
    throw new UpstreamError(service, `answered ${status} on ${path}`);
  };

  /** One method: its internal route on the process's own behalf, its public route on a caller's. */
  const callOf =
    (service: ServiceName, method: InternalMethod) =>
    (input: unknown, authority?: CallAuthority): Promise<unknown> => {
      const { onBehalf, absent } = method;
      if (onBehalf && authority?.authorization) {
        return send(service, { method: 'GET', path: onBehalf.path(input), output: onBehalf.output, absent }, authority);
      }
      return send(service, { method: 'POST', path: method.path, body: input, output: method.output, absent });
    };

  const clientOf = <Api extends InternalApi>(api: Api): ClientOf<Api> =>
    Object.fromEntries(Object.entries(api.methods).map(([name, method]) => [name, callOf(api.service, method)])) as ClientOf<Api>;

  return {
    ...(Object.fromEntries(INTERNAL_APIS.map((api) => [api.service, clientOf(api)])) as Omit<ServiceClients, 'readiness'>),
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
