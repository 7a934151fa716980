import { createdAnswer, createIdempotently, principalOf, problemResponses, recordRoutes, sendPage, sendRecord, sendWritten, writePrecondition, type App } from '@app/platform';
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

/** The problems every credential route may answer. */
const errors = problemResponses(400, 401, 403, 404, 422, 500, 503);

export interface CredentialRoutesOptions {
  service: CredentialService;
}

/** The caller, and its own authority for what this service asks identity on its behalf. */
const callerOf = (request: FastifyRequest): Caller => ({
  principal: principalOf(request),
  authority: { authorization: request.headers.authorization },
});

/** What every credential route declares alike (recordRoutes adds the ETag, 304, 412 and 201 responses). */
const routes = recordRoutes({
  tags: ['Credentials'],
  records: credentialListSchema,
  noun: 'credential',
  responses: errors,
});

/** The public credentials API (under CREDENTIALS_PREFIX, routed by the gateway). */
export async function credentialRoutes(app: App, options: CredentialRoutesOptions): Promise<void> {
  const { service } = options;

  app.post(
    '/',
    routes.create({
      // Only admins and system tokens create credentials: 403 before the body is looked at.
      config: { auth: { roles: ['admin', 'system'] } },
      operationId: 'createCredential',
      summary: 'Create a credential (admin or system token); the API key is the secret the caller sends, never shown again',
      body: createCredentialBodySchema,
    }),
    async (request, reply) =>
      createIdempotently<TaggedCredential>(request, reply, {
        schema: CREDENTIALS_SCHEMA,
        fingerprint: () => service.fingerprintOf(request.body),
        create: (guard) => service.create(request.body, callerOf(request), { guard }),
        answer: createdAnswer(CREDENTIALS_PREFIX),
      }),
  );

  app.get(
    '/',
    routes.list({
      operationId: 'listCredentials',
      summary: 'List credentials (admins and system tokens see all, an identity its own)',
      querystring: listCredentialsQuerySchema,
    }),
    async (request, reply) => sendPage(request, reply, (page, filters, count) => service.list(filters, page, count, principalOf(request))),
  );

  app.get(
    '/:id',
    routes.read({
      operationId: 'getCredential',
      summary: 'Read a credential (its identity, an admin or a system token); never its secret',
      params: credentialIdParamsSchema,
    }),
    async (request, reply) => sendRecord(request, reply, await service.get(request.params.id, principalOf(request))),
  );

  app.put(
    '/:id',
    routes.update({
      operationId: 'updateCredential',
      summary: 'Update a credential (e.g. a new password); a secret is never returned',
      params: credentialIdParamsSchema,
      body: updateCredentialBodySchema,
    }),
    async (request, reply) => sendWritten(reply, await service.update(request.params.id, request.body, principalOf(request), writePrecondition(request))),
  );

  app.delete(
    '/:id',
    routes.delete({
      operationId: 'revokeCredential',
      summary: 'Revoke a credential (its identity, an admin or a system token)',
      params: credentialIdParamsSchema,
      responses: { 204: z.null().describe('Revoked'), ...errors },
    }),
    async (request, reply) => {
      await service.revoke(request.params.id, principalOf(request), writePrecondition(request));
      return reply.code(204).send(null);
    },
  );
}
