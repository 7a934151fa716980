import {
  createdResponse,
  createIdempotently,
  idempotencyResponses,
  idempotentHeadersSchema,
  type StoredAnswer,
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
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  createCredentialBodySchema,
  credentialIdParamsSchema,
  credentialListSchema,
  listCredentialsQuerySchema,
  updateCredentialBodySchema,
} from './schemas.js';
import type { Caller, CredentialService, TaggedCredential } from './service.js';
import { CREDENTIALS_SCHEMA } from './repository.js';

export const CREDENTIALS_PREFIX = '/api/v1/credentials';

const TAGS = ['Credentials'];
const security = [{ bearerAuth: [] }];
const errors = {
  400: problemSchema,
  401: problemSchema,
  403: problemSchema,
  404: problemSchema,
  422: problemSchema,
  500: problemSchema,
  503: problemSchema,
};

export interface CredentialRoutesOptions {
  service: CredentialService;
}

/** The caller, and its own authority for what this service asks identity on its behalf. */
const callerOf = (request: FastifyRequest): Caller => ({
  principal: principalOf(request),
  authority: { authorization: request.headers.authorization },
});

const authenticated = { auth: 'authenticated' } as const;

/** A 201 with the new credential: its tag, and where to read it. */
const createdAnswer = ({ record, etag }: TaggedCredential): StoredAnswer => ({
  status: 201,
  body: JSON.stringify([record]),
  headers: { etag, location: recordLocation(CREDENTIALS_PREFIX, record.id) },
});

/** The public credentials API (under CREDENTIALS_PREFIX, routed by the gateway). */
export async function credentialRoutes(app: App, options: CredentialRoutesOptions): Promise<void> {
  const { service } = options;

  app.post(
    '/',
    {
      // Only admins and system tokens create credentials: 403 before the body is looked at.
      config: { auth: { roles: ['admin', 'system'] } },
      schema: {
        tags: TAGS,
        operationId: 'createCredential',
        summary: 'Create a credential (admin or system token); the API key is the secret the caller sends, never shown again',
        security,
        description: 'With Idempotency-Key, a retry answers the first answer again and creates nothing.',
        headers: idempotentHeadersSchema,
        body: createCredentialBodySchema,
        response: { 201: createdResponse(credentialListSchema), ...errors, ...idempotencyResponses },
      },
    },
    async (request, reply) =>
      createIdempotently<TaggedCredential>(request, reply, {
        schema: CREDENTIALS_SCHEMA,
        fingerprint: () => service.fingerprintOf(request.body),
        create: (guard) => service.create(request.body, callerOf(request), { guard }),
        answer: createdAnswer,
      }),
  );

  app.get(
    '/',
    {
      config: authenticated,
      schema: {
        tags: TAGS,
        operationId: 'listCredentials',
        summary: 'List credentials (admins and system tokens see all, an identity its own)',
        security,
        querystring: listCredentialsQuerySchema,
        headers: listHeadersSchema,
        response: { 200: credentialListSchema, ...errors },
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
    '/:id',
    {
      config: authenticated,
      schema: {
        tags: TAGS,
        operationId: 'getCredential',
        summary: 'Read a credential (its identity, an admin or a system token); never its secret',
        description: 'Answers its ETag; with If-None-Match naming it, a 304 with no body.',
        security,
        params: credentialIdParamsSchema,
        response: { 200: taggedResponse(credentialListSchema), 304: notModifiedResponse, ...errors },
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
      config: authenticated,
      schema: {
        tags: TAGS,
        operationId: 'updateCredential',
        summary: 'Update a credential (e.g. a new password); a secret is never returned',
        description: 'With If-Match, only while the credential still has that ETag (else 412 and nothing changes).',
        security,
        params: credentialIdParamsSchema,
        body: updateCredentialBodySchema,
        response: { 200: taggedResponse(credentialListSchema), ...errors, 412: preconditionFailedResponse },
      },
    },
    async (request, reply) => {
      const { record, etag } = await service.update(request.params.id, request.body, principalOf(request), writePrecondition(request));
      return reply.header('etag', etag).send([record]);
    },
  );

  app.delete(
    '/:id',
    {
      config: authenticated,
      schema: {
        tags: TAGS,
        operationId: 'revokeCredential',
        summary: 'Revoke a credential (its identity, an admin or a system token)',
        description: 'With If-Match, only while the credential still has that ETag (else 412 and nothing changes).',
        security,
        params: credentialIdParamsSchema,
        response: { 204: z.null().describe('Revoked'), ...errors, 412: preconditionFailedResponse },
      },
    },
    async (request, reply) => {
      await service.revoke(request.params.id, principalOf(request), writePrecondition(request));
      return reply.code(204).send(null);
    },
  );
}
