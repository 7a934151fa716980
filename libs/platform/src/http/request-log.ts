import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyTypeProvider } from 'fastify';

/**
 * Paths nobody reads a line for: Kubernetes probes every few seconds per pod, each process's
 * own (`/health/...`) and the public ones under the API prefix (`/api/v1/...`). Matched on the
 * path (not the route template) so an edge, whose proxied routes are wildcards, skips the
 * public probes too.
 */
const QUIET_PATH = /^(?:\/api\/v\d+)?\/health\/(?:liveness|readiness)$/;

/** Longest path a line keeps for a request that matched no route: anyone can send any URL. */
const UNMATCHED_PATH_MAX = 100;

/** Requests a service behind this process answered: that service writes their line. */
const answeredBehind = new WeakSet<object>();

/**
 * Says a service behind this edge answered `request` (the edge is sending the service's
 * answer on): the service has logged it under the same request id (X-Request-Id), so the edge
 * writes no second line. One line per request across the platform, as in the all-in-one; what
 * the edge answers itself (a 401, a 413, an upstream that failed or broke off) it logs.
 */
export function answeredByService(request: object): void {
  answeredBehind.add(request);
}

/**
 * The error each failing request failed with, kept until its line is written. A WeakMap, not a
 * request decoration: only failing requests pay for it, and nothing outlives the request.
 */
const failures = new WeakMap<object, Error>();

/**
 * Gives the line of `request` (`request failed`, for the 5xx it is answered with) the error
 * that caused it, where that error never reached Fastify's error handler: an edge answers
 * a failed upstream call itself. The line is then the request's only one, cause included.
 */
export function recordFailure(request: object, error: Error): void {
  failures.set(request, error);
}

/** The path without its query string (which may carry a token) or one trailing slash. */
export function urlPath(url: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/**
 * Fastify's `logController` with its per-request lines ("incoming request", "request
 * completed", "Route ... not found") off: `registerRequestLog` writes the one line instead.
 */
export function requestLogController(): LogController {
  return new LogController({ disableRequestLogging: true });
}

/**
 * One line per answered request, written when the response is finished: `info` with
 * `method`, `route` (the template, so lines group by endpoint), `status` and `ms`; the
 * request id (`reqId`) and `service` come from the request's logger. A 5xx is the same line
 * at `error` with the error that caused it, so a failing request is still one line. Nothing
 * of the request's headers, cookies, query string or body is written.
 *
 * Replaces Fastify's own "incoming request" / "request completed" pair, which the app turns
 * off with `requestLogController()`. Hooks go on the instance given, so call it on the root
 * before any route is registered.
 */
export function registerRequestLog<Log extends FastifyBaseLogger, Provider extends FastifyTypeProvider>(
  app: FastifyInstance<Server, IncomingMessage, ServerResponse, Log, Provider>,
): void {
  app.addHook('onError', (request, _reply, error, done) => {
    failures.set(request, error);
    done();
  });

  // Callback style, not async: no promise per request.
  app.addHook('onResponse', (request, reply, done) => {
    logResponse(request, reply);
    done();
  });
}

function logResponse(request: FastifyRequest, reply: FastifyReply): void {
  const url = request.url;
  if (answeredBehind.has(request) || QUIET_PATH.test(urlPath(url))) return;
  const route = request.routeOptions.url;
  const status = reply.statusCode;
  const ms = Math.round(reply.elapsedTime * 10) / 10;
  if (status < 400) {
    request.log.info({ method: request.method, route, status, ms }, 'request');
    return;
  }
  const error = failures.get(request);
  // A request that matched no route has no template: its path, cut short, says what was asked.
  const path = route === undefined ? urlPath(url).slice(0, UNMATCHED_PATH_MAX) : undefined;
  if (status >= 500) {
    request.log.error({ method: request.method, route, path, status, ms, err: error }, 'request failed');
    return;
  }
  // A 4xx is the client's doing: the error's code (or kind) says why, never its message,
  // which can quote what the client sent (a JSON parse error quotes the body).
  const code = error && ((error as { code?: unknown }).code ?? error.name);
  request.log.info({ method: request.method, route, path, status, ms, code }, 'request');
}
