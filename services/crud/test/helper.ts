import { randomUUID } from 'node:crypto';
import { buildGateway, gatewayConfig, type GatewayConfig } from '@app/gateway';
import { buildServiceApp, listenApp, type App, type Cache, type Dependencies, type Env, type RunningApp } from '@app/platform';
import { answerRevocationsAsSso, openTestDependencies, requestBytes, startTokenIssuer, type BytesReply, type TestMode, type TokenIssuer } from '@app/testing';
import { crudConfig, crudService, type CrudConfig } from '../src/index.js';

/** What a test sends; the same request goes through app.inject or through the gateway. */
export interface TestRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Sent as is instead of JSON-encoding `body`. */
  rawBody?: string;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string | undefined>;
  text: string;
  /** The parsed JSON body; undefined when the body is empty. */
  json: unknown;
}

export type Transport = 'inject' | 'gateway';

export interface CrudHarness {
  app: App;
  deps: Dependencies<CrudConfig & GatewayConfig>;
  issuer: TokenIssuer;
  /** A valid bearer token. */
  token: string;
  send(request: TestRequest): Promise<TestResponse>;
  /** The same request, its answer's bytes as they came (never decoded, and no Accept-Encoding unless given). */
  sendRaw(request: TestRequest): Promise<BytesReply>;
  close(): Promise<void>;
}

const parse = (text: string) => (text === '' ? undefined : JSON.parse(text));

/**
 * Starts the crud service on fresh dependencies of `mode`, with tokens from a test issuer.
 * Through `gateway`, it listens on a free port behind a real gateway on another free port.
 */
export async function startCrud(
  mode: TestMode,
  transport: Transport = 'inject',
  options: { env?: Env; cache?: Cache } = {},
): Promise<CrudHarness> {
  const issuer = await startTokenIssuer();
  // crud's variables, and the gateway's for the requests that go through it.
  const opened = await openTestDependencies(mode, { JWKS_URL: issuer.jwksUrl, ...options.env }, [crudConfig, gatewayConfig]);
  const deps = options.cache ? { ...opened, cache: options.cache } : opened;
  // No sso here: the test answers for its revocations (none), as the issuer does for its keys.
  await answerRevocationsAsSso(deps.bus);
  // It applies its own migrations, as it does when it runs alone.
  const app = await buildServiceApp(crudService, deps);
  const token = await issuer.mint(randomUUID());
  const running: RunningApp[] = [];

  let send: CrudHarness['send'];
  let sendRaw: CrudHarness['sendRaw'];
  const headersOf = (request: TestRequest) => ({ ...(request.body !== undefined ? { 'content-type': 'application/json' } : {}), ...request.headers });
  const payloadOf = (request: TestRequest) => request.rawBody ?? (request.body === undefined ? undefined : JSON.stringify(request.body));
  if (transport === 'inject') {
    const inject = (request: TestRequest) => app.inject({ method: request.method, url: request.url, headers: headersOf(request), payload: payloadOf(request) });
    const headersOfInjected = (headers: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v === undefined ? undefined : String(v)]));
    sendRaw = async (request) => {
      const response = await inject(request);
      return { status: response.statusCode, headers: headersOfInjected(response.headers), body: response.rawPayload };
    };
    send = async (request) => {
      const response = await inject(request);
      return { status: response.statusCode, headers: headersOfInjected(response.headers), text: response.body, json: parse(response.body) };
    };
  } else {
    const crud = await listenApp('crud', app, { host: '127.0.0.1', port: 0 });
    running.push(crud);
    const config = { ...deps.config, CRUD_URL: crud.url, PLATFORM_SERVICES: ['crud' as const] };
    const gateway = await listenApp('gateway', await buildGateway(config, deps.logger), { host: '127.0.0.1', port: 0 });
    running.unshift(gateway);
    sendRaw = (request) => requestBytes(new URL(request.url, gateway.url).toString(), { method: request.method, headers: headersOf(request), body: payloadOf(request) });
    send = async (request) => {
      const response = await fetch(new URL(request.url, gateway.url), { method: request.method, headers: headersOf(request), body: payloadOf(request) });
      const text = await response.text();
      return { status: response.status, headers: Object.fromEntries(response.headers), text, json: parse(text) };
    };
  }

  return {
    app,
    deps,
    issuer,
    token,
    send,
    sendRaw,
    close: async () => {
      for (const service of running) await service.close();
      if (running.length === 0) await app.close();
      await options.cache?.close();
      await opened.dispose();
      await issuer.close();
    },
  };
}

/** A product body that satisfies every rule. */
export const aProduct = (overrides: Record<string, unknown> = {}) => ({
  name: 'Banana',
  price: 1.99,
  description: 'Yellow and sweet',
  stock: 120,
  category: 'Fruits',
  perishable: true,
  ...overrides,
});

/** A post body that satisfies every rule; the slug is unique per call. */
export const aPost = (overrides: Record<string, unknown> = {}) => ({
  title: 'Hello world',
  content: 'The first post of the blog.',
  authorId: randomUUID(),
  slug: `hello-${randomUUID().slice(0, 8)}`,
  ...overrides,
});

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
