import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import compress from '@fastify/compress';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from '../logger.js';
import { handleError, sendProblem } from './errors.js';
import { collectEdgeRoutes, documentRoute, EDGE_ROUTES, finishDocument } from './openapi.js';
import { clientErrorResponder, DEFAULT_HTTP_LIMITS, registerInputGuards, type HttpLimits } from './input-guards.js';
import { registerCors } from './cors.js';
import { lazyRequestLogger, registerRequestLog, requestLogController } from './request-log.js';
import { recordRequestDurations } from '../metrics/metrics.js';
import { validatorCompiler } from './validation.js';
import { invalidToken } from '../auth/auth.js';
import { registerRouteAuth, type RouteAuthOptions } from '../auth/route-auth.js';

/** A Fastify instance whose routes are typed by their zod schemas. */
export type App = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, ZodTypeProvider>;

export interface AppOptions {
  /** Service name: the `service` field of every log line and the title of its OpenAPI document. */
  name: string;
  version: string;
  logger: Logger;
  /** Largest request body accepted, in bytes. */
  bodyLimit: number;
  /** The other limits on a request (URL, headers, JSON depth, time); DEFAULT_HTTP_LIMITS when absent. */
  limits?: Partial<Omit<HttpLimits, 'bodyLimit'>>;
  description?: string;
  /** Title of its OpenAPI document; the name by default. */
  title?: string;
  /** The tags its routes use, each with what it groups, for its OpenAPI document. */
  tags?: readonly ApiTag[];
  /**
   * How routes' `config.auth` is enforced: the process's verifier, and whether this app is
   * also the edge. Without it every route that is not `public` answers 401.
   */
  auth?: RouteAuthOptions;
  /** Origins allowed to call it from a browser (CORS_ORIGINS); the edge only. None: no CORS headers. */
  corsOrigins?: readonly string[];
  /** Time every request into the process's metrics (METRICS=on, served on MANAGEMENT_PORT); off when absent. */
  metrics?: boolean;
}

/** An OpenAPI tag: the name routes list in `schema.tags`, and what the group of routes is. */
export interface ApiTag {
  name: string;
  description: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `false`: the answer leaves as the handler made it, never compressed here (an edge's
     * proxies: the service behind already compressed it, or chose not to).
     */
    compress?: false;
  }
}

/**
 * Answers smaller than this (bytes) are sent uncompressed: below about 1 KB brotli and gzip
 * save a few hundred bytes at most, less than the CPU and latency they cost.
 */
export const COMPRESS_THRESHOLD_BYTES = 1024;

/** Path every service serves its own OpenAPI document on; the edge merges them at /docs. */
export const OPENAPI_PATH = '/openapi.json';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

/**
 * The compilers of every route's schemas, which are all zod. Fastify types these factories for
 * its JSON Schema compilers (ajv's and fast-json-stringify's), hence the cast.
 */
const ZOD_COMPILERS = { buildValidator: () => validatorCompiler, buildSerializer: () => serializerCompiler } as unknown as CompilersFactory;

/** A caller's request id is kept only if it is short and plain, so it is safe in logs and headers. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;

function requestIdFor(request: IncomingMessage): string {
  const header = request.headers['x-request-id'];
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
}

/**
 * Compresses answers of COMPRESS_THRESHOLD_BYTES or more with brotli (quality 4, the plugin's
 * default: 11 would cost ten times the CPU for a few percent) or gzip, as the client's
 * Accept-Encoding prefers, with `Vary: Accept-Encoding`. Bodies without content (204, 304)
 * are left alone. Request bodies are never decompressed: a compressed upload would slip past
 * the body limit, which counts the bytes received.
 */
async function registerCompression(app: App): Promise<void> {
  // Runs before the plugin's own onRoute hook, which reads route.compress.
  app.addHook('onRoute', (route) => {
    if (route.config?.compress === false) route.compress = false;
  });
  await app.register(compress, { encodings: ['br', 'gzip'], threshold: COMPRESS_THRESHOLD_BYTES, globalDecompression: false });
}

/**
 * The Fastify instance every service is built on: zod validation with localized
 * problem+json errors, request ids, hardened body parsing, and an OpenAPI 3.1 document.
 */
export async function createApp(options: AppOptions): Promise<App> {
  const given = Object.entries(options.limits ?? {}).filter(([, value]) => value !== undefined);
  const limits: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...Object.fromEntries(given), bodyLimit: options.bodyLimit };
  const app = Fastify({
    loggerInstance: options.logger.child({ service: options.name }),
    genReqId: requestIdFor,
    requestIdHeader: false,
    logController: requestLogController(),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: limits.bodyLimit,
    http: {
      maxHeaderSize: limits.maxHeaderSize,
      // Node enforces the request timeout only while the headers timeout is no longer, and
      // checks both every connectionsCheckingInterval (30 s by default, far too coarse).
      headersTimeout: Math.min(60_000, limits.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(1_000, limits.requestTimeoutMs),
    },
    requestTimeout: limits.requestTimeoutMs,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors: (error, request, reply) => handleError(error, request, reply),
    clientErrorHandler: clientErrorResponder(limits),
    // Every schema is zod: these compilers from the start, so Fastify never loads its default
    // ones (ajv and fast-json-stringify), which cost ~200 ms of start-up CPU and their memory.
    schemaController: { compilersFactory: ZOD_COMPILERS },
  }).withTypeProvider<ZodTypeProvider>();

  // Hooks on every request are callback style, not async: no promise and no microtask each.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  registerRequestLog(app);
  const typed = app as unknown as App;
  if (options.metrics) recordRequestDurations(typed);
  registerInputGuards(typed, limits);
  // Before auth: a preflight carries no token and is answered in its onRequest hook.
  if (options.corsOrigins) await registerCors(typed, options.corsOrigins);
  // Early, so it runs before every other hook and applies to every route declared after it.
  registerRouteAuth(typed, options.auth ?? { verifier: { verify: () => Promise.reject(invalidToken()) }, edge: false });
  await registerCompression(typed);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, {
      status: 404,
      code: 'PLATFORM_ROUTE_NOT_FOUND',
      messageKey: 'error.routeNotFound',
      params: { method: request.method, path: (request.url.split('?')[0] ?? '').slice(0, 200) },
    }),
  );
  // close() only drops connections idle at that moment; one busy then would be kept alive
  // after its response and hold the close open. Responses sent while closing end theirs.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  const edgeRoutes = collectEdgeRoutes(typed);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: options.title ?? options.name, version: options.version, description: options.description },
      tags: options.tags?.map((tag) => ({ ...tag })),
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      },
    },
    transform: documentRoute,
    transformObject: finishDocument,
  });
  // Read by its peers (the edge takes its EDGE_ROUTES from it). At the edge it is nobody's
  // to read anonymously: the platform's API document is /docs.
  const documentAuth = options.auth?.edge ? 'authenticated' : 'public';
  app.get(OPENAPI_PATH, { config: { auth: documentAuth }, schema: { hide: true } }, async () => ({ ...app.swagger(), [EDGE_ROUTES]: edgeRoutes() }));

  return typed;
}
