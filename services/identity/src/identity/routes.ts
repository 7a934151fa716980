import type { BlockList } from 'node:net';
import { createdAnswer, createIdempotently, principalOf, problemResponses, recordRoutes, sendPage, sendRecord, sendWritten, writePrecondition, type App } from '@app/platform';
import {
  createIdentityBodySchema,
  identityEmailParamsSchema,
  identityIdParamsSchema,
  identityListSchema,
  listIdentitiesQuerySchema,
  updateIdentityBodySchema,
} from './schemas.js';
import type { IdentityService, TaggedIdentity } from './service.js';
import { IDENTITY_SCHEMA } from './repository.js';
import type { SignupRateLimit } from './signup-limit.js';

export const IDENTITY_PREFIX = '/api/v1/identity';

/** The problems every identity route may answer. */
const errors = problemResponses(400, 401, 403, 404, 409, 422, 500);

/**
 * The sign-up throttle's headers (signup-limit.ts) are on every answer of a request it counted:
 * each status but the 401 of a bad token, refused before the throttle looks.
 */
const SIGNUP_LIMIT_HEADERS = Object.fromEntries(
  [201, 400, 403, 404, 409, 422, 429, 500].map((status) => [status, ['RateLimit', 'RateLimit-Policy'] as const]),
);

export interface IdentityRoutesOptions {
  service: IdentityService;
  /** Per-address throttle of sign-up (registerSignupLimit); it bounds probing for taken emails too. */
  signupRateLimit: SignupRateLimit;
  /** TRUST_PROXY's peers: an anonymous sign-up's Idempotency-Key is scoped to the client address they name. */
  trustedProxies: BlockList;
}

/** What every identity route declares alike (recordRoutes adds the ETag, 304, 412 and 201 responses). */
const routes = recordRoutes({
  tags: ['Identity'],
  records: identityListSchema,
  noun: 'identity',
  responses: errors,
});

/** The public identity API (under IDENTITY_PREFIX, routed by the gateway). */
export async function identityRoutes(app: App, options: IdentityRoutesOptions): Promise<void> {
  const { service } = options;

  app.post(
    '/',
    routes.create({
      // Registration is open, but a caller who sends a token must send a valid one (it may set roles).
      config: { auth: 'optional', rateLimit: options.signupRateLimit },
      operationId: 'createIdentity',
      summary: 'Register an identity (no token needed; roles need an admin token)',
      body: createIdentityBodySchema,
      responses: { ...errors, ...problemResponses(429) },
      responseHeaders: SIGNUP_LIMIT_HEADERS,
    }),
    async (request, reply) =>
      createIdempotently<TaggedIdentity>(request, reply, {
        schema: IDENTITY_SCHEMA,
        trustedProxies: options.trustedProxies,
        create: (guard) => service.create(request.body, request.principal, guard),
        answer: createdAnswer(IDENTITY_PREFIX),
      }),
  );

  app.get(
    '/',
    routes.list({
      operationId: 'listIdentities',
      summary: 'List identities (admins and system tokens see all, others only themselves)',
      querystring: listIdentitiesQuerySchema,
    }),
    async (request, reply) => sendPage(request, reply, (page, filters, count) => service.list(filters, page, count, principalOf(request))),
  );

  app.get(
    '/email/:email',
    routes.read({ operationId: 'getIdentityByEmail', summary: 'Read an identity by email (exact match, any case)', params: identityEmailParamsSchema }),
    async (request, reply) => sendRecord(request, reply, await service.getByEmail(request.params.email, principalOf(request))),
  );

  app.get(
    '/:id',
    routes.read({ operationId: 'getIdentity', summary: 'Read an identity (itself, an admin or a system token)', params: identityIdParamsSchema }),
    async (request, reply) => sendRecord(request, reply, await service.get(request.params.id, principalOf(request))),
  );

  app.put(
    '/:id',
    routes.update({
      operationId: 'updateIdentity',
      summary: 'Update an identity (roles and activation only by an admin; the last active admin stays one)',
      params: identityIdParamsSchema,
      body: updateIdentityBodySchema,
    }),
    async (request, reply) => sendWritten(reply, await service.update(request.params.id, request.body, principalOf(request), writePrecondition(request))),
  );
}
