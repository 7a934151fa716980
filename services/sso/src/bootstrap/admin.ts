import { randomBytes } from 'node:crypto';
import type { CredentialsClient, IdentityClient, ServiceClients } from '@app/contracts';
import type { App, Logger, ServiceContext } from '@app/platform';
import type { SsoOwnConfig } from '../config.js';

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

/**
 * Whether sso makes the development admin (admin@localhost, its generated password printed
 * once) when no BOOTSTRAP_ADMIN_* is set: in the all-in-one, and in development (split mode
 * on one machine, compose), never with NODE_ENV=production or test.
 */
const generatesDevAdmin = (config: { ALL_IN_ONE: boolean; NODE_ENV: string }) => config.ALL_IN_ONE || config.NODE_ENV === 'development';


export interface AdminBootstrapOptions extends Pick<ServiceContext<SsoOwnConfig>, 'mode' | 'config' | 'logger' | 'addReadinessCheck'> {
  clients: Pick<ServiceClients, 'identity' | 'credentials'>;
  /** Where a generated development admin password is shown (default: the console, once). */
  announce?: (message: string) => void;
}

/**
 * Makes sure the first administrator exists, once sso listens (BOOTSTRAP_ADMIN_*, or the
 * development admin), and holds readiness until it does; logs how to set one otherwise.
 */
export function registerAdminBootstrap(app: App, options: AdminBootstrapOptions): void {
  const { config, logger, clients } = options;
  const email = config.BOOTSTRAP_ADMIN_EMAIL ?? (generatesDevAdmin(config) ? DEV_ADMIN_EMAIL : undefined);
  if (!email) {
    logger.info('no bootstrap admin: set BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD to have sso create the first admin');
    return;
  }
  let bootstrap: ReturnType<typeof startAdminBootstrap> | undefined;
  let adminPresent = false;
  // Ready once the first admin can sign in. Required in the all-in-one, whose one probe
  // says the platform serves every flow; in split mode sso's own probe leaves it out (the
  // bootstrap needs identity and credentials, which need sso's JWKS, served once ready)
  // and only reports it, so the platform's aggregated readiness waits for it.
  options.addReadinessCheck('bootstrapAdmin', {
    required: options.mode === 'all-in-one',
    probe: async () => {
      if (!adminPresent) throw new Error('the bootstrap admin does not exist yet');
      return {};
    },
  });
  // Once listening: in split mode identity and credentials verify sso's system token
  // against sso's JWKS, which it serves only then. The bootstrap retries until they answer.
  app.addHook('onListen', async () => {
    bootstrap ??= startAdminBootstrap({
      identities: clients.identity,
      credentials: clients.credentials,
      logger,
      email,
      password: config.BOOTSTRAP_ADMIN_PASSWORD,
      announce: options.announce ?? ((message) => console.log(message)),
    });
    void bootstrap.done.then((outcome) => {
      adminPresent = outcome === 'created' || outcome === 'exists';
    });
  });
  app.addHook('onClose', async () => bootstrap?.stop());
}
