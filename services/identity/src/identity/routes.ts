import type { BlockList } from 'node:net';
import {
  createdResponse,
  createIdempotently,
  idempotencyResponses,
  idempotentHeadersSchema,
  notModifiedResponse,
  preconditionFailedResponse,
  principalOf,
  problemSchema,
  recordLocation,
  sendTagged,
  taggedResponse,
  writePrecondition,
  type App,
} from '@app/platform';
import { listHeadersSchema, pageOf, setPagingHeaders, wantsExactCount } from '@app/platform';
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

const TAGS = ['Identity'];
const security = [{ bearerAuth: [] }];
const errors = {
  400: problemSchema,
  401: problemSchema,
  403: problemSchema,
  404: problemSchema,
  409: problemSchema,
  422: problemSchema,
  500: problemSchema,
};

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

/** The public identity API (under IDENTITY_PREFIX, routed by the gateway). */
export async function identityRoutes(app: App, options: IdentityRoutesOptions): Promise<void> {
  const { service } = options;

  app.post(
    '/',
    {
      // Registration is open, but a caller who sends a token must send a valid one (it may set roles).
      config: { auth: 'optional', rateLimit: options.signupRateLimit },
      schema: {
        tags: TAGS,
        operationId: 'createIdentity',
        summary: 'Register an identity (no token needed; roles need an admin token)',
        description: 'With Idempotency-Key, a retry answers the first answer again and creates nothing.',
        headers: idempotentHeadersSchema,
        body: createIdentityBodySchema,
        response: { 201: createdResponse(identityListSchema), ...errors, ...idempotencyResponses, 429: problemSchema },
        responseHeaders: SIGNUP_LIMIT_HEADERS,
      },
    },
    async (request, reply) =>
      createIdempotently<TaggedIdentity>(request, reply, {
        schema: IDENTITY_SCHEMA,
        trustedProxies: options.trustedProxies,
        create: (guard) => service.create(request.body, request.principal, guard),
        answer: ({ record, etag }) => ({ status: 201, body: JSON.stringify([record]), headers: { etag, location: recordLocation(IDENTITY_PREFIX, record.id) } }),
      }),
  );

  app.get(
    '/',
    {
      config: { auth: 'authenticated' },
      schema: {
        tags: TAGS,
        operationId: 'listIdentities',
        summary: 'List identities (admins and system tokens see all, others only themselves)',
        security,
        querystring: listIdentitiesQuerySchema,
        headers: listHeadersSchema,
        response: { 200: identityListSchema, ...errors },
      },
    },
    async (request, reply) => {
      const { page, filters } = pageOf(request.query);
      const result = await service.list(filters, page, wantsExactCount(request), principalOf(request));
      setPagingHeaders(request, reply, page, { returned: result.records.length, hasMore: result.hasMore, total: result.total });
      return result.records;
    },
  );

  app.get(
    '/email/:email',
    {
      config: { auth: 'authenticated' },
      schema: {
        tags: TAGS,
        operationId: 'getIdentityByEmail',
        summary: 'Read an identity by email (exact match, any case)',
        description: 'Answers its ETag; with If-None-Match naming it, a 304 with no body.',
        security,
        params: identityEmailParamsSchema,
        response: { 200: taggedResponse(identityListSchema), 304: notModifiedResponse, ...errors },
      },
    },
    async (request, reply) => {
      const { record, etag } = await service.getByEmail(request.params.email, principalOf(request));
      return sendTagged(request, reply, etag, [record]);
    },
  );

  app.get(
    '/:id',
    {
      config: { auth: 'authenticated' },
      schema: {
        tags: TAGS,
        operationId: 'getIdentity',
        summary: 'Read an identity (itself, an admin or a system token)',
        description: 'Answers its ETag; with If-None-Match naming it, a 304 with no body.',
        security,
        params: identityIdParamsSchema,
        response: { 200: taggedResponse(identityListSchema), 304: notModifiedResponse, ...errors },
      },
    },
    async (request, reply) => {
      const { record, etag } = await service.get(request.params.id, principalOf(request));
      return sendTagged(request, reply, etag, [record]);
    },
  );

  app.put(
    '/:id',
    {
      config: { auth: 'authenticated' },
      schema: {
        tags: TAGS,
        operationId: 'updateIdentity',
        summary: 'Update an identity (roles and activation only by an admin; the last active admin stays one)',
        description: 'With If-Match, only while the identity still has that ETag (else 412 and nothing changes).',
        security,
        params: identityIdParamsSchema,
        body: updateIdentityBodySchema,
        response: { 200: taggedResponse(identityListSchema), ...errors, 412: preconditionFailedResponse },
      },
    },
    async (request, reply) => {
      const { record, etag } = await service.update(request.params.id, request.body, principalOf(request), writePrecondition(request));
      return reply.header('etag', etag).send([record]);
    },
  );
}
