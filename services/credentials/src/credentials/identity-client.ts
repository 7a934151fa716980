import { INTERNAL_ROUTES, internalIdentitySchema, type InternalIdentity } from '@app/contracts';
import { identityUnavailable } from './errors.js';

/** How long the identity service may take before a request that needs it answers 503. */
const IDENTITY_TIMEOUT_MS = 5_000;

/**
 * The identity service, over HTTP. Every call carries the bearer token of the request being
 * served: credentials holds no standing privilege of its own, and asks identity with
 * exactly the authority of its caller (an admin's or a system token for creating a
 * credential, sso's system token for the internal verifications).
 */
export interface IdentityClient {
  /** Whether the identity exists, read with the caller's token through identity's public route. */
  exists(id: string, authorization: string): Promise<boolean>;
  /** The identity by email or id through identity's internal route (system tokens), or null. */
  lookup(by: { email: string } | { id: string }, authorization: string): Promise<InternalIdentity | null>;
}

export function createIdentityClient(baseUrl: string): IdentityClient {
  const call = async (path: string, init: RequestInit): Promise<Response> => {
    try {
      return await fetch(new URL(path, baseUrl), { ...init, signal: AbortSignal.timeout(IDENTITY_TIMEOUT_MS) });
    } catch {
      throw identityUnavailable();
    }
  };
  return {
    exists: async (id, authorization) => {
      const response = await call(`/api/v1/identity/${encodeURIComponent(id)}`, { headers: { authorization } });
      await response.body?.cancel();
      if (response.status === 200) return true;
      if (response.status === 404) return false;
      throw identityUnavailable();
    },
    lookup: async (by, authorization) => {
      const response = await call(INTERNAL_ROUTES.identityLookup, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify(by),
      });
      if (response.status === 404) {
        await response.body?.cancel();
        return null;
      }
      if (response.status !== 200) {
        await response.body?.cancel();
        throw identityUnavailable();
      }
      const parsed = internalIdentitySchema.safeParse(await response.json().catch(() => undefined));
      if (!parsed.success) throw identityUnavailable();
      return parsed.data;
    },
  };
}
