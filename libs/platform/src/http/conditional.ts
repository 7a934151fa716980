import { hash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError, problemSchema } from './errors.js';

/*
 * Conditional requests on records (RFC 9110 §8.8.3, §13): every read of one record and every
 * create or update answers a strong `ETag`; a read whose `If-None-Match` names it is a 304;
 * a write whose `If-Match` (or `If-None-Match`) does not hold is a 412 and changes nothing.
 *
 * The tag is a hash of the record's JSON as its service serializes it, not of its updatedAt:
 * updatedAt is kept to the millisecond in the JSON (two quick writes can share one) and does
 * not move when a credential's lastUsedAt does, so it cannot promise "same tag, same bytes".
 * The hash can: it is computed from the string a read already has in hand (a cached record is
 * stored serialized), in about 0.6 µs for a record of 200 bytes, with no serialization added.
 * The same tag is sent whatever the Content-Encoding, as @fastify/etag and Express do: the
 * tag names the record's JSON, and `Vary: Accept-Encoding` keeps caches' copies apart.
 */

/**
 * Tags of recent representations. A cached record is the same string on every hit (the near
 * cache hands out one instance, whose hash V8 keeps), so its SHA-256 is taken once, not per
 * read: about 3% of a cached read's time otherwise. Only small ones, and only so many, are
 * kept (at most 1,024 x 4 KiB); a tag is a pure function of the string, so a kept one is never stale.
 */
const REMEMBERED_TAGS = 1024;
const REMEMBERED_LENGTH_MAX = 4096;
const rememberedTags = new Map<string, string>();

/** A strong entity tag: the first 132 bits of the SHA-256 of `representation`, base64url, quoted. */
export function entityTag(representation: string): string {
  const remembered = rememberedTags.get(representation);
  if (remembered !== undefined) return remembered;
  const tag = `"${hash('sha256', representation, 'base64url').slice(0, 22)}"`;
  if (representation.length <= REMEMBERED_LENGTH_MAX) {
    if (rememberedTags.size >= REMEMBERED_TAGS) rememberedTags.delete(rememberedTags.keys().next().value!);
    rememberedTags.set(representation, tag);
  }
  return tag;
}

interface ParsedTag {
  /** The quoted opaque tag, as sent. */
  opaque: string;
  weak: boolean;
}

/** One element of an entity-tag list, empty elements before it allowed (RFC 9110 §5.6.1.2). */
const LIST_ELEMENT = /(?:[ \t]*,)*[ \t]*(W\/)?("[\x21\x23-\x7e\x80-\xff]*")[ \t]*(?:,[ \t]*|$)/y;

/** `*` or the tags of an `If-Match` / `If-None-Match` header; anything else is a 400. */
function parseEntityTags(value: string | string[], header: string): '*' | ParsedTag[] {
  const text = Array.isArray(value) ? value.join(', ') : value;
  if (text.trim() === '*') return '*';
  const tags: ParsedTag[] = [];
  const element = new RegExp(LIST_ELEMENT);
  while (element.lastIndex < text.length) {
    const match = element.exec(text);
    if (!match) throw invalidEntityTag(header);
    tags.push({ opaque: match[2]!, weak: match[1] !== undefined });
  }
  if (tags.length === 0) throw invalidEntityTag(header);
  return tags;
}

/** The request's If-Match or If-None-Match header is not `*` nor a list of entity tags (400). */
export const invalidEntityTag = (header: string) => new AppError('PLATFORM_INVALID_ENTITY_TAG', 400, 'error.invalidEntityTag', { header });

/** The write's precondition does not hold for the record as it is now; nothing was changed (412). */
export const preconditionFailed = () => new AppError('PLATFORM_PRECONDITION_FAILED', 412, 'error.preconditionFailed');

/** Weak comparison (If-None-Match): the opaque tags match, whichever is weak. */
const namesWeakly = (tags: '*' | ParsedTag[], current: string) => tags === '*' || tags.some((tag) => tag.opaque === current);
/** Strong comparison (If-Match): a weak tag never matches. */
const namesStrongly = (tags: '*' | ParsedTag[], current: string) => tags === '*' || tags.some((tag) => !tag.weak && tag.opaque === current);

/**
 * Whether a read may answer 304: its `If-None-Match` names `current` (or is `*`, the record
 * exists). Only GET and HEAD are answered 304.
 */
export function isNotModified(request: FastifyRequest, current: string): boolean {
  const header = request.headers['if-none-match'];
  if (header === undefined || (request.method !== 'GET' && request.method !== 'HEAD')) return false;
  return namesWeakly(parseEntityTags(header, 'If-None-Match'), current);
}

/**
 * What a write's conditional headers ask of the record's current tag, or undefined when it has
 * none: `If-Match` must name it (strongly; `*` any existing record), `If-None-Match` must not.
 * Parsed before any work, so a malformed header is a 400 whether or not the record exists.
 * The repository calls it on the row it holds locked, so the check and the write are atomic.
 */
export type Precondition = (current: string) => boolean;

export function writePrecondition(request: FastifyRequest): Precondition | undefined {
  const { 'if-match': ifMatch, 'if-none-match': ifNoneMatch } = request.headers;
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  const required = ifMatch === undefined ? undefined : parseEntityTags(ifMatch, 'If-Match');
  const excluded = ifNoneMatch === undefined ? undefined : parseEntityTags(ifNoneMatch, 'If-None-Match');
  return (current) => (required === undefined || namesStrongly(required, current)) && (excluded === undefined || !namesWeakly(excluded, current));
}

/**
 * Answers a read of one record: `ETag: tag` and `payload`, or a 304 with the tag and no body
 * when the client's copy is current (isNotModified).
 */
export function sendTagged(request: FastifyRequest, reply: FastifyReply, tag: string, payload: unknown): FastifyReply {
  reply.header('etag', tag);
  if (isNotModified(request, tag)) return reply.code(304).send();
  return reply.send(payload);
}

/** The `Location` of a record created in `collection` (an absolute path such as /api/v1/products). */
export const recordLocation = (collection: string, id: string) => `${collection.replace(/\/$/, '')}/${encodeURIComponent(id)}`;

/*
 * Their OpenAPI side: response headers ride on the response schema's metadata (`headers`),
 * which @fastify/swagger turns into the response's header objects; the kit's document
 * finishing (openapi.ts) then points each at its one entry of `components.headers`.
 */
const ETAG_HEADER = {
  ETag: { type: 'string', description: 'Strong validator of the record: send it as If-None-Match to read, as If-Match to write only that version' },
};
const LOCATION_HEADER = { Location: { type: 'string', description: 'Path of the new record (GET it there)' } };

/** A 200 with a record (or the record after an update): documents its ETag. */
export const taggedResponse = <S extends z.ZodType>(schema: S): S => schema.meta({ headers: ETAG_HEADER });
/** A 201 with the new record: documents its ETag and Location. */
export const createdResponse = <S extends z.ZodType>(schema: S): S => schema.meta({ headers: { ...ETAG_HEADER, ...LOCATION_HEADER } });

/** The 304 of a read of one record. */
export const notModifiedResponse = z
  .null()
  .describe('Not modified: If-None-Match names the current ETag; no body')
  .meta({ headers: ETAG_HEADER });

/** The 412 of a conditional write, typed as the problem it is. */
export const preconditionFailedResponse = {
  description: 'Precondition failed: If-Match names another version of the record (or If-None-Match the current one); nothing was changed',
  content: { 'application/problem+json': { schema: problemSchema } },
};
