import { UpstreamError } from '@app/contracts';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { $ZodIssue } from 'zod/v4/core';
import { isInvalidTextError } from '../db/invalid-text.js';
import { localizeIssue, negotiateLocale, translate, type Locale, type MessageParams } from './i18n.js';
import './messages.js';
import { varyWith } from './cors.js';

export const PROBLEM_MEDIA_TYPE = 'application/problem+json';
export const PROBLEM_CONTENT_TYPE = `${PROBLEM_MEDIA_TYPE}; charset=utf-8`;

/**
 * An error a service raises on purpose: a stable machine code (`CRUD_NOT_FOUND`), the HTTP
 * status, and a message key the error handler localizes into the problem's `detail`.
 */
export class AppError extends Error {
  constructor(
    readonly code: string,
    readonly statusCode: number,
    readonly messageKey: string,
    readonly params: MessageParams = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(translate('en', messageKey, params));
    this.name = 'AppError';
  }
}

/** RFC 9457 problem details, as every service answers an error. */
export const problemSchema = z
  .object({
    type: z.string().describe('URI reference naming the kind of problem'),
    title: z.string().describe('Short, localized summary of the kind of problem'),
    status: z.number().int(),
    detail: z.string().describe('Localized explanation of this occurrence'),
    instance: z.string().describe('The request path this problem occurred on'),
    code: z.string().describe('Stable machine-readable error code'),
    requestId: z.string(),
    errors: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe('One entry per invalid input, for 400 validation problems'),
  })
  .meta({ id: 'Problem' });

export type Problem = z.infer<typeof problemSchema>;

export interface ProblemInput {
  status: number;
  code: string;
  messageKey: string;
  params?: MessageParams;
  errors?: { path: string; message: string }[];
}

/** Kebab-cased code under a URN, so `type` is stable and never needs to resolve. */
const problemType = (code: string) => `urn:problem:${code.toLowerCase().replace(/_/g, '-')}`;

export function buildProblem(request: FastifyRequest, locale: Locale, input: ProblemInput): Problem {
  return {
    type: problemType(input.code),
    title: translate(locale, `status.${input.status}`),
    status: input.status,
    detail: translate(locale, input.messageKey, input.params),
    instance: (request.url ?? '/').split('?')[0] ?? '/',
    code: input.code,
    requestId: String(request.id),
    ...(input.errors ? { errors: input.errors } : {}),
  };
}

/** Sends a problem; the body is serialized here so no route response schema reshapes it. */
export function sendProblem(request: FastifyRequest, reply: FastifyReply, input: ProblemInput): FastifyReply {
  const locale = negotiateLocale(request.headers['accept-language']);
  return reply
    .code(input.status)
    .header('content-type', PROBLEM_CONTENT_TYPE)
    .header('content-language', locale)
    .header('vary', varyWith(reply.getHeader('vary'), 'Accept-Language'))
    .send(JSON.stringify(buildProblem(request, locale, input)));
}

/** Thrown by the validator compiler; carries zod's raw issues so they can be localized. */
export class RequestValidationError extends Error {
  readonly statusCode = 400;
  readonly code = 'FST_ERR_VALIDATION';
  validationContext?: string;
  constructor(readonly issues: $ZodIssue[]) {
    super('request validation failed');
  }
}

function issuePath(context: string | undefined, issue: $ZodIssue): string {
  const base = context === 'querystring' ? 'query' : (context ?? 'body');
  const keys = issue.code === 'unrecognized_keys' ? [] : issue.path;
  return [base, ...keys.map(String)].join('.');
}

/** Fastify framework errors we answer with a specific message instead of a generic one. */
const frameworkMessages: Record<string, (error: FastifyError, request: FastifyRequest) => ProblemInput> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (_e, request) => ({
    status: 415,
    code: 'PLATFORM_UNSUPPORTED_MEDIA_TYPE',
    messageKey: 'error.unsupportedMediaType',
    params: { type: String(request.headers['content-type'] ?? '').slice(0, 100) },
  }),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => ({ status: 400, code: 'PLATFORM_BAD_REQUEST', messageKey: 'error.badRequest' }),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => ({ status: 400, code: 'PLATFORM_EMPTY_BODY', messageKey: 'error.emptyBody' }),
  FST_ERR_CTP_BODY_TOO_LARGE: (_e, request) => ({
    status: 413,
    code: 'PLATFORM_BODY_TOO_LARGE',
    messageKey: 'error.bodyTooLarge',
    params: { limit: request.routeOptions.bodyLimit ?? 0 },
  }),
  FST_ERR_CTP_INVALID_JSON_BODY: () => ({ status: 400, code: 'PLATFORM_INVALID_JSON', messageKey: 'error.invalidJson' }),
  FST_ERR_BAD_URL: () => ({ status: 400, code: 'PLATFORM_BAD_URL', messageKey: 'error.badUrl' }),
};

/** Seconds a client is told to wait after a dependency failed; the pools retry well within it. */
export const DEPENDENCY_RETRY_AFTER_SECONDS = 5;

/** Socket errors: the peer refused, reset, vanished or could not be found. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNABORTED',
  // undici (fetch, the HTTP clients) and jose's JWKS fetch giving up on a peer.
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_SOCKET',
  'ERR_JWKS_TIMEOUT',
]);
/**
 * Prisma's codes for a database it cannot use now: unreachable (P1001), timed out (P1002,
 * P1008), connection closed (P1017), no connection free in time (P2024), a transaction that
 * could not start or was ended under it (P2028), too many connections (P2037).
 */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028', 'P2037']);
/** Its driver adapter's kinds for the same. */
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
/**
 * SQLSTATEs: connection exceptions (class 08), the server shutting down or starting
 * (57P01-57P03), too many connections (53300).
 */
const isUnavailableSqlState = (code: string) => /^08[0-9A-Z]{3}$/.test(code) || ['57P01', '57P02', '57P03', '53300'].includes(code);
/** What node-postgres and Prisma say, without a code, about a connection that broke or never came. */
const UNAVAILABLE_MESSAGE =
  /connection terminated|timeout exceeded when trying to connect|query read timeout|connection ended|client has encountered a connection error|cannot use a pool after calling end|can't reach database server|server has closed the connection|timed out fetching a new connection|unable to start a transaction in the given time|connection (?:is )?closed/i;

interface ErrorLink {
  code?: unknown;
  originalCode?: unknown;
  kind?: unknown;
  message?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: unknown };
}

const isUnavailableCode = (code: unknown) =>
  typeof code === 'string' && (SOCKET_CODES.has(code) || PRISMA_CODES.has(code) || isUnavailableSqlState(code));

/**
 * Whether an error says a dependency (database, peer service) cannot answer now, which is no
 * fault of the request: 503 with `Retry-After`, never 500. Walks the cause chain, as drivers
 * and Prisma wrap the socket's error. Prisma 7 reports a server's error that it has no code of
 * its own for as P2039 (P2010 for raw queries) and keeps the driver adapter's error in
 * `meta.driverAdapterError`, whose `cause` holds the SQLSTATE (`{ kind: 'postgres', code,
 * originalCode }`): a server starting up (57P03) arrives so.
 */
export function isDependencyUnavailable(error: unknown): boolean {
  let current = error as ErrorLink | undefined;
  for (let depth = 0; current && typeof current === 'object' && depth < 8; depth++) {
    if (current instanceof UpstreamError) return true;
    const { code, originalCode, kind, message } = current;
    if (isUnavailableCode(code) || isUnavailableCode(originalCode)) return true;
    if (typeof kind === 'string' && ADAPTER_KINDS.has(kind)) return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message)) return true;
    current = (current.cause ?? current.meta?.driverAdapterError) as ErrorLink | undefined;
  }
  return false;
}

/** Turns any error into a problem+json answer; a 5xx never shows its cause to the client. */
export function handleError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof AppError) {
    reply.headers(error.headers);
    return sendProblem(request, reply, {
      status: error.statusCode,
      code: error.code,
      messageKey: error.messageKey,
      params: error.params,
    });
  }
  if (error instanceof RequestValidationError) {
    const locale = negotiateLocale(request.headers['accept-language']);
    return sendProblem(request, reply, {
      status: 400,
      code: 'PLATFORM_VALIDATION_FAILED',
      messageKey: 'error.validation',
      errors: error.issues.map((issue) => ({
        path: issuePath(error.validationContext, issue),
        message: localizeIssue(locale, issue),
      })),
    });
  }
  const fastifyError = error as FastifyError;
  const known = fastifyError.code ? frameworkMessages[fastifyError.code] : undefined;
  if (known) return sendProblem(request, reply, known(fastifyError, request));
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) {
    return sendProblem(request, reply, { status: 400, code: 'PLATFORM_INVALID_JSON', messageKey: 'error.invalidJson' });
  }
  if (isInvalidTextError(error)) {
    return sendProblem(request, reply, { status: 400, code: 'PLATFORM_FORBIDDEN_CHARACTER', messageKey: 'error.invalidText' });
  }
  if (isDependencyUnavailable(error)) {
    // Not logged here either: the request's log line carries the cause.
    reply.header('retry-after', String(DEPENDENCY_RETRY_AFTER_SECONDS));
    return sendProblem(request, reply, { status: 503, code: 'PLATFORM_DEPENDENCY_UNAVAILABLE', messageKey: 'error.dependencyUnavailable' });
  }
  const status = fastifyError.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return sendProblem(request, reply, { status, code: 'PLATFORM_BAD_REQUEST', messageKey: 'error.badRequest' });
  }
  // Not logged here: the request's one log line (request-log.ts) carries this error.
  return sendProblem(request, reply, {
    status: 500,
    code: 'PLATFORM_INTERNAL',
    messageKey: 'error.internal',
    params: { requestId: String(request.id) },
  });
}
