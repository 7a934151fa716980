import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyTypeProvider } from 'fastify';
import { pino, type Bindings, type ChildLoggerOptions, type LevelWithSilentOrString, type LogFn } from 'pino';

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

const LOG_METHODS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * A request's logger (`request.log`), made only when something logs through it. Fastify makes
 * a child logger per request to bind its request id, and pino's `child()` serializes the
 * bindings there and then: about 1.4 % of a cached read's CPU (bench profile), for a logger
 * most requests never use, since their one line is written by `writeRequestLine` from the
 * parent. Whatever logs through it (an error, a service's own line) gets the real child,
 * made once, with the same bindings and options Fastify would have given it.
 */
class RequestLogger implements FastifyBaseLogger {
  #made: FastifyBaseLogger | undefined;
  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;
  declare silent: LogFn;

  constructor(
    readonly parent: FastifyBaseLogger,
    readonly bindings: Bindings,
    readonly options: ChildLoggerOptions,
  ) {}

  /** Whether the real child exists: then its lines, not this object's fields, are the truth. */
  get made(): boolean {
    return this.#made !== undefined;
  }

  logger(): FastifyBaseLogger {
    return (this.#made ??= this.parent.child(this.bindings, this.options));
  }

  get level(): LevelWithSilentOrString {
    return this.#made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: LevelWithSilentOrString) {
    this.logger().level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options);
  }
}
for (const method of LOG_METHODS) {
  Object.defineProperty(RequestLogger.prototype, method, {
    value: function (this: RequestLogger, ...args: unknown[]) {
      (this.logger()[method] as (...args: unknown[]) => void)(...args);
    },
  });
}

/** Fastify's `childLoggerFactory`: each request's logger is a RequestLogger, made on first use. */
export function lazyRequestLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new RequestLogger(parent, bindings, options);
}

const { chindingsSym, endSym, formattersSym, hooksSym, levelValSym, lsCacheSym, messageKeySym, mixinSym, needsMetadataGsym, nestedKeySym, streamSym, timeSym } = pino.symbols;
/** In pino's symbols since 8.14, not in its types. */
const msgPrefixSym = (pino.symbols as Record<string, symbol>).msgPrefixSym!;

/** What a pino logger writes a line with; read off it once. */
interface LineParts {
  /** `{"level":30`: the start of an info line. */
  start: string;
  /** The logger's timestamp function: `,"time":"..."`. */
  time: () => string;
  /** The logger itself, whose bindings (`,"service":"shop"`) are read per line. */
  logger: Record<symbol, unknown>;
  end: string;
  stream: { write(line: string): void };
}

const partsOf = new WeakMap<object, LineParts | null>();

/**
 * The parts of `logger`'s lines, or null where a line could come out different from what
 * pino's own `info` would write: a mixin, a log formatter, a stream hook, a nested key, a
 * message prefix, another message key, a stream that wants each line's level (multistream).
 */
function lineParts(logger: FastifyBaseLogger): LineParts | null {
  let parts = partsOf.get(logger);
  if (parts === undefined) {
    parts = readLineParts(logger as unknown as Record<symbol, unknown>);
    partsOf.set(logger, parts);
  }
  return parts;
}

function readLineParts(raw: Record<symbol, unknown>): LineParts | null {
  const start = (raw[lsCacheSym] as Record<number, string> | undefined)?.[30];
  const stream = raw[streamSym] as (LineParts['stream'] & Record<symbol, unknown>) | undefined;
  const formatters = raw[formattersSym] as { log?: unknown } | undefined;
  const hooks = raw[hooksSym] as { streamWrite?: unknown } | undefined;
  const plain =
    !stream?.[needsMetadataGsym] &&
    !raw[mixinSym] &&
    !raw[nestedKeySym] &&
    !raw[msgPrefixSym] &&
    formatters?.log === undefined &&
    hooks?.streamWrite === undefined &&
    raw[messageKeySym] === 'msg';
  if (start === undefined || stream === undefined || !plain) return null;
  return { start, time: raw[timeSym] as () => string, logger: raw, end: raw[endSym] as string, stream };
}

/** `value` as a JSON string; request ids and route templates seldom need escaping. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const jsonString = (value: string) => (PLAIN.test(value) ? `"${value}"` : JSON.stringify(value));

/**
 * Writes the info line of a request answered under 400 straight to its logger's stream, the
 * same bytes pino's `info` would write, where that is sure: the request's logger was never
 * made (so nothing changed its level or bindings) and its parent has a plain line format.
 * Pino's generic path (each field looked up among serializers and redactions, then
 * stringified) was ~4.5 % of a cached read's CPU; this is a string concatenation. Answers
 * false where it wrote nothing, and the caller logs through pino.
 */
function writeRequestLine(request: FastifyRequest, route: string, status: number, ms: number): boolean {
  const log = request.log;
  if (!(log instanceof RequestLogger) || log.made || log.options.level !== undefined || log.options.serializers !== undefined) return false;
  const parts = lineParts(log.parent);
  if (parts === null) return false;
  if ((log.parent as unknown as Record<symbol, number>)[levelValSym]! > 30) return true;
  const reqId = log.bindings.reqId;
  if (typeof reqId !== 'string' || Object.keys(log.bindings).length !== 1) return false;
  parts.stream.write(
    `${parts.start}${parts.time()}${parts.logger[chindingsSym] as string},"reqId":${jsonString(reqId)},"method":${jsonString(request.method)},"route":${jsonString(route)},"status":${status},"ms":${ms},"msg":"request"${parts.end}`,
  );
  return true;
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
    if (route === undefined || !writeRequestLine(request, route, status, ms)) request.log.info({ method: request.method, route, status, ms }, 'request');
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
