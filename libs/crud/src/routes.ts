import {
  camelCase,
  createdAnswer,
  createIdempotently,
  noContentResponse,
  problemResponses,
  problemSchema,
  recordRoutes,
  sendPage,
  sendRecord,
  sendWritten,
  writePrecondition,
  type App,
  type Cache,
  type Logger,
  type SqlSession,
} from '@app/platform';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Domain, ListQuery } from './define-domain.js';
import { createRecordCache } from './record-cache.js';
import { createDomainRepository, type PrismaRawClient, type RecordFilters, type RecordValues } from './repository.js';
import { createDomainService, type DomainService, type TaggedRecord } from './service.js';

/** What a domain's plugin is registered with: the owning service's adapters. */
export interface CrudPluginOptions {
  /** The owning service's Prisma client, which writes go through. */
  prisma: PrismaRawClient;
  /** The owning service's database port, which reads run on. */
  database: SqlSession;
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

/** Responses every protected route can give besides its own. */
const COMMON_ERRORS = problemResponses(400, 401, 500);

/** The six routes of a domain, relative to its prefix (`collection`, the path they are served under). */
function registerRoutes(app: App, domain: Domain, service: DomainService, collection: string, schema: string): void {
  const { schemas, tag, name, plural } = domain;
  const routes = recordRoutes({
    tags: [tag],
    records: schemas.records,
    noun: 'record',
    headers: schemas.headers,
    responses: COMMON_ERRORS,
  });
  // operationIds from the domain's names: listProducts, getProduct, ... (`blog_post`, `blog-posts`: getBlogPost, listBlogPosts).

  app.get(
    '/ping',
    { config: { auth: 'public' }, schema: { tags: [tag], operationId: camelCase('ping', plural), summary: `Check that the ${plural} routes answer (no token needed)`, response: { 200: noContentResponse, 500: problemSchema } } },
    async (_request, reply) => (reply as FastifyReply).code(200).send(),
  );

  app.get(
    '/:id',
    routes.read({ operationId: camelCase('get', name), summary: `Read one ${name} by id`, params: schemas.params, responses: { 404: problemSchema, ...COMMON_ERRORS } }),
    async (request, reply) => sendRecord(request, reply, await service.read(request.params.id)),
  );

  app.get(
    '/',
    routes.list({
      headers: schemas.listHeaders,
      operationId: camelCase('list', plural),
      summary: `List ${plural}: paged, sorted and filtered on any field but id`,
      description:
        'Filters in PostgREST syntax, `field=op.value` (see each parameter), repeated to AND. ' +
        'Pages by `cursor`: follow the Link header\'s rel="next" (`offset` works too, but reads every record it skips). ' +
        '`Prefer: count=exact` adds the total as Content-Range, `count=estimated` the planner\'s estimate of a large one.',
      querystring: schemas.query,
    }),
    async (request, reply) =>
      sendPage(request as typeof request & { query: ListQuery }, reply, (page, filters, count) => service.list(page, filters as RecordFilters, { count })),
  );

  app.post(
    '/',
    routes.create({ headers: schemas.createHeaders, operationId: camelCase('create', name), summary: `Create a ${name}`, body: schemas.create }),
    async (request, reply) =>
      createIdempotently<TaggedRecord>(request, reply, {
        schema,
        create: (guard) => service.create(request.body as RecordValues, guard),
        answer: createdAnswer(collection),
      }),
  );

  app.put(
    '/:id',
    routes.update({
      operationId: camelCase('update', name),
      summary: `Update a ${name}: only the fields given change`,
      params: schemas.params,
      body: schemas.update,
      responses: { 404: problemSchema, 422: problemSchema, ...COMMON_ERRORS },
    }),
    async (request, reply) => sendWritten(reply, await service.update(request.params.id, request.body as RecordValues, writePrecondition(request))),
  );

  app.delete(
    '/:id',
    routes.delete({ operationId: camelCase('delete', name), summary: `Delete a ${name}`, params: schemas.params, responses: { 404: problemSchema, ...COMMON_ERRORS } }),
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
      repository: createDomainRepository(domain, options.prisma, { schema: options.schema, database: options.database }),
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
