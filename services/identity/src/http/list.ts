import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

/**
 * The list conventions of DESIGN.md (paging, sorting, equality filters, `Link`, opt-in
 * count), for this service's collections. The credentials service carries the same file:
 * both predate libs/crud, where it belongs once that lib lands.
 */

/** Largest page: bounds what one request can make the database read. */
export const MAX_LIMIT = 100;
export const DEFAULT_LIMIT = 20;

export interface Page {
  limit: number;
  offset: number;
  sort: { field: string; direction: 'asc' | 'desc' };
}

/** `true`/`false` in a query string (anything else is a 400, not a silent `false`). */
export const booleanParam = z.enum(['true', 'false']).transform((value) => value === 'true');
/** An ISO 8601 instant in a query string. */
export const instantParam = z.iso.datetime({ offset: true }).transform((value) => new Date(value));

/**
 * The query schema of a list: `limit`, `offset`, `sort` over the `sortable` fields and the
 * given equality filters; any other parameter is a 400.
 */
export function listQuerySchema<Filters extends z.ZodRawShape>(sortable: readonly [string, ...string[]], filters: Filters) {
  const sortValues = [...sortable, ...sortable.map((field) => `-${field}`)] as [string, ...string[]];
  return z.strictObject({
    limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT).describe(`Page size, 1..${MAX_LIMIT}`),
    offset: z.coerce.number().int().min(0).default(0).describe('Records to skip'),
    sort: z
      .enum(sortValues)
      .default('-createdAt')
      .describe('`field` ascending or `-field` descending; ties are broken by id'),
    ...filters,
  });
}

/** Splits a parsed list query into its page and its filters (the fields that were given). */
export function pageOf<Q extends { limit: number; offset: number; sort: string }>(
  query: Q,
): { page: Page; filters: Omit<Q, 'limit' | 'offset' | 'sort'> } {
  const { limit, offset, sort, ...filters } = query;
  const descending = sort.startsWith('-');
  const defined = Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== undefined));
  return {
    page: { limit, offset, sort: { field: descending ? sort.slice(1) : sort, direction: descending ? 'desc' : 'asc' } },
    filters: defined as Omit<Q, 'limit' | 'offset' | 'sort'>,
  };
}

/** The `Prefer` header of a list request, documented in its schema. */
export const listHeadersSchema = z.object({
  prefer: z.string().max(200).optional().describe('`count=exact` adds the total as `Content-Range: <first>-<last>/<total>`'),
});

export const wantsExactCount = (request: FastifyRequest) => /(^|[,;\s])count=exact($|[,;\s])/.test(String(request.headers.prefer ?? ''));

/**
 * Sets the paging headers of a list answer: `Link` (RFC 8288) with `next` when another page
 * exists and `prev` when this is not the first, and, when a count was asked for,
 * `Content-Range` in PostgREST's form (`0-19/57`, `*\/0` for an empty page).
 */
export function setPagingHeaders(
  request: FastifyRequest,
  reply: FastifyReply,
  page: Page,
  result: { returned: number; hasMore: boolean; total?: number },
): void {
  const [path = '/', rawQuery = ''] = request.url.split('?', 2);
  const linkTo = (offset: number) => {
    const params = new URLSearchParams(rawQuery);
    params.set('offset', String(offset));
    params.set('limit', String(page.limit));
    return `<${path}?${params.toString()}>`;
  };
  const links: string[] = [];
  if (result.hasMore) links.push(`${linkTo(page.offset + page.limit)}; rel="next"`);
  if (page.offset > 0) links.push(`${linkTo(Math.max(0, page.offset - page.limit))}; rel="prev"`);
  if (links.length > 0) reply.header('link', links.join(', '));
  if (result.total !== undefined) {
    const range = result.returned > 0 ? `${page.offset}-${page.offset + result.returned - 1}` : '*';
    reply.header('content-range', `${range}/${result.total}`);
    reply.header('preference-applied', 'count=exact');
  }
}
