import { createIdempotently, idempotencyResponses, idempotentHeadersSchema, problemSchema, recordAnswers, recordLocation, sendPage, type App, type StoredAnswer } from '@app/platform';
import { z } from 'zod';
import {
  clientIdParamsSchema,
  clientSchema,
  createClientBodySchema,
  createdClientSchema,
  listClientsQuerySchema,
  updateClientBodySchema,
} from './schemas.js';
import { SSO_SCHEMA } from './repository.js';
import { clientRecordOf, type ClientService, type CreatedClient } from './service.js';

export const CLIENTS_PATH = '/api/v1/sso/clients';

const TAGS = ['SSO'];
const security = [{ bearerAuth: [] }];
const errors = { 400: problemSchema, 401: problemSchema, 403: problemSchema, 404: problemSchema, 503: problemSchema };
/** Registering the apps that may sign users in is an administrator's decision: 403 for anyone else. */
const adminsOnly = { auth: { roles: ['admin'] } } as const;

/** A 201 with the registered client (and its secret, the one time it is known): never stored by a cache. */
const createdAnswer = ({ client, secret }: CreatedClient): StoredAnswer => ({
  status: 201,
  body: JSON.stringify([{ ...clientRecordOf(client), ...(secret !== undefined && { client_secret: secret }) }]),
  headers: { 'cache-control': 'no-store', location: recordLocation(CLIENTS_PATH, client.id) },
});

const asRecords = recordAnswers(clientRecordOf);

/** The registered OAuth clients (admins only): the apps that may send users to the login page. */
export async function clientRoutes(app: App, options: { clients: ClientService }): Promise<void> {
  const { clients } = options;

  app.post(
    CLIENTS_PATH,
    {
      config: adminsOnly,
      schema: {
        tags: TAGS,
        operationId: 'createOAuthClient',
        summary: 'Register an OAuth client (admins); a confidential client\'s secret is shown this once',
        security,
        description: 'With Idempotency-Key, a retry answers the first answer again, without the secret, and registers nothing.',
        headers: idempotentHeadersSchema,
        body: createClientBodySchema,
        response: { 201: z.array(createdClientSchema), ...errors, ...idempotencyResponses },
      },
    },
    async (request, reply) =>
      createIdempotently<CreatedClient>(request, reply, {
        schema: SSO_SCHEMA,
        create: (guard) => clients.create(request.body, guard),
        answer: createdAnswer,
        // The secret is shown once: a replay answers the client as registered, without it.
        replay: ({ client }) => createdAnswer({ client }),
      }),
  );

  app.get(
    CLIENTS_PATH,
    {
      config: adminsOnly,
      schema: {
        tags: TAGS,
        operationId: 'listOAuthClients',
        summary: 'List the registered OAuth clients (admins)',
        description: 'Pages as every list does: a Link header to the next page (by cursor, or by offset when offset was given); `Prefer: count=exact` or `count=estimated` adds the total as Content-Range.',
        security,
        querystring: listClientsQuerySchema,
        response: { 200: z.array(clientSchema), ...errors },
      },
    },
    async (request, reply) => sendPage(request, reply, async (page, _filters, count) => asRecords.page(await clients.list(page, count))),
  );

  app.get(
    `${CLIENTS_PATH}/:id`,
    {
      config: adminsOnly,
      schema: {
        tags: TAGS,
        operationId: 'getOAuthClient',
        summary: 'Read a registered OAuth client (admins); never its secret',
        security,
        params: clientIdParamsSchema,
        response: { 200: z.array(clientSchema), ...errors },
      },
    },
    async (request) => [clientRecordOf(await clients.get(request.params.id))],
  );

  app.put(
    `${CLIENTS_PATH}/:id`,
    {
      config: adminsOnly,
      schema: {
        tags: TAGS,
        operationId: 'updateOAuthClient',
        summary: 'Change a registered OAuth client (admins): its name, URIs, grants and scopes',
        security,
        params: clientIdParamsSchema,
        body: updateClientBodySchema,
        response: { 200: z.array(clientSchema), ...errors },
      },
    },
    async (request) => [clientRecordOf(await clients.update(request.params.id, request.body))],
  );

  app.delete(
    `${CLIENTS_PATH}/:id`,
    {
      config: adminsOnly,
      schema: {
        tags: TAGS,
        operationId: 'deleteOAuthClient',
        summary: 'Delete a registered OAuth client (admins): it can sign nobody in any more',
        security,
        params: clientIdParamsSchema,
        response: { 204: z.null().describe('Deleted'), ...errors },
      },
    },
    async (request, reply) => {
      await clients.delete(request.params.id);
      return reply.code(204).send(null);
    },
  );
}
