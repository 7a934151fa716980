import type { FastifyContextConfig, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { RouteAuth } from '../auth/route-auth.js';
import { PreconditionViolation, UniqueViolation } from '../db/records.js';
import {
  createdResponse,
  entityTag,
  notModifiedResponse,
  preconditionFailed,
  preconditionFailedResponse,
  recordLocation,
  sendTagged,
  taggedResponse,
  type Precondition,
} from './conditional.js';
import { problemSchema, type AppError } from './errors.js';
import { guardRows, idempotencyResponses, idempotentHeadersSchema, type CreateGuard, type StoredAnswer } from './idempotency.js';
import type { FilteredPage } from '../db/filter-sql.js';
import { countPreference, listHeadersSchema, pageOf, setPagingHeaders, type CountPreference, type Page, type PageResult, type PagingQuery } from './list.js';

/*
 * The answers of a record's routes, for every service that serves records (and every generic
 * domain of libs/crud): a list is a page with its paging headers, a read answers
 * the record's ETag (or a 304), an update the new one, a create its ETag and Location. What a
 * route sends is `[record]`, as an array the response schema serializes, or as the JSON of that
 * array (cached answers, sent as they are stored).
 */

const JSON_TYPE = 'application/json; charset=utf-8';

/** One record as its routes answer it: the body sent, its entity tag, and its id (a created one's Location). */
export interface RecordAnswer<Body = unknown> {
  id: string;
  body: Body;
  etag: string;
}

/** A record, its answer, and its tag: the hash of its JSON (`json`, when the caller has that string in hand). */
export interface TaggedRecord<R> extends RecordAnswer<[R]> {
  record: R;
}

export const tagRecord = <R extends { id: string }>(record: R, json = JSON.stringify(record)): TaggedRecord<R> => ({
  id: record.id,
  record,
  body: [record],
  etag: entityTag(json),
});

/** The answer of a body that is the JSON of `[record]` itself (a cached one), tagged by the hash of that string. */
export const tagJson = (id: string, json: string): RecordAnswer<string> => ({ id, body: json, etag: entityTag(json) });

/** One page of records as a list answers it: the records (an array, or its JSON) and what the paging headers need. */
export interface RecordPage<Records = unknown> extends PageResult {
  records: Records;
}

/** A page of rows as a repository reads it (readFilteredPage), shaped into records. */
const pageOfRows = <Row, R>(found: FilteredPage<Row>, toRecord: (row: Row) => R): RecordPage<R[]> => ({
  records: found.rows.map(toRecord),
  returned: found.rows.length,
  hasMore: found.hasMore,
  ...(found.total === undefined ? {} : { total: found.total }),
  ...(found.last === undefined ? {} : { last: found.last }),
});

/**
 * A write's precondition (If-Match) on the record's tag, as the repository checks it on the row
 * it holds locked (`tagOf` computes the tag from the row exactly as a read would answer it).
 */
export const onTaggedRow = <Row>(precondition: Precondition | undefined, tagOf: (row: Row) => string) =>
  precondition && ((row: Row) => precondition(tagOf(row)));

/**
 * How a service answers its rows: each as the record `toRecord` makes of it, tagged as a read
 * answers it, so a create, a read, an update, a list and a precondition all agree on the tag.
 */
export function recordAnswers<Row, R extends { id: string }>(toRecord: (row: Row) => R) {
  const tagged = (row: Row): TaggedRecord<R> => tagRecord(toRecord(row));
  return {
    tagged,
    /** A write's If-Match as a condition on the row the repository holds locked. */
    onRow: (precondition: Precondition | undefined) => onTaggedRow(precondition, (row: Row) => tagged(row).etag),
    /** An Idempotency-Key's guard of the answer, as the guard of the row the repository creates. */
    guard: (guard: CreateGuard<TaggedRecord<R>> | undefined) => guardRows(guard, tagged),
    /** A page of rows (readFilteredPage) as a list answers it. */
    page: (found: FilteredPage<Row>) => pageOfRows(found, toRecord),
  };
}

/** What a violation of the write path answers: 412 for a failed precondition, `unique()` for a taken value. */
export function writeProblem(error: unknown, unique?: () => AppError): unknown {
  if (error instanceof PreconditionViolation) return preconditionFailed();
  if (error instanceof UniqueViolation && unique) return unique();
  return error;
}

const sendBody = (reply: FastifyReply, body: unknown) => (typeof body === 'string' ? reply.type(JSON_TYPE).send(body) : reply.send(body));

/**
 * Answers a list route: the page and filters of the parsed query, the page `list` reads (with
 * a total when `Prefer: count=exact` or `count=estimated` asks), and its Link and Content-Range headers.
 */
export async function sendPage<Q extends PagingQuery>(
  request: FastifyRequest & { query: Q },
  reply: FastifyReply,
  list: (page: Page, filters: Omit<Q, keyof PagingQuery>, count: CountPreference | undefined) => Promise<RecordPage>,
): Promise<FastifyReply> {
  const { page, filters } = pageOf(request.query);
  const found = await list(page, filters, countPreference(request));
  setPagingHeaders(request, reply, page, found);
  return sendBody(reply, found.records);
}

/** Answers a read of one record: its ETag, or a 304 when If-None-Match names it. */
export function sendRecord(request: FastifyRequest, reply: FastifyReply, { body, etag }: RecordAnswer): FastifyReply {
  return typeof body === 'string' ? sendTagged(request, reply.type(JSON_TYPE), etag, body) : sendTagged(request, reply, etag, body);
}

/** Answers a write of one record (an update): the record as it is now, and its new ETag. */
export const sendWritten = (reply: FastifyReply, { body, etag }: RecordAnswer): FastifyReply => sendBody(reply.header('etag', etag), body);

/** The 201 of a create, as an Idempotency-Key keeps it: the new record, its ETag, and its Location in `collection`. */
export const createdAnswer =
  (collection: string) =>
  ({ id, body, etag }: RecordAnswer): StoredAnswer => ({
    status: 201,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { etag, location: recordLocation(collection, id) },
  });

/*
 * Their declarations: what the routes of one collection say alike (tags, the records' schema,
 * the problems they answer, who may call them) is given once, and each route adds its own
 * operationId, summary and schemas. The kit adds what every service would otherwise write
 * again: the ETag, 304, 412, 201 and Idempotency-Key responses, and the conditional-request
 * descriptions. Each builder answers a route's options, typed so the route's handler sees
 * its parsed params, query and body.
 */

const READ_DESCRIPTION = 'Answers its ETag; with If-None-Match naming it, a 304 with no body.';
const CREATE_DESCRIPTION = 'With Idempotency-Key, a retry answers the first answer again and creates nothing.';
/** The response of a route that answers no body (a 204, or a ping's 200). */
export const noContentResponse = z.null().describe('No content');
const conditionalWrite = (noun: string) => `With If-Match, only while the ${noun} still has that ETag (else 412 and nothing changes).`;

/** Responses by status, as a route's `response` takes them. */
type Responses = Readonly<Record<number, unknown>>;

/** A problem+json response for each status. */
export const problemResponses = (...statuses: number[]): Responses => Object.fromEntries(statuses.map((status) => [status, problemSchema]));

export interface RecordCollectionSpec<Records extends z.ZodType> {
  /** The OpenAPI tags of every route. */
  tags: string[];
  /** The schema of the records answered: an array (a read answers an array of one). */
  records: Records;
  /** What a write's description calls one record ("order": "only while the order still has that ETag"). */
  noun: string;
  /** Who may call the routes (route-auth.ts; default: any valid token); a route may say otherwise. */
  auth?: RouteAuth;
  /** What every route answers besides the kit's record responses (its problems); a route may say otherwise. */
  responses: Responses;
  /** Headers every route but the list and the create accepts (the list's and the create's own are theirs). */
  headers?: z.ZodType;
}

/** What a route adds: its OpenAPI identity and schemas; `config` and `responses` replace the collection's. */
export interface RecordRouteSpec {
  operationId: string;
  summary: string;
  description?: string;
  config?: FastifyContextConfig;
  responses?: Responses;
  [schema: string]: unknown;
}

/** The route options of a collection's list, read, create, update and delete routes. */
export function recordRoutes<Records extends z.ZodType>(collection: RecordCollectionSpec<Records>) {
  const { tags, records } = collection;
  const route = <R extends RecordRouteSpec, Schema extends object>(spec: R, defaults: Schema, response: (errors: Responses) => Responses) => {
    const { config, responses, ...schema } = spec;
    return {
      // OpenAPI's `security` follows from `auth` (openapi.ts).
      config: config ?? { auth: collection.auth ?? 'authenticated' },
      schema: {
        tags,
        ...defaults,
        ...(schema as Omit<R, 'config' | 'responses'>),
        response: response(responses ?? collection.responses),
      },
    };
  };
  const headers = collection.headers ? { headers: collection.headers } : {};
  return {
    list: <R extends RecordRouteSpec & { querystring: z.ZodType }>(spec: R) =>
      route(spec, { headers: listHeadersSchema }, (errors) => ({ 200: records, ...errors })),
    read: <R extends RecordRouteSpec & { params: z.ZodType }>(spec: R) =>
      route(spec, { description: READ_DESCRIPTION, ...headers }, (errors) => ({ 200: taggedResponse(records), 304: notModifiedResponse, ...errors })),
    create: <R extends RecordRouteSpec & { body: z.ZodType }>(spec: R) =>
      route(spec, { description: CREATE_DESCRIPTION, headers: idempotentHeadersSchema }, (errors) => ({ 201: createdResponse(records), ...errors, ...idempotencyResponses })),
    update: <R extends RecordRouteSpec & { params: z.ZodType; body: z.ZodType }>(spec: R) =>
      route(spec, { description: conditionalWrite(collection.noun), ...headers }, (errors) => ({ 200: taggedResponse(records), ...errors, 412: preconditionFailedResponse })),
    delete: <R extends RecordRouteSpec & { params: z.ZodType }>(spec: R) =>
      route(spec, { description: conditionalWrite(collection.noun), ...headers }, (errors) => ({ 204: noContentResponse, ...errors, 412: preconditionFailedResponse })),
  };
}
