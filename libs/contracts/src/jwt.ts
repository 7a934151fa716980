import { z } from 'zod';

/** Claims of an access token signed by sso and verified by the gateway and every service. */
export const accessTokenClaimsSchema = z.object({
  iss: z.string(),
  aud: z.union([z.string(), z.array(z.string())]),
  sub: z.string().min(1),
  iat: z.number().int(),
  exp: z.number().int(),
  jti: z.string().min(1),
  roles: z.array(z.string()).default([]),
});

export type AccessTokenClaims = z.infer<typeof accessTokenClaimsSchema>;
