import { randomBytes } from 'node:crypto';
import type { CredentialsClient, IdentityClient } from '@app/contracts';
import type { Logger } from '@app/platform';

/** The development administrator of the all-in-one mode when no bootstrap admin is configured. */
export const DEV_ADMIN_EMAIL = 'admin@localhost';

export interface BootstrapAdminOptions {
  identities: IdentityClient;
  credentials: CredentialsClient;
  logger: Logger;
  email: string;
  /** The configured password, or undefined to generate one (all-in-one development mode). */
  password?: string;
  /** Shows a generated password to the operator, once; never through the logger. */
  announce: (message: string) => void;
}

export type BootstrapOutcome = 'created' | 'exists' | 'refused';

/**
 * Creates the first administrator, once: an identity with role `admin` and its LOCAL
 * password. Idempotent: an existing admin is left alone (its password is never reset), and
 * when two replicas race, the loser finds the winner's identity. An existing identity
 * *without* the admin role is never promoted: anyone can register an email publicly, and
 * doing so before the first start must not make them an administrator.
 */
export async function bootstrapAdmin(options: BootstrapAdminOptions): Promise<BootstrapOutcome> {
  const { identities, credentials, logger, email } = options;
  let identity = await identities.lookup({ email });
  if (identity && !identity.roles.includes('admin')) {
    logger.error({ email }, 'bootstrap admin: an identity with this email exists without the admin role; it is not promoted');
    return 'refused';
  }
  if (identity && !options.password) return 'exists';
  const password = options.password ?? randomBytes(18).toString('base64url');
  const created = !identity;
  identity ??= await identities.create({ name: 'Administrator', email, roles: ['admin'] });
  identity ??= await identities.lookup({ email });
  if (!identity) throw new Error('bootstrap admin: the identity could not be created or found');
  const credentialCreated = (await credentials.createLocalPassword({ identityId: identity.id, password })) !== undefined;
  if (credentialCreated) logger.info({ email, identityId: identity.id }, 'bootstrap admin created');
  if (credentialCreated && !options.password) options.announce(adminAnnouncement(email, password, identity.id));
  return created || credentialCreated ? 'created' : 'exists';
}

/**
 * The generated password, as a person reads it on the terminal: plain lines set apart from
 * the log, the email and password on lines of their own, and how to replace the password.
 */
export function adminAnnouncement(email: string, password: string, identityId: string): string {
  const rule = '-'.repeat(72);
  return [
    '',
    `  ${rule}`,
    '  Development administrator created. The password is shown once: store it now.',
    '',
    `    email:     ${email}`,
    `    password:  ${password}`,
    '',
    '  To change it, sign in (POST /api/v1/sso/token, grant_type=password), find its LOCAL',
    `  credential (GET /api/v1/credentials?identity_id=${identityId}), then send`,
    '  PUT /api/v1/credentials/<credential id> with {"secret": "<new password>"}.',
    '  To choose the first admin yourself, set BOOTSTRAP_ADMIN_EMAIL and',
    '  BOOTSTRAP_ADMIN_PASSWORD before the first start.',
    `  ${rule}`,
    '',
  ].join('\n');
}

/**
 * Longest pause between two attempts. Short: readiness waits for the admin, and identity and
 * credentials usually answer a few seconds after sso at a start; an attempt is one look-up.
 */
const RETRY_MAX_MS = 2_000;
/** While it keeps failing, one warning per this many attempts (about a minute apart at the longest pause). */
const RETRIES_PER_WARNING = 30;

/**
 * Runs the bootstrap until it succeeds: identity and credentials may start after sso, and
 * they verify sso's system token against its JWKS, which sso serves only once it listens.
 */
export function startAdminBootstrap(options: BootstrapAdminOptions): { stop(): void; done: Promise<BootstrapOutcome | undefined> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  const done = (async () => {
    for (let attempt = 1; !stopped; attempt++) {
      try {
        return await bootstrapAdmin(options);
      } catch (error) {
        // Stopped meanwhile: the failure is the shutdown closing the database under it.
        if (stopped) break;
        const delayMs = Math.min(250 * 2 ** (attempt - 1), RETRY_MAX_MS);
        if (attempt === 1 || attempt % RETRIES_PER_WARNING === 0) options.logger.warn({ err: error, retryInMs: delayMs, attempt }, 'bootstrap admin: not yet possible; retrying');
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, delayMs);
          timer.unref();
        });
      }
    }
    return undefined;
  })();
  return {
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
    },
    done,
  };
}
