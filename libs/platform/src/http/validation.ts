import type { FastifySchemaCompiler } from 'fastify';
import type { ZodType } from 'zod';
import { RequestValidationError } from './errors.js';

/**
 * Validates requests with zod, keeping the raw issues (with their input) so the error
 * handler can word each one in the caller's language with zod's own locales.
 */
export const validatorCompiler: FastifySchemaCompiler<ZodType> =
  ({ schema }) =>
  (data) => {
    const result = schema.safeParse(data, { reportInput: true });
    if (result.success) return { value: result.data };
    return { error: new RequestValidationError(result.error.issues) };
  };
