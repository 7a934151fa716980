import { OAUTH_BODY_TOO_LARGE } from '@app/contracts';
import type { App } from '@app/platform';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { BlockList } from 'node:net';
import { z } from 'zod';
import { bearerToken, clientAddress, isDependencyUnavailable, type TokenVerifier } from '@app/platform';
import { insufficientRole, invalidClient, invalidRequest, OAuthError, serverError, upstreamUnavailable } from './errors.js';
import { introspectionRequestSchema, introspectionResponseSchema, oauthErrorSchema, revokeRequestSchema, tokenRequestSchema, tokenResponseSchema } from './schemas.js';
import type { GrantContext, TokenService } from './service.js';

export const TOKEN_PATH = '/api/v1/sso/token';
export const REVOKE_PATH = '/api/v1/sso/revoke';
export const INTROSPECT_PATH = '/api/v1/sso/introspect';

/**
 * The role of a resource server (RFC 7662 §4): only callers whose identity holds it may
 * introspect. An admin gives it (PUT /api/v1/identity/{id}) to the identity whose API key or
 * token the resource server calls with; no other role, `admin` included, implies it.
 */
export const INTROSPECT_ROLE = 'introspect';

const FORM = 'application/x-www-form-urlencoded';

/**
 * Token, revoke and introspection requests are a few short parameters; a larger body (form or
 * JSON) is not one. The gateway refuses a larger one itself, from this route declaration.
 */
const OAUTH_FORM_BODY_LIMIT = 16_384;

/** Token responses and errors carry credentials or hints about them: never stored by a cache (RFC 6749 §5.1). */
const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store').header('pragma', 'no-cache');

function sendOAuthError(reply: FastifyReply, error: OAuthError): FastifyReply {
  return noStore(reply).code(error.statusCode).headers(error.headers).type('application/json; charset=utf-8').send(error.body);
}

/**
 * Anything that goes wrong before the handler (a malformed form, invalid JSON, an unknown
 * content type) is still answered as OAuth clients expect: `invalid_request`. A dependency
 * that cannot answer (the database down or starting up, a pool with no connection in time) is
 * 503 `temporarily_unavailable` with `Retry-After`; only a fault of ours is 500 `server_error`.
 */
function oauthErrorHandler(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof OAuthError) return sendOAuthError(reply, error);
  // Not logged here: the request's one log line (request-log.ts) carries the cause.
  if (isDependencyUnavailable(error)) return sendOAuthError(reply, upstreamUnavailable());
  const status = (error as FastifyError).statusCode ?? 500;
  if (status === 413) return sendOAuthError(reply, new OAuthError(OAUTH_BODY_TOO_LARGE.error, OAUTH_BODY_TOO_LARGE.error_description, 413));
  if (status >= 400 && status < 500) return sendOAuthError(reply, invalidRequest('The request body must be a form (application/x-www-form-urlencoded) or a JSON object.'));
  request.log.error({ err: error }, 'token request failed');
  return sendOAuthError(reply, serverError());
}

/** RFC 6749 §2.3.1: `Basic base64(urlencoded(client_id) ":" urlencoded(client_secret))`. */
export function parseBasicAuthorization(header: string | undefined): GrantContext['basic'] | 'malformed' | undefined {
  if (!header) return undefined;
  const match = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(header.trim());
  if (!match) return /^Basic\b/i.test(header.trim()) ? 'malformed' : undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return 'malformed';
  try {
    const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, ' '));
    return { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    return 'malformed';
  }
}

/** A JSON object or a form with each parameter at most once (RFC 6749 §3.2). */
function parametersOf(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidRequest('The request body must be a form (application/x-www-form-urlencoded) or a JSON object.');
  }
  return body as Record<string, unknown>;
}

export interface TokenRoutesOptions {
  tokens: TokenService;
  /** The process's one verifier: introspection answers exactly what every route of the platform would. */
  verifier: TokenVerifier;
  trustedProxies: BlockList;
}

export async function tokenRoutes(app: App, options: TokenRoutesOptions): Promise<void> {
  app.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: OAUTH_FORM_BODY_LIMIT }, (_request, body, done) => {
    const parameters: Record<string, string> = {};
    for (const [name, value] of new URLSearchParams(body as string)) {
      if (Object.hasOwn(parameters, name)) {
        done(invalidRequest(`Parameter ${name.slice(0, 64)} is repeated; send each parameter once.`), undefined);
        return;
      }
      parameters[name] = value;
    }
    done(null, parameters);
  });
  app.setErrorHandler(oauthErrorHandler);

  const grantContext = (request: FastifyRequest): GrantContext => {
    const basic = parseBasicAuthorization(request.headers.authorization);
    if (basic === 'malformed') throw invalidClient();
    return { clientAddress: clientAddress(options.trustedProxies, request.socket.remoteAddress, request.headers['x-forwarded-for']), basic };
  };

  /**
   * Who may introspect (RFC 7662 §2.1 and §4): a caller that authenticates, with an API key (as
   * the token endpoint accepts it) or a bearer token, and whose identity holds INTROSPECT_ROLE.
   * No caller or a bad one gets 401 invalid_client; an authenticated one without the role 403.
   * Either way before the token is looked at, so the answer says nothing about it.
   */
  const authorizeIntrospection = async (request: FastifyRequest, body: Record<string, unknown>) => {
    const bearer = bearerToken(request);
    let roles: readonly string[];
    if (bearer) {
      const principal = await options.verifier.verify(bearer).catch(() => undefined);
      if (!principal) throw invalidClient();
      roles = principal.roles;
    } else {
      const { client_id, client_secret } = body;
      if ((client_id !== undefined && typeof client_id !== 'string') || (client_secret !== undefined && typeof client_secret !== 'string')) {
        throw invalidRequest('Missing or invalid parameter: client_id, client_secret.');
      }
      roles = (await options.tokens.authenticateClient({ client_id, client_secret }, grantContext(request))).roles;
    }
    if (!roles.includes(INTROSPECT_ROLE)) throw insufficientRole(INTROSPECT_ROLE);
  };

  const consumes = [FORM, 'application/json'];
  // 413 and 500 come from oauthErrorHandler: a body over the limit, a fault of ours; both RFC 6749-shaped.
  const errors = { 400: oauthErrorSchema, 401: oauthErrorSchema, 413: oauthErrorSchema, 429: oauthErrorSchema, 500: oauthErrorSchema, 503: oauthErrorSchema };
  const introspectionErrors = { ...errors, 403: oauthErrorSchema };
  // The throttle's 429 and an unavailable dependency's 503 say when to come back (errors.ts).
  const responseHeaders = { 429: ['Retry-After'], 503: ['Retry-After'] } as const;

  app.post(
    TOKEN_PATH,
    {
      config: { auth: 'public' },
      bodyLimit: OAUTH_FORM_BODY_LIMIT,
      attachValidation: true,
      schema: {
        tags: ['SSO'],
        operationId: 'issueToken',
        summary: 'Issue tokens (OAuth 2 token endpoint)',
        description:
          'RFC 6749 token endpoint, form-encoded or JSON. `password`: username (email) and password. ' +
          '`refresh_token`: a refresh token, single use, rotated. `client_credentials`: an API key as ' +
          '`client_secret` in the body, or with HTTP Basic (`client_id` the credential or identity id, ' +
          'form-urlencoded, then base64), giving a token with exactly its identity\'s roles and `client_id` ' +
          'the credential id. Errors follow RFC 6749 §5.2.',
        consumes,
        body: tokenRequestSchema,
        response: { 200: tokenResponseSchema, ...errors },
        responseHeaders,
      },
    },
    async (request, reply) => {
      const tokens = await options.tokens.grant(parametersOf(request.body), grantContext(request));
      return noStore(reply).send(tokens);
    },
  );

  app.post(
    REVOKE_PATH,
    {
      config: { auth: 'public' },
      bodyLimit: OAUTH_FORM_BODY_LIMIT,
      attachValidation: true,
      schema: {
        tags: ['SSO'],
        operationId: 'revokeToken',
        summary: 'Revoke a sign-in by its refresh or access token (RFC 7009)',
        description:
          'Ends the sign-in the token belongs to: every refresh token rotated from it and every access ' +
          'token carrying its `sid`, refused everywhere within a second. A token issued to a registered ' +
          'client is revoked only when that client asks (RFC 7009 §2.1): a public client sends its ' +
          '`client_id`, a confidential one authenticates as at the token endpoint (HTTP Basic or ' +
          '`client_secret`), as does an API key for its own tokens; a request that names no client ' +
          'speaks for the platform\'s first-party client, as a password grant that names none does. ' +
          'Credentials that fail are 401 `invalid_client`. Answers 200 for unknown, expired, already ' +
          'revoked and other clients\' ' +
          'tokens, changing nothing for them, as RFC 7009 §2.2 allows.',
        consumes,
        body: revokeRequestSchema,
        response: { 200: z.object({}).describe('Empty'), ...errors },
        responseHeaders,
      },
    },
    async (request, reply) => {
      const body = parametersOf(request.body);
      const token = body.token;
      if (typeof token !== 'string' || token.length === 0 || token.length > 4096) throw invalidRequest('Missing or invalid parameter: token.');
      await options.tokens.revoke(token, body, grantContext(request));
      return noStore(reply).send({});
    },
  );

  app.post(
    INTROSPECT_PATH,
    {
      // The caller authenticates in the handler: an API key has no bearer token to show the edge.
      config: { auth: 'public' },
      bodyLimit: OAUTH_FORM_BODY_LIMIT,
      attachValidation: true,
      schema: {
        tags: ['SSO'],
        operationId: 'introspectToken',
        summary: 'Introspect a token (RFC 7662)',
        description:
          'Says whether an access or refresh token is usable now, and what it carries. Resource servers ' +
          'only (RFC 7662 §4): the caller authenticates with an API key (HTTP Basic or client_secret, as at ' +
          'the token endpoint) or a bearer token, and its identity must hold the `introspect` role, which ' +
          'an admin grants; 401 `invalid_client` without a valid caller, 403 `insufficient_scope` without ' +
          'the role. Revoked, expired, used and unknown tokens are `{ "active": false }` and nothing more.',
        consumes,
        body: introspectionRequestSchema,
        response: { 200: introspectionResponseSchema, ...introspectionErrors },
        responseHeaders,
      },
    },
    async (request, reply) => {
      const body = parametersOf(request.body);
      await authorizeIntrospection(request, body);
      const token = body.token;
      if (typeof token !== 'string' || token.length === 0) throw invalidRequest('Missing or invalid parameter: token.');
      return noStore(reply).send(await options.tokens.introspect(token));
    },
  );
}
