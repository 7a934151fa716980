import { problemSchema, recordLocation, type App } from '@app/platform';
import { z } from 'zod';
import {
  clientIdParamsSchema,
  clientSchema,
  createClientBodySchema,
  createdClientSchema,
  listClientsQuerySchema,
  updateClientBodySchema,
} from './schemas.js';
import { clientRecordOf, type ClientService } from './service.js';

export const CLIENTS_PATH = '/api/v1/sso/clients';

const TAGS = ['SSO'];
const security = [{ bearerAuth: [] }];
const errors = { 400: problemSchema, 401: problemSchema, 403: problemSchema, 404: problemSchema, 503: problemSchema };
/** Registering the apps that may sign users in is an administrator's decision: 403 for anyone else. */
const adminsOnly = { auth: { roles: ['admin'] } } as const;

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
        body: createClientBodySchema,
        response: { 201: z.array(createdClientSchema), ...errors },
      },
    },
    async (request, reply) => {
      const { client, secret } = await clients.create(request.body);
      reply.header('cache-control', 'no-store').header('location', recordLocation(CLIENTS_PATH, client.id));
      return reply.code(201).send([{ ...clientRecordOf(client), ...(secret !== undefined && { client_secret: secret }) }]);
    },
  );

  app.get(
    CLIENTS_PATH,
    {
      config: adminsOnly,
      schema: {
        tags: TAGS,
        operationId: 'listOAuthClients',
        summary: 'List the registered OAuth clients (admins), oldest first',
        security,
        querystring: listClientsQuerySchema,
        response: { 200: z.array(clientSchema), ...errors },
      },
    },
    async (request) => (await clients.list(request.query)).map(clientRecordOf),
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
