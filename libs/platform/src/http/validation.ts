import type { FastifySchemaCompiler } from 'fastify';
import { z, type ZodType } from 'zod';
import { RequestValidationError } from './errors.js';

type Validator = (data: unknown) => { value?: unknown; error?: Error };

/** zod's parse, keeping the raw issues (with their input) for the localized error. */
function parseWith(schema: ZodType): Validator {
  return (data) => {
    const result = schema.safeParse(data, { reportInput: true });
    if (result.success) return { value: result.data };
    return { error: new RequestValidationError(result.error.issues) };
  };
}

/**
 * A loose headers schema checks the headers it names and lets the others through. Parsed
 * as it stands, it would copy every header of every request into a new object, which Fastify
 * then keeps beside the raw headers and merges into a third copy on each later read of
 * `request.headers` (its getter, once a validator has given a value). This checks only the
 * named headers, and hands a value back only when the schema changed one (a default or a
 * transform); otherwise `request.headers` stays Node's own object, as on a route without one.
 */
function headersValidator(schema: z.ZodObject): Validator {
  const names = Object.keys(schema.shape);
  const named = z.object(schema.shape);
  return (data) => {
    const headers = data as Record<string, unknown>;
    const given: Record<string, unknown> = {};
    for (const name of names) if (headers[name] !== undefined) given[name] = headers[name];
    const result = named.safeParse(given, { reportInput: true });
    if (!result.success) return { error: new RequestValidationError(result.error.issues) };
    const parsed = result.data as Record<string, unknown>;
    const changed = names.some((name) => parsed[name] !== given[name]);
    return changed ? { value: { ...headers, ...parsed } } : {};
  };
}

/** Whether unknown keys pass through the object schema (`z.looseObject`, `.passthrough()`). */
const isLooseObject = (schema: ZodType): schema is z.ZodObject =>
  schema instanceof z.ZodObject && schema._zod.def.catchall instanceof z.ZodUnknown;

/**
 * Validates requests with zod, keeping the raw issues (with their input) so the error
 * handler can word each one in the caller's language with zod's own locales.
 */
export const validatorCompiler: FastifySchemaCompiler<ZodType> = ({ schema, httpPart }) =>
  httpPart === 'headers' && isLooseObject(schema) ? headersValidator(schema) : parseWith(schema);
