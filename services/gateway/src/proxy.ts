import proxy from '@fastify/http-proxy';
import { answeredByService, clientAddress, recordFailure, errorCodes, isUnreachable, sendProblem, varyWith, type App } from '@app/platform';
import type { BlockList } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { BalancedPool, RetryAgent, type Dispatcher, type Pool } from 'undici';
import type { EdgeRoutes, UpstreamRoute } from './edge-routes.js';
import type { Route } from './routing.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A proxy's: the route of its service that a request reaches, as that service declares it (undefined: none known). */
    upstreamRoute?: (method: string, url: string) => UpstreamRoute | undefined;
  }
}

/**
 * Answers a failed upstream call: 503 when the service cannot be reached (down, not yet
 * started), 502 when it timed out or broke the response.
 */
function upstreamError(route: Route) {
  return (proxied: unknown, { error }: { error: Error & { statusCode?: number } }) => {
    const reply = proxied as FastifyReply;
    // The edge already answered (a chunked body over the limit) and cut the upstream call short.
    if (reply.sent) return;
    const codes = errorCodes(error);
    const timedOut = error.statusCode === 504 || codes.includes('UND_ERR_HEADERS_TIMEOUT') || codes.includes('UND_ERR_BODY_TIMEOUT');
    const unreachable = isUnreachable(error);
    // The request's one line (`request failed`, at error) carries the cause.
    recordFailure(reply.request, error);
    if (unreachable) reply.header('retry-after', '1');
    sendProblem(reply.request, reply, {
      status: unreachable ? 503 : 502,
      code: unreachable ? 'GATEWAY_UPSTREAM_UNAVAILABLE' : timedOut ? 'GATEWAY_UPSTREAM_TIMEOUT' : 'GATEWAY_UPSTREAM_BAD_RESPONSE',
      messageKey: unreachable ? 'error.upstreamUnavailable' : timedOut ? 'error.upstreamTimeout' : 'error.upstreamBadResponse',
      params: { service: route.service },
    });
  };
}

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) describe one connection, never the next one: the
 * gateway's own connection handling decides them. `expect` too: Node has already answered
 * `100 Continue` to the client, and undici refuses to send it upstream (a 502 otherwise).
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect']);

/**
 * `headers` without the hop-by-hop ones: as they are when none is there (a client's request,
 * mostly), else a copy built by adding, not deleting (it runs twice per proxied request).
 */
function withoutHopByHop<Headers extends Record<string, unknown>>(headers: Headers): Headers {
  let any = false;
  for (const name of HOP_BY_HOP) any ||= headers[name] !== undefined;
  if (!any) return headers;
  const listed = typeof headers.connection === 'string' ? headers.connection.toLowerCase().split(',').map((name) => name.trim()) : undefined;
  const kept: Record<string, unknown> = {};
  for (const name in headers) {
    if (!HOP_BY_HOP.has(name) && !listed?.includes(name)) kept[name] = headers[name];
  }
  return kept as Headers;
}

export interface ProxyOptions {
  routes: Route[];
  /** What each service declares of its routes: the edge's auth and body limit for a proxied request. */
  edgeRoutes: EdgeRoutes;
  /** How long an upstream may take to send its response headers. */
  timeoutMs: number;
  /** TRUST_PROXY of the edge: the load balancers whose X-Forwarded-For the gateway believes (none by default). */
  trustedProxies: BlockList;
  /** The edge answers CORS (CORS_ORIGINS is set): an upstream's own CORS headers are dropped, its `vary` gains Origin. */
  cors: boolean;
}

/**
 * Methods proxied to a service. Not OPTIONS: the edge answers it itself, a CORS preflight in
 * its hook and anything else with its 404, as the all-in-one does; no service serves OPTIONS.
 */
const PROXIED_METHODS = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT'];

/** An upstream answer's headers as the edge sends them on: CORS is the edge's, never the upstream's. */
function edgeCorsHeaders<Headers extends Record<string, unknown>>(headers: Headers): Headers {
  const kept: Record<string, unknown> = {};
  for (const name in headers) if (!name.startsWith('access-control-')) kept[name] = headers[name];
  // The edge's CORS hook set `vary: Origin` before the proxy copies the upstream's headers over it.
  kept.vary = varyWith(headers.vary, 'Origin');
  return kept as Headers;
}

/**
 * Answers up to this size (by their Content-Length) are read whole and sent in one piece; larger
 * ones, and answers of unknown length, stream through. A cached read is a few hundred bytes:
 * piping it as a stream costs more (listeners, end-of-stream tracking, extra ticks) than the
 * copy: ~4% of the edge's CPU per proxied read, measured.
 */
const BUFFERED_BODY_BYTES = 64 * 1024;

/** What @fastify/reply-from hands `onResponse` with undici (its types say a ServerResponse). */
interface UpstreamAnswer {
  headers: Record<string, string | string[] | undefined>;
  stream: Readable & { arrayBuffer(): Promise<ArrayBuffer> };
}

/**
 * Headers of the edge's own that an upstream answer may name too: kept when that answer broke
 * and a problem goes out instead (the request id is the same on both sides of the hop).
 */
const isEdgeHeader = (name: string) => name === 'x-request-id' || name === 'vary' || name.startsWith('access-control-');

/**
 * Sends a service's answer on, its status and headers already copied: a small body as one
 * Buffer, anything else as the stream it is. A body that breaks before its end is a 502,
 * never a truncated 200: with the body read whole, nothing has gone to the client yet. The
 * request is the service's to log once its answer is on its way (answeredByService); one that
 * broke is the edge's, logged with the cause.
 */
function sendUpstreamBody(route: Route) {
  const failed = upstreamError(route);
  // reply-from's types name the HTTP/2 variants too; the edge serves HTTP/1.1.
  return (proxied: unknown, answered: unknown, raw: unknown) => {
    const request = proxied as FastifyRequest;
    const reply = answered as FastifyReply;
    const answer = raw as UpstreamAnswer;
    const length = Number(answer.headers['content-length']);
    if (request.method === 'HEAD' || !(length <= BUFFERED_BODY_BYTES)) {
      answeredByService(request);
      reply.send(answer.stream);
      return;
    }
    answer.stream
      .arrayBuffer()
      .then(
        (body) => {
          answeredByService(request);
          reply.send(Buffer.from(body));
        },
        (error: Error) => {
          // The upstream's headers described the answer that broke, not the problem sent instead.
          for (const name of Object.keys(answer.headers)) if (!isEdgeHeader(name)) reply.removeHeader(name);
          failed(reply, { error });
        },
      )
      .catch((error: unknown) => reply.log.error({ err: error }, 'sending an upstream answer failed'));
  };
}

/** The message @fastify/reply-from logs a failed upstream call with, at warn. */
const REPLY_FROM_FAILURE = 'response errored';

/** Socket errors meaning nobody listens at a replica's address (as in isUnreachable). */
const UNREACHABLE_CODES = ['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'];
const ALL_METHODS: Dispatcher.HttpMethod[] = ['GET', 'HEAD', 'OPTIONS', 'PUT', 'POST', 'PATCH', 'DELETE', 'TRACE'];

/**
 * A service's replicas behind one dispatcher: undici's BalancedPool, which also lowers the
 * weight of a replica that fails, inside a RetryAgent that sends a call nobody answered at one
 * replica to the next at once. Only connection failures are retried: the connection never
 * opened, so no byte of the request (nor of its streamed body, which undici checks is
 * undisturbed) was sent, and any method may go again. An answer, even a 5xx, is final.
 */
function replicasDispatcher(urls: string[], options: Pool.Options): Dispatcher {
  return new RetryAgent(new BalancedPool(urls, options), {
    maxRetries: 2 * urls.length,
    minTimeout: 0,
    timeoutFactor: 1,
    methods: ALL_METHODS,
    statusCodes: [],
    errorCodes: UNREACHABLE_CODES,
  });
}

/**
 * Registers one proxy per routing-table row; bodies stream through unparsed. A service with
 * several replicas gets one balanced, retrying dispatcher (replicasDispatcher), shared by its
 * prefixes (sso has two).
 */
export async function registerProxies(app: App, options: ProxyOptions): Promise<void> {
  // reply-from logs every failed upstream call at warn ("response errored"), beside the
  // request's own line, which says the same at error with the cause (recordFailure). Proxied
  // requests' loggers drop that one warn, so a failure is one line; every other warn stays.
  app.setChildLoggerFactory((logger, bindings, childOptions) => {
    const child = logger.child(bindings, childOptions);
    const warn = child.warn.bind(child) as (...args: unknown[]) => void;
    child.warn = ((...args: unknown[]) => {
      if (args[1] !== REPLY_FROM_FAILURE) warn(...args);
    }) as typeof child.warn;
    return child;
  });
  const poolOptions: Pool.Options = { connections: 128, pipelining: 1, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs };
  const dispatchers = new Map<string, Dispatcher>();
  app.addHook('onClose', async () => {
    await Promise.all([...dispatchers.values()].map((dispatcher) => dispatcher.close()));
  });
  for (const route of options.routes) {
    const upstreamRoute = (method: string, url: string) => options.edgeRoutes.find(route.service, method, url);
    let dispatcher = dispatchers.get(route.service);
    if (route.urls.length > 1 && !dispatcher) dispatchers.set(route.service, (dispatcher = replicasDispatcher(route.urls, poolOptions)));
    await app.register(proxy, {
      upstream: route.urls[0]!,
      prefix: route.prefix,
      rewritePrefix: route.prefix,
      httpMethods: PROXIED_METHODS,
      // Fastify already logs each request and its answer; two more lines per hop only cost.
      disableRequestLogging: true,
      // The service compressed its answer for the client's Accept-Encoding (or chose not to,
      // a body under 1 KB): it passes through as is, Content-Encoding and Vary included. The
      // edge lets a request through without a token as the service's route declares.
      config: { compress: false, upstreamRoute, forwardedAuth: (method: string, url: string) => upstreamRoute(method, url)?.auth },
      undici: dispatcher ?? poolOptions,
      replyOptions: {
        rewriteRequestHeaders: (request, headers) => {
          // `headers` is reply-from's own copy of the client's: adding to it touches nothing else.
          const kept: Record<string, unknown> = withoutHopByHop(headers);
          kept['x-request-id'] = String(request.id);
          // One entry: the client as the edge rule resolves it. Whatever a client wrote there
          // itself is dropped, so a service that trusts only the gateway cannot be told
          // another address.
          kept['x-forwarded-for'] = clientAddress(options.trustedProxies, request.socket.remoteAddress, request.headers['x-forwarded-for']);
          kept['x-forwarded-proto'] = request.protocol;
          return kept as typeof headers;
        },
        // Without this an upstream's `connection: keep-alive` would override a client's
        // `Connection: close` (or HTTP/1.0) and hold its socket until the keep-alive timeout.
        rewriteHeaders: (headers) => (options.cors ? edgeCorsHeaders(withoutHopByHop(headers)) : withoutHopByHop(headers)),
        onResponse: sendUpstreamBody(route),
        onError: upstreamError(route),
      },
    });
  }
}
