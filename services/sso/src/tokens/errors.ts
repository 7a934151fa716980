import { DEPENDENCY_RETRY_AFTER_SECONDS } from '@app/platform';

/**
 * The token and revocation endpoints answer errors as RFC 6749 §5.2 says, not as problem+json:
 * OAuth clients read `error` and `error_description`.
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'unsupported_token_type'
  | 'slow_down'
  | 'temporarily_unavailable'
  | 'insufficient_scope'
  | 'server_error';

export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly statusCode: number = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }

  get body() {
    return { error: this.error, error_description: this.description };
  }
}

/** One answer for a wrong password and for an unknown user, so neither can be told apart. */
export const invalidCredentials = () => new OAuthError('invalid_grant', 'The username or password is incorrect.');

export const invalidRefreshToken = () => new OAuthError('invalid_grant', 'The refresh token is invalid, expired, revoked or already used.');

/** RFC 6749 §5.2: 401, and a challenge for the scheme the client may authenticate with. */
export const invalidClient = (description = 'Client authentication failed.') =>
  new OAuthError('invalid_client', description, 401, { 'www-authenticate': 'Basic realm="api-platform", charset="UTF-8"' });

export const invalidRequest = (description: string) => new OAuthError('invalid_request', description);

/**
 * An authenticated caller that may not do this (RFC 7662 §2.3 points at RFC 6750 §3.1:
 * 403 `insufficient_scope`); `role` is what an admin must give its identity.
 */
export const insufficientRole = (role: string) =>
  new OAuthError('insufficient_scope', `The caller is authenticated but its identity does not hold the ${role} role; an admin grants it to resource servers.`, 403);

/** Failed attempts crossed a throttle; `retryAfter` in seconds. */
export const tooManyAttempts = (retryAfter: number) =>
  new OAuthError('slow_down', `Too many failed attempts; retry after ${retryAfter} seconds.`, 429, { 'retry-after': String(retryAfter) });

/**
 * A dependency (identity, credentials, the database, the cache) could not answer; nothing about
 * the caller's input is known yet. 503 with the platform's `Retry-After`, as every route answers an outage.
 */
export const upstreamUnavailable = () =>
  new OAuthError('temporarily_unavailable', 'The sign-in service is temporarily unavailable; retry shortly.', 503, {
    'retry-after': String(DEPENDENCY_RETRY_AFTER_SECONDS),
  });

/** A fault of ours, not of a dependency (RFC 6749 §4.1.2.1's `server_error`, as the token endpoint answers it too). */
export const serverError = () => new OAuthError('server_error', 'Something went wrong on our side.', 500);
