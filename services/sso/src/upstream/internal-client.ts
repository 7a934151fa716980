import {
  INTERNAL_ROUTES,
  internalIdentitySchema,
  verifyApiKeyResponseSchema,
  verifyPasswordResponseSchema,
  type InternalIdentity,
  type VerifyApiKeyResponse,
  type VerifyPasswordResponse,
} from '@app/contracts';
import { z } from 'zod';

/** identity or credentials did not answer as their contract says (down, timed out, or a 5xx). */
export class UpstreamError extends Error {
  constructor(service: string, reason: string) {
    super(`${service}: ${reason}`);
    this.name = 'UpstreamError';
  }
}

/** identity's public create route: with a system token it may set roles (the bootstrap admin's). */
export const IDENTITY_PATH = '/api/v1/identity';
/** credentials' public create route, which takes admin or system tokens only. */
export const CREDENTIALS_PATH = '/api/v1/credentials';

export interface IdentityCreateRequest {
  name: string;
  email: string;
  roles: string[];
}

/** Read and create answers are arrays of records (DESIGN.md); extra fields are ignored. */
const createdIdentitySchema = z.array(internalIdentitySchema).length(1).transform((records) => records[0]!);
const createdCredentialSchema = z.array(z.object({ id: z.uuid() })).length(1);

/**
 * sso's client of the identity and credentials services: their internal routes (system token
 * only, never routed by the gateway), and their public create routes for the bootstrap admin.
 */
export interface UpstreamClient {
  verifyPassword(email: string, password: string): Promise<VerifyPasswordResponse>;
  verifyApiKey(apiKey: string): Promise<VerifyApiKeyResponse>;
  lookupIdentity(query: { email: string } | { id: string }): Promise<InternalIdentity | undefined>;
  /** Creates an identity; `undefined` when its email is taken. */
  createIdentity(input: IdentityCreateRequest): Promise<InternalIdentity | undefined>;
  /** Gives an identity its LOCAL password; false when it already has one (nothing changed). */
  createLocalCredential(identityId: string, password: string): Promise<boolean>;
}

export interface UpstreamClientOptions {
  identityUrl: string;
  credentialsUrl: string;
  systemToken: () => Promise<string>;
  /** Per call; a hung upstream must not hold a token request longer than this. */
  timeoutMs: number;
}

export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const call = async <T>(service: string, base: string, path: string, body: unknown, schema: z.ZodType<T>, accept: number[]) => {
    let response: Response;
    try {
      response = await fetch(new URL(path, base), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${await options.systemToken()}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
    } catch (error) {
      throw new UpstreamError(service, `unreachable (${(error as Error).name})`);
    }
    if (!accept.includes(response.status)) {
      await response.body?.cancel();
      throw new UpstreamError(service, `answered ${response.status} on ${path}`);
    }
    if (response.status >= 300) {
      await response.body?.cancel();
      return { status: response.status, data: undefined };
    }
    const parsed = schema.safeParse(await response.json().catch(() => undefined));
    if (!parsed.success) throw new UpstreamError(service, `answered an unexpected body on ${path}`);
    return { status: response.status, data: parsed.data };
  };

  return {
    verifyPassword: async (email, password) =>
      (await call('credentials', options.credentialsUrl, INTERNAL_ROUTES.verifyPassword, { email, password }, verifyPasswordResponseSchema, [200]))
        .data!,
    verifyApiKey: async (apiKey) =>
      (await call('credentials', options.credentialsUrl, INTERNAL_ROUTES.verifyApiKey, { apiKey }, verifyApiKeyResponseSchema, [200])).data!,
    lookupIdentity: async (query) =>
      (await call('identity', options.identityUrl, INTERNAL_ROUTES.identityLookup, query, internalIdentitySchema, [200, 404])).data,
    createIdentity: async (input) =>
      (await call('identity', options.identityUrl, IDENTITY_PATH, input, createdIdentitySchema, [201, 422])).data,
    createLocalCredential: async (identityId, password) => {
      const { status } = await call(
        'credentials',
        options.credentialsUrl,
        CREDENTIALS_PATH,
        { identity_id: identityId, provider: 'LOCAL', secret: password },
        createdCredentialSchema,
        [201, 422],
      );
      return status === 201;
    },
  };
}
