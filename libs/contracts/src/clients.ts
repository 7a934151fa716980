import type {
  FederatedCreateRequest,
  FederatedCredential,
  FederatedLookupRequest,
  IdentityLookupRequest,
  InternalIdentity,
  VerifyApiKeyResponse,
  VerifyPasswordRequest,
  VerifyPasswordResponse,
} from './internal.js';
import type { ServiceReadiness } from './services.js';
import type { ServiceName } from './registry.js';

/**
 * The typed clients one service uses to call another. Each has two implementations with one
 * behaviour: in-process (the all-in-one, a plain function call into the owning service) and
 * over HTTP (split mode: undici with keep-alive and timeouts, against the owner's internal
 * routes). Callers never know which one they hold.
 */

/**
 * Whose authority a call carries over HTTP: the bearer of the request being served,
 * forwarded; or, when absent, the calling service's own short-lived system token. In-process
 * calls are trusted and ignore it.
 */
export interface CallAuthority {
  authorization?: string;
}

export interface IdentityCreateRequest {
  name: string;
  email: string;
  roles: string[];
  /** An http(s) picture URL (an upstream account's), at most 2048 characters. */
  avatar?: string;
}

/** identity, as other services see it. */
export interface IdentityClient {
  /** The identity by email (any case) or id; undefined when there is none. */
  lookup(query: IdentityLookupRequest, authority?: CallAuthority): Promise<InternalIdentity | undefined>;
  /** Creates an identity with roles (the bootstrap admin); undefined when the email is taken. */
  create(input: IdentityCreateRequest): Promise<InternalIdentity | undefined>;
}

/** credentials, as other services see it. */
export interface CredentialsClient {
  /**
   * Checks a LOCAL password in constant time whether or not the account exists. Given an
   * identity id it reads no identity: the caller has already read it.
   */
  verifyPassword(request: VerifyPasswordRequest): Promise<VerifyPasswordResponse>;
  /** Resolves an API key to its identity and that identity's roles. */
  verifyApiKey(apiKey: string): Promise<VerifyApiKeyResponse>;
  /** Gives an identity its LOCAL password; false when it already has one (nothing changed). */
  createLocalPassword(identityId: string, password: string): Promise<boolean>;
  /** The GOOGLE or GITHUB credential holding this upstream subject; undefined when none does. */
  findFederated(request: FederatedLookupRequest): Promise<FederatedCredential | undefined>;
  /**
   * Links an upstream subject to an identity (a new GOOGLE or GITHUB credential); undefined
   * when the subject is linked already (nothing changed).
   */
  createFederated(request: FederatedCreateRequest): Promise<FederatedCredential | undefined>;
}

/** A service's own readiness, as the health report reads it. */
export interface ReadinessClient {
  readiness(service: ServiceName): Promise<ServiceReadiness>;
}

/** Every typed client a service can be given. */
export interface ServiceClients extends ReadinessClient {
  readonly identity: IdentityClient;
  readonly credentials: CredentialsClient;
}

/** A cross-service call failed for reasons that say nothing about its input (down, timed out, 5xx). */
export class UpstreamError extends Error {
  constructor(
    readonly service: string,
    reason: string,
  ) {
    super(`${service}: ${reason}`);
    this.name = 'UpstreamError';
  }
}
