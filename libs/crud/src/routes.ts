import {
  camelCase,
  createdResponse,
  createIdempotently,
  idempotencyResponses,
  notModifiedResponse,
  pageOf,
  preconditionFailedResponse,
  problemSchema,
  recordLocation,
  sendTagged,
  setPagingHeaders,
  taggedResponse,
  wantsExactCount,
  writePrecondition,
  type App,
  type Cache,
  type Logger,
} from '@app/platform';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Domain, ListQuery } from './define-domain.js';
import { createRecordCache } from './record-cache.js';
import { createDomainRepository, type PrismaRawClient, type RecordFilters, type RecordValues } from './repository.js';
import { createDomainService, type DomainService, type TaggedRecord } from './service.js';

/** What a domain's plugin is registered with: the owning service's adapters. */
export interface CrudPluginOptions {
  /** The owning service's Prisma client. */
  prisma: PrismaRawClient;
  /** The owning service's Postgres schema, holding the table and the outbox. */
  schema: string;
  cache: Cache;
  /** Seconds a record or list page stays cached; 0 turns the cache off. */
  cacheTtlSeconds: number;
  logger: Logger;
  /** Called after every committed change (wake the outbox relay). */
  onCommitted?: () => void;
  /**
   * Fastify's own register option: when given, the routes live under it instead of the
   * domain's prefix (`app.register(createDomainPlugin(product), { prefix: '/v2/goods', ... })`).
   */
  prefix?: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';
/** Responses every protected route can give besides its own. */
const COMMON_ERRORS = { 400: problemSchema, 401: problemSchema, 500: problemSchema };
const NO_CONTENT = z.null().describe('No content');

const sendJson = (reply: FastifyReply, status: number, body: string) => reply.code(status).type(JSON_TYPE).send(body);

/** The six routes of a domain, relative to its prefix (`collection`, the path they are served under). */
function registerRoutes(app: App, domain: Domain, service: DomainService, collection: string, schema: string): void {
  const { schemas, tag, name, plural } = domain;
  const authenticated = { auth: 'authenticated' } as const;
  const secured = { tags: [tag], security: [{ bearerAuth: [] }], headers: schemas.headers };
  // operationIds from the domain's names: listProducts, getProduct, ... (`blog_post`, `blog-posts`: getBlogPost, listBlogPosts).

  app.get(
    '/ping',
    { config: { auth: 'public' }, schema: { tags: [tag], operationId: camelCase('ping', plural), summary: `Check that the ${plural} routes answer (no token needed)`, response: { 200: NO_CONTENT, 500: problemSchema } } },
    async (_request, reply) => (reply as FastifyReply).code(200).send(),
  );

  app.get(
    '/:id',
    {
      config: authenticated,
      schema: {
        ...secured,
        operationId: camelCase('get', name),
        summary: `Read one ${name} by id`,
        description: 'Answers its ETag; with If-None-Match naming it, a 304 with no body.',
        params: schemas.params,
        response: { 200: taggedResponse(schemas.records), 304: notModifiedResponse, 404: problemSchema, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const { body, etag } = await service.read(request.params.id);
      return sendTagged(request, reply.type(JSON_TYPE), etag, body);
    },
  );

  app.get(
    '/',
    {
      config: authenticated,
      schema: {
        ...secured,
        headers: schemas.listHeaders,
        operationId: camelCase('list', plural),
        summary: `List ${plural}: paged, sorted and filtered on any field but id`,
        description:
          'Filters in PostgREST syntax, `field=op.value` (see each parameter), repeated to AND. ' +
          'Answers a Link header (next/prev); `Prefer: count=exact` adds the total as Content-Range.',
        querystring: schemas.query,
        response: { 200: schemas.records, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const { page, filters } = pageOf(request.query as ListQuery);
      const result = await service.list(page, filters as RecordFilters, { count: wantsExactCount(request) });
      setPagingHeaders(request, reply, page, { returned: result.size, hasMore: result.hasMore, total: result.total });
      return sendJson(reply, 200, result.body);
    },
  );

  app.post(
    '/',
    {
      config: authenticated,
      schema: {
        ...secured,
        headers: schemas.createHeaders,
        operationId: camelCase('create', name),
        summary: `Create a ${name}`,
        description: 'With Idempotency-Key, a retry answers the first answer again and creates nothing.',
        body: schemas.create,
        response: { 201: createdResponse(schemas.records), ...COMMON_ERRORS, ...idempotencyResponses },
      },
    },
    async (request, reply) =>
      createIdempotently<TaggedRecord>(request, reply, {
        schema,
        create: (guard) => service.create(request.body as RecordValues, guard),
        answer: ({ id, body, etag }) => ({ status: 201, body, headers: { etag, location: recordLocation(collection, id) } }),
      }),
  );

  app.put(
    '/:id',
    {
      config: authenticated,
      schema: {
        ...secured,
        operationId: camelCase('update', name),
        summary: `Update a ${name}: only the fields given change`,
        description: 'With If-Match, only while the record still has that ETag (else 412 and nothing changes).',
        params: schemas.params,
        body: schemas.update,
        response: { 200: taggedResponse(schemas.records), 404: problemSchema, 412: preconditionFailedResponse, 422: problemSchema, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const { body, etag } = await service.update(request.params.id, request.body as RecordValues, writePrecondition(request));
      return sendJson(reply.header('etag', etag), 200, body);
    },
  );

  app.delete(
    '/:id',
    {
      config: authenticated,
      schema: {
        ...secured,
        operationId: camelCase('delete', name),
        summary: `Delete a ${name}`,
        description: 'With If-Match, only while the record still has that ETag (else 412 and nothing changes).',
        params: schemas.params,
        response: { 204: NO_CONTENT, 404: problemSchema, 412: preconditionFailedResponse, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      await service.delete(request.params.id, writePrecondition(request));
      return (reply as FastifyReply).code(204).send();
    },
  );
}

/** Builds the Fastify plugin serving a domain: repository, cache and service wired from the options. */
export function createDomainPlugin(domain: Domain): FastifyPluginAsync<CrudPluginOptions> {
  return async (fastify, options) => {
    const app: App = fastify.withTypeProvider<ZodTypeProvider>();
    const service = createDomainService(domain, {
      repository: createDomainRepository(domain, options.prisma, { schema: options.schema }),
      cache: createRecordCache({ cache: options.cache, domain: domain.name, ttlSeconds: options.cacheTtlSeconds, logger: options.logger }),
      onCommitted: options.onCommitted,
    });
    if (options.prefix) {
      registerRoutes(app, domain, service, app.prefix, options.schema);
      return;
    }
    await app.register(async (scoped) => registerRoutes(scoped, domain, service, domain.prefix, options.schema), { prefix: domain.prefix });
  };
}
