import { positiveInt, secret, together, upstreamUrl, wholeNumber, type SharedConfig } from '@app/platform';
import { z } from 'zod';

const clientId = z.string().min(1).max(512).optional();

/** sso's own variables, parsed beside the shared ones: token lifetimes, signing keys, the first administrator, federation. */
export const ssoConfig = z
  .object({
    /** Lifetime of an access token sso signs. */
    ACCESS_TOKEN_TTL_SECONDS: positiveInt('a whole number of seconds, at least 1').default(900),
    /** Lifetime of a refresh token; each use replaces it with a new one of the same lifetime. */
    REFRESH_TOKEN_TTL_SECONDS: positiveInt('a whole number of seconds, at least 1').default(2_592_000),
    /**
     * Encrypts sso's private signing keys at rest (AES-256-GCM, key derived with HKDF). Unset
     * keeps them in plain JWK form, protected only by the database's own access control.
     */
    SSO_KEY_ENCRYPTION_SECRET: secret(z.string().min(32, { error: 'expected at least 32 characters of secret' }).optional()),
    /** How often sso replaces its signing key (a new key, the old one published until its tokens expire). */
    SSO_KEY_ROTATION_INTERVAL_SECONDS: positiveInt('a whole number of seconds, at least 1').default(2_592_000),
    /** How long a new key is published before sso signs with it; must exceed JWKS_COOLDOWN_SECONDS. */
    SSO_KEY_ACTIVATION_DELAY_SECONDS: wholeNumber('a whole number of seconds, 0 or more', 0).default(60),
    /** The first administrator, created once with a LOCAL password when it does not exist. */
    BOOTSTRAP_ADMIN_EMAIL: z.email({ pattern: z.regexes.html5Email, error: 'expected an email address' }).optional(),
    BOOTSTRAP_ADMIN_PASSWORD: secret(z.string().min(12, { error: 'expected a password of at least 12 characters' }).max(1024).optional()),
    /**
     * Sign-in with Google (OpenID Connect): the OAuth client registered in Google's console,
     * whose redirect URI is `${JWT_ISSUER}/api/v1/sso/federation/google/callback`. Both set
     * turns it on; neither leaves it off.
     */
    GOOGLE_CLIENT_ID: clientId,
    GOOGLE_CLIENT_SECRET: secret(z.string().min(1).max(512).optional()),
    /** Where Google's OpenID configuration is discovered (`/.well-known/openid-configuration` under it). */
    GOOGLE_ISSUER: upstreamUrl.default('https://accounts.google.com'),
    /**
     * Sign-in with GitHub (OAuth 2 and its user API): the OAuth app's client, whose callback URL
     * is `${JWT_ISSUER}/api/v1/sso/federation/github/callback`. Both set turns it on.
     */
    GITHUB_CLIENT_ID: clientId,
    GITHUB_CLIENT_SECRET: secret(z.string().min(1).max(512).optional()),
    /** GitHub's endpoints; overridable for GitHub Enterprise Server (and tests). */
    GITHUB_AUTHORIZE_URL: upstreamUrl.default('https://github.com/login/oauth/authorize'),
    GITHUB_TOKEN_URL: upstreamUrl.default('https://github.com/login/oauth/access_token'),
    GITHUB_API_URL: upstreamUrl.default('https://api.github.com'),
  })
  .superRefine(together('GOOGLE_CLIENT_ID', 'GOOGLE_CLIENT_SECRET'))
  .superRefine(together('GITHUB_CLIENT_ID', 'GITHUB_CLIENT_SECRET'))
  .superRefine(together('BOOTSTRAP_ADMIN_EMAIL', 'BOOTSTRAP_ADMIN_PASSWORD'));

/** sso's own variables, parsed. */
export type SsoOwnConfig = z.output<typeof ssoConfig>;

/** sso's configuration: the shared variables and its own. */
export type SsoConfig = SharedConfig & SsoOwnConfig;
