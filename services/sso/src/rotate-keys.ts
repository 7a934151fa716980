/**
 * `npm run rotate-keys`: asks the running platform to rotate sso's signing key, e.g. after a
 * suspected key leak. It calls POST /api/v1/sso/keys/rotate as an admin, so the key lands in the
 * database the platform really uses (never in a second one the command would open itself), and
 * prints the new key's kid and when it starts signing. Tokens issued before keep working.
 *
 * Environment (read here only: this command is a client of the platform, not a part of it):
 * - PLATFORM_URL: where the platform answers (the gateway or the all-in-one); default http://127.0.0.1:3000.
 * - ADMIN_TOKEN: an admin's access token; or else
 * - ADMIN_EMAIL and ADMIN_PASSWORD: an admin's sign-in, exchanged for a token (password grant).
 * Exits 1 with a message when no platform answers, the sign-in fails or the caller is no admin.
 */
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { ROTATE_KEYS_PATH } from './keys/routes.js';
import { TOKEN_PATH } from './tokens/routes.js';

const DEFAULT_PLATFORM_URL = 'http://127.0.0.1:3000';
/** A platform that does not answer within this long is treated as absent. */
const REQUEST_TIMEOUT_MS = 10_000;

const envSchema = z
  .object({
    PLATFORM_URL: z.url().default(DEFAULT_PLATFORM_URL),
    ADMIN_TOKEN: z.string().min(1).optional(),
    ADMIN_EMAIL: z.string().min(1).optional(),
    ADMIN_PASSWORD: z.string().min(1).optional(),
  })
  .refine((env) => env.ADMIN_TOKEN !== undefined || (env.ADMIN_EMAIL !== undefined && env.ADMIN_PASSWORD !== undefined), {
    message: 'set ADMIN_TOKEN, or ADMIN_EMAIL and ADMIN_PASSWORD, to an admin\'s credentials',
  });

export type RotateKeysEnv = z.infer<typeof envSchema>;

/** A failure the command explains to its user in one line. */
class RotateKeysError extends Error {}

async function call(url: string, init: RequestInit): Promise<{ status: number; body: Record<string, unknown> }> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (error) {
    const reason = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    throw new RotateKeysError(`no platform answers at ${new URL(url).origin} (${reason}); start it, or set PLATFORM_URL to where it runs`);
  }
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    // Not JSON: whatever answers there is not the platform; the status says enough.
  }
  return { status: response.status, body };
}

const describe = (body: Record<string, unknown>) => String(body.error_description ?? body.detail ?? body.title ?? 'no details');

async function adminToken(env: RotateKeysEnv): Promise<string> {
  if (env.ADMIN_TOKEN) return env.ADMIN_TOKEN;
  const { status, body } = await call(new URL(TOKEN_PATH, env.PLATFORM_URL).toString(), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username: env.ADMIN_EMAIL!, password: env.ADMIN_PASSWORD! }),
  });
  if (status !== 200 || typeof body.access_token !== 'string') throw new RotateKeysError(`signing in as ${env.ADMIN_EMAIL} failed (${status}): ${describe(body)}`);
  return body.access_token;
}

/** Rotates the running platform's signing key; answers the new kid and its activation time. */
export async function rotateKeys(env: RotateKeysEnv): Promise<{ kid: string; activatesAt: string }> {
  const token = await adminToken(env);
  const { status, body } = await call(new URL(ROTATE_KEYS_PATH, env.PLATFORM_URL).toString(), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  if (status !== 201) throw new RotateKeysError(`the platform refused to rotate the key (${status}): ${describe(body)}`);
  return { kid: String(body.kid), activatesAt: String(body.activatesAt) };
}

async function main(): Promise<number> {
  // eslint-disable-next-line no-restricted-properties -- a client of the platform, not part of it: its own four variables, read once here
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) {
    console.error(`rotate-keys: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`).join('; ')}`);
    return 2;
  }
  try {
    const { kid, activatesAt } = await rotateKeys(parsed.data);
    console.log(`rotate-keys: new signing key ${kid} is published now and signs from ${activatesAt}`);
    return 0;
  } catch (error) {
    if (!(error instanceof RotateKeysError)) throw error;
    console.error(`rotate-keys: ${error.message}`);
    return 1;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exitCode = await main();
