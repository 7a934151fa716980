import { z } from 'zod';

/** Claims of an access token signed by sso and verified by the gateway and every service. */
export const accessTokenClaimsSchema = z.object({
  iss: z.string(),
  aud: z.union([z.string(), z.array(z.string())]),
  sub: z.string().min(1),
  iat: z.number().int(),
  exp: z.number().int(),
  jti: z.string().min(1),
  /** The sign-in the token belongs to (a refresh-token family, or one client_credentials grant): revoked as one. */
  sid: z.string().min(1).optional(),
  /** client_credentials: the API_KEY credential the token was granted to; authorization_code: the registered client. */
  client_id: z.string().min(1).optional(),
  /** authorization_code only: the scopes granted, space-separated (RFC 9068 §2.2.3). */
  scope: z.string().optional(),
  roles: z.array(z.string()).default([]),
});

export type AccessTokenClaims = z.infer<typeof accessTokenClaimsSchema>;
