import { createHash, randomBytes } from 'node:crypto';
import type { FederatedProvider } from '@app/contracts';
import { z } from 'zod';

/** The upstream identity providers a person can sign in through, as they appear in URLs. */
export const PROVIDER_IDS = ['google', 'github'] as const;
export type ProviderId = (typeof PROVIDER_IDS)[number];

export const isProviderId = (value: string): value is ProviderId => (PROVIDER_IDS as readonly string[]).includes(value);

/** The credential provider each upstream signs in as (the seed's GOOGLE and GITHUB credentials). */
export const CREDENTIAL_PROVIDER_OF: Record<ProviderId, FederatedProvider> = { google: 'GOOGLE', github: 'GITHUB' };

/**
 * How long one upstream call (discovery, JWKS, token, user API) may take. A hung provider
 * must end the sign-in with an error page while the person still waits, not at the edge's
 * request timeout.
 */
export const UPSTREAM_TIMEOUT_MS = 5_000;

/** What an upstream provider vouches for once a sign-in completed there: always a verified email. */
export interface UpstreamAccount {
  provider: ProviderId;
  /** The account's stable id at the provider (OIDC `sub`, GitHub's numeric user id). */
  subject: string;
  /** Verified by the provider: a provider module never returns an unverified address. */
  email: string;
  name?: string;
  picture?: string;
}

/** The secrets of one upstream round trip, created at the start and checked at the callback. */
export interface UpstreamChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** One upstream identity provider: where to send the browser, and what its callback proves. */
export interface FederationProvider {
  readonly id: ProviderId;
  /** The name on buttons and in messages ("Google"). */
  readonly label: string;
  /** The provider's authorization URL for this round trip (state, nonce, PKCE S256, redirect_uri). */
  authorizationUrl(checks: UpstreamChecks, redirectUri: string): Promise<URL>;
  /**
   * Exchanges the callback's code (with the PKCE verifier and the same redirect_uri) and
   * answers the account it signed in. `callbackParams` is the callback's whole query.
   */
  completeSignIn(callbackParams: URLSearchParams, checks: UpstreamChecks, redirectUri: string): Promise<UpstreamAccount>;
}

/** Why a sign-in through a provider ended; each reason is a message on the error page. */
export type FederationFailure =
  | 'unknownProvider'
  | 'invalidRequest'
  | 'invalidState'
  | 'accessDenied'
  | 'upstreamFailed'
  | 'emailUnverified'
  | 'emailTaken'
  | 'accountDisabled'
  | 'unavailable';

/** HTTP status of the error page for each failure. */
export const FAILURE_STATUS: Record<FederationFailure, number> = {
  unknownProvider: 404,
  invalidRequest: 400,
  invalidState: 400,
  accessDenied: 403,
  upstreamFailed: 502,
  emailUnverified: 403,
  emailTaken: 409,
  accountDisabled: 403,
  unavailable: 503,
};

/** A sign-in through an upstream provider ended without an account; the routes render it as a page. */
export class FederationError extends Error {
  /** The pending authorization request the sign-in was for, once the state named it. */
  requestId?: string;

  constructor(
    readonly failure: FederationFailure,
    /** Why, for the log only: never shown, since it may carry what the provider said. */
    readonly detail: string = failure,
    readonly params: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'FederationError';
  }
}

/** 32 random bytes, base64url: the size RFC 7636 §4.1 recommends for a verifier, used for state and nonce too. */
export const randomToken = () => randomBytes(32).toString('base64url');

/** A fresh state, nonce and PKCE verifier for one upstream round trip. */
export const newUpstreamChecks = (): UpstreamChecks => ({ state: randomToken(), nonce: randomToken(), codeVerifier: randomToken() });

/** RFC 7636 §4.2: the S256 challenge of a verifier. */
export const pkceChallenge = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** identity's own rule for an avatar (http(s), a host name, at most 2048 characters): what it refuses is dropped, not sent. */
const pictureSchema = z.url({ protocol: /^https?$/, hostname: z.regexes.hostname }).max(2048);

/** The provider's picture URL when identity would store it as the avatar, else undefined. */
export const usablePicture = (value: unknown): string | undefined => {
  const parsed = pictureSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
};

/**
 * `fetch` that gives up after `timeoutMs`: every call to an upstream goes through it, so a
 * provider that never answers fails the sign-in instead of holding it. Any failure to get an
 * answer (refused, reset, timed out) is an upstream failure.
 */
export async function fetchUpstream(url: string | URL, init: RequestInit, timeoutMs: number): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new FederationError('upstreamFailed', `${new URL(url).origin} did not answer: ${(error as Error).name}: ${(error as Error).message}`);
  }
}
