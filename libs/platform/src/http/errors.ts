import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { $ZodIssue } from 'zod/v4/core';
import { isInvalidTextError } from '../db/invalid-text.js';
import { localizeIssue, negotiateLocale, translate, type Locale, type MessageParams } from './i18n.js';
import './messages.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

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
    .header('vary', 'Accept-Language')
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
