import { createHash } from 'node:crypto';
import type { BlockList } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { quoteIdent } from '../db/database.js';
import { clientAddress, parseTrustedProxies } from './client-address.js';
import { AppError, PROBLEM_MEDIA_TYPE, problemSchema } from './errors.js';

/*
 * Idempotent creates (IETF httpapi draft "The Idempotency-Key HTTP Header Field"): a client
 * that sends `Idempotency-Key` with a POST may send it again, after a timeout, a 502 or a 503,
 * and gets the first answer instead of a second record.
 *
 * The key is kept in `<schema>._idempotency`, written in the create's own transaction, so a
 * committed key always holds its answer and a create that rolled back leaves its key free:
 *  1. claim, first in the transaction: a transaction-scoped advisory lock on the key, taken
 *     without waiting. Held elsewhere, the first request is still in flight: 409. Then a
 *     committed answer under the key is replayed (the same body) or refused (another: 422).
 *  2. the create itself;
 *  3. remember, last: the answer (status, body, headers) stored under the key.
 * The lock is what makes "no answer yet" safe to act on: no other transaction can be between
 * its claim and its commit for this key. It is Postgres' own, so it holds across replicas; on
 * PGlite (one connection) transactions run one after the other anyway.
 *
 * The table is the kit's migration (db/kit-tables.ts), applied into the schema of each
 * service that declares `idempotency: true`.
 */

/** The request header (lower case, as Node gives it). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** How long a key is remembered: the draft leaves it to the server; a day covers any client's retries. */
const KEY_LIFETIME = "interval '24 hours'";
/**
 * Expired keys each remember deletes at most. It deletes as it stores (no timer to run), and a
 * small bound keeps that work out of the create's latency; more than one per stored key keeps
 * the table from growing beyond a day of keys.
 */
const PRUNE_BATCH = 16;

/**
 * The header's value. The draft makes it an sf-string (`"8e03978e-..."`); any printable ASCII
 * the client sends is accepted and compared as sent, so a UUID without quotes works too. The
 * bound keeps a key cheap to index and hash.
 */
export const idempotencyKeyHeader = z
  .string()
  .regex(/^[\x20-\x7e]{1,255}$/, 'expected 1 to 255 printable ASCII characters')
  .optional()
  .describe(
    'Makes a retry safe (IETF httpapi Idempotency-Key): the same key and body within 24 hours answer the first ' +
      'answer again (status, body, Location) and create nothing; 409 while the first is in flight, 422 for another body. ' +
      'Scoped to the caller (token subject and client, or the client address without a token), the method and the path. ' +
      '1 to 255 printable ASCII characters, such as a UUID.',
  )
  .meta({ example: '"8e03978e-40d5-43e8-bc93-6894a57f9324"' });

/** A create's headers schema: the key, beside the route's other headers. Loose: the others pass untouched. */
export const idempotentHeadersSchema = z.looseObject({ [IDEMPOTENCY_KEY_HEADER]: idempotencyKeyHeader });

const problemResponse = (description: string) => ({ description, content: { [PROBLEM_MEDIA_TYPE]: { schema: problemSchema } } });

/** The problems a keyed create answers besides its own (a route's own 422 shares the status: `code` tells them apart). */
export const idempotencyResponses = {
  409: problemResponse('Conflict: a request with this Idempotency-Key is still in flight; retry once it has been answered'),
  422: problemResponse('Unprocessable: the request cannot be done as sent (see `code`), such as this Idempotency-Key sent before with another body'),
};

/** The draft's answers to a key in flight (409) and to a key reused with another body (422). */
const idempotencyKeyInFlight = () => new AppError('PLATFORM_IDEMPOTENCY_KEY_IN_FLIGHT', 409, 'error.idempotencyKeyInFlight');
const idempotencyKeyReused = () => new AppError('PLATFORM_IDEMPOTENCY_KEY_REUSED', 422, 'error.idempotencyKeyReused');

/** An answer as sent, and as kept under its key for a replay. */
export interface StoredAnswer {
  status: number;
  /** The JSON text of the body, sent as it is. */
  body: string;
  headers: Record<string, string>;
}

/** What the key's steps need of a transaction: Prisma's interactive-transaction client qualifies. */
export interface RawSession {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
}

/**
 * What a repository runs in its create's transaction when the request carried a key: `claim`
 * before anything else, `remember` with what it created just before committing. A create that
 * ends without remembering (a unique value taken, a rollback) keeps nothing under the key.
 */
export interface CreateGuard<Created> {
  claim(tx: RawSession): Promise<void>;
  remember(tx: RawSession, created: Created): Promise<void>;
}

/** The guard of what a repository creates (its row), from the guard of what the service answers. */
export function guardRows<Row, Created>(guard: CreateGuard<Created> | undefined, createdOf: (row: Row) => Created): CreateGuard<Row> | undefined {
  return guard && { claim: (tx) => guard.claim(tx), remember: (tx, row) => guard.remember(tx, createdOf(row)) };
}

/** Thrown by `claim` to end the transaction (it wrote nothing) and answer what the key holds. */
class Replay extends Error {
  constructor(readonly answer: StoredAnswer) {
    super('idempotent replay');
    this.name = 'IdempotentReplay';
  }
}

/** JSON with every object's keys sorted: two bodies that differ only in key order are one request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, child]) => child !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, child]) => `${JSON.stringify(key)}:${canonicalJson(child)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A key as one request claims it: the hashed scope, the key as sent, the body's fingerprint. */
interface Claim {
  scope: string;
  key: string;
  fingerprint: string;
}

/** The advisory lock of a key: 64 bits of its hash, schema included (one Postgres may serve every service). */
const lockOf = (schema: string, claim: Claim) => createHash('sha256').update(`${schema}\n${claim.scope}\n${claim.key}`).digest().readBigInt64BE(0).toString();

function guardOf<Created>(schema: string, claim: Claim, answerOf: (created: Created) => StoredAnswer): CreateGuard<Created> {
  const table = `${quoteIdent(schema)}."_idempotency"`;
  return {
    claim: async (tx) => {
      const [lock] = await tx.$queryRawUnsafe<{ locked: boolean }[]>('select pg_try_advisory_xact_lock($1::int8) as locked', lockOf(schema, claim));
      if (!lock?.locked) throw idempotencyKeyInFlight();
      const [kept] = await tx.$queryRawUnsafe<{ fingerprint: string; status: number; body: string; headers: Record<string, string> }[]>(
        `select fingerprint, status, body, headers from ${table} where scope = $1 and key = $2 and created_at > now() - ${KEY_LIFETIME}`,
        claim.scope,
        claim.key,
      );
      if (!kept) return;
      if (kept.fingerprint !== claim.fingerprint) throw idempotencyKeyReused();
      throw new Replay({ status: kept.status, body: kept.body, headers: kept.headers });
    },
    remember: async (tx, created) => {
      const answer = answerOf(created);
      // Skip locked: two creates pruning at once take different rows instead of waiting on each other.
      await tx.$executeRawUnsafe(
        `delete from ${table} where (scope, key) in (select scope, key from ${table} where created_at <= now() - ${KEY_LIFETIME} ` +
          `order by created_at limit ${PRUNE_BATCH} for update skip locked)`,
      );
      // An expired row of the same key may still be there: the new answer replaces it.
      await tx.$executeRawUnsafe(
        `insert into ${table} (scope, key, fingerprint, status, body, headers) values ($1, $2, $3, $4::int4, $5, $6::jsonb) ` +
          'on conflict (scope, key) do update set fingerprint = excluded.fingerprint, status = excluded.status, body = excluded.body, ' +
          'headers = excluded.headers, created_at = now()',
        claim.scope,
        claim.key,
        claim.fingerprint,
        answer.status,
        answer.body,
        JSON.stringify(answer.headers),
      );
    },
  };
}

const NO_PROXY = parseTrustedProxies('none');

/** The path a key is scoped to: without the query and a trailing slash (`/api/v1/products/` is `/api/v1/products`). */
const pathOf = (url: string) => (url.split('?')[0] ?? '/').replace(/(.)\/+$/, '$1');

/**
 * Who is calling, for the key's scope: the token's subject and client, or without a token the
 * client address (as TRUST_PROXY lets the service see it). Two callers never share a key.
 */
function callerOf(request: FastifyRequest, trustedProxies: BlockList): string[] {
  const principal = request.principal;
  if (principal) return ['token', principal.id, principal.claims.client_id ?? ''];
  return ['address', clientAddress(trustedProxies, request.socket.remoteAddress, request.headers['x-forwarded-for'])];
}

export interface IdempotentCreateOptions<Created> {
  /** The service's Postgres schema, which holds `_idempotency`. */
  schema: string;
  /** The proxies whose X-Forwarded-For names an anonymous caller (TRUST_PROXY); default none. */
  trustedProxies?: BlockList;
  /**
   * What of the body tells two requests apart, when not all of it as sent: a secret must be
   * replaced by its keyed hash, so the stored fingerprint cannot test guesses of it.
   */
  fingerprint?: (body: unknown) => unknown;
  /** The create, with the guard its transaction must run (undefined when the request has no key). */
  create: (guard: CreateGuard<Created> | undefined) => Promise<Created>;
  /** The answer of what was created, as sent. */
  answer: (created: Created) => StoredAnswer;
  /** The answer kept for a replay, when it must say less than the first (a secret shown once); default `answer`. */
  replay?: (created: Created) => StoredAnswer;
}

/** Sends an answer as it was made, its body the JSON text it holds. */
export function sendAnswer(reply: FastifyReply, answer: StoredAnswer): FastifyReply {
  return reply.code(answer.status).headers(answer.headers).type('application/json; charset=utf-8').send(answer.body);
}

/**
 * Runs a create under the request's Idempotency-Key (see the top of this file) and sends its
 * answer: the new one, or the one the key already holds. Without a key it just creates.
 * The route's headers schema (idempotentHeadersSchema) has checked the key's form.
 */
export async function createIdempotently<Created>(request: FastifyRequest, reply: FastifyReply, options: IdempotentCreateOptions<Created>): Promise<FastifyReply> {
  const key = request.headers[IDEMPOTENCY_KEY_HEADER];
  if (typeof key !== 'string') return sendAnswer(reply, options.answer(await options.create(undefined)));
  const claim: Claim = {
    scope: sha256(JSON.stringify([...callerOf(request, options.trustedProxies ?? NO_PROXY), request.method, pathOf(request.url)])),
    key,
    fingerprint: sha256(canonicalJson(options.fingerprint ? options.fingerprint(request.body) : request.body)),
  };
  try {
    const created = await options.create(guardOf(options.schema, claim, options.replay ?? options.answer));
    return sendAnswer(reply, options.answer(created));
  } catch (error) {
    if (error instanceof Replay) return sendAnswer(reply, error.answer);
    throw error;
  }
}
