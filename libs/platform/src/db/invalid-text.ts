/**
 * SQLSTATEs Postgres answers when a value's text cannot be stored: 22021 (a byte sequence
 * invalid in UTF-8, such as U+0000) and 22P05 (a character it cannot translate, such as
 * `\u0000` in jsonb). Both mean the input was bad, not the database.
 */
const INVALID_TEXT = new Set(['22021', '22P05']);

/** The SQLSTATE an error carries: node-postgres and PGlite set `code`; Prisma nests the driver's under `meta`. */
function sqlStateOf(error: unknown): string | undefined {
  const candidate = error as { code?: unknown; meta?: { driverAdapterError?: { cause?: { code?: unknown } } } } | undefined;
  const nested = candidate?.meta?.driverAdapterError?.cause?.code;
  if (typeof nested === 'string') return nested;
  return typeof candidate?.code === 'string' ? candidate.code : undefined;
}

/**
 * Whether the database refused a value for its characters. The HTTP layer rejects such input
 * before any handler runs; this is the second guard, for a value that reached a query anyway.
 */
export function isInvalidTextError(error: unknown): boolean {
  let current: unknown = error;
  for (let hops = 0; current !== undefined && current !== null && hops < 5; hops++) {
    const state = sqlStateOf(current);
    if (state !== undefined && INVALID_TEXT.has(state)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
