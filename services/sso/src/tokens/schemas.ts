import { z } from 'zod';

/** An API key client's authentication in the body (client_secret_post), at the token and introspection endpoints alike. */
const clientAuthenticationFields = {
  client_id: z.string().optional().describe('With an API key: optional, its credential id or its identity id; a registered client: its id'),
  client_secret: z.string().optional().describe('An API key, or a confidential client\'s secret (or send it with HTTP Basic, never both)'),
};

/** RFC 6749 §4.3.2 / §6 / §4.4.2 parameters, as a form or a JSON object. Described for the docs; parsed by `parseGrant`. */
export const tokenRequestSchema = z
  .object({
    grant_type: z.string().describe('authorization_code, password, refresh_token or client_credentials'),
    code: z.string().optional().describe('authorization_code grant: the code the authorization endpoint gave'),
    redirect_uri: z.string().optional().describe('authorization_code grant: the redirect_uri the code was requested with'),
    code_verifier: z.string().optional().describe('authorization_code grant: the PKCE verifier (RFC 7636)'),
    username: z.string().optional().describe('password grant: the email of the identity'),
    password: z.string().optional().describe('password grant'),
    refresh_token: z.string().optional().describe('refresh_token grant'),
    ...clientAuthenticationFields,
    scope: z
      .string()
      .optional()
      .describe('password grant with a registered client: the scopes asked for, among the client\'s (the token\'s `scope`); otherwise ignored, tokens carry roles'),
  })
  .meta({ id: 'TokenRequest', examples: [{ grant_type: 'password', username: 'admin@localhost', password: 'the password printed at first start' }] });

export const tokenResponseSchema = z
  .object({
    access_token: z.string(),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().describe('Seconds until the access token expires'),
    refresh_token: z.string().optional().describe('Single use; the password and refresh_token grants return one, authorization_code with the offline_access scope'),
    scope: z.string().optional().describe('authorization_code: the scope granted'),
    id_token: z.string().optional().describe('authorization_code with the openid scope: the OpenID Connect ID token (ES256)'),
  })
  .meta({ id: 'TokenResponse' });

export const oauthErrorSchema = z
  .object({ error: z.string(), error_description: z.string() })
  .meta({ id: 'OAuthError', description: 'RFC 6749 §5.2 error response' });

export const revokeRequestSchema = z
  .object({
    token: z.string().describe('The refresh or access token whose sign-in ends'),
    token_type_hint: z.string().optional().describe('access_token or refresh_token; not needed, the token says which it is'),
    ...clientAuthenticationFields,
  })
  .meta({ id: 'RevokeRequest', examples: [{ token: 'the refresh token', token_type_hint: 'refresh_token' }] });

export const introspectionRequestSchema = z
  .object({
    token: z.string().describe('The access or refresh token to look at'),
    token_type_hint: z.string().optional().describe('access_token or refresh_token; not needed, the token says which it is'),
    ...clientAuthenticationFields,
  })
  .meta({ id: 'IntrospectionRequest', examples: [{ token: 'an access or refresh token', token_type_hint: 'access_token' }] });

export const introspectionResponseSchema = z
  .object({
    active: z.boolean(),
    token_type: z.literal('Bearer').optional().describe('Access tokens only'),
    iss: z.string().optional(),
    aud: z.union([z.string(), z.array(z.string())]).optional(),
    sub: z.string().optional(),
    iat: z.number().int().optional(),
    exp: z.number().int().optional(),
    jti: z.string().optional(),
    sid: z.string().optional().describe('The sign-in the token belongs to'),
    client_id: z.string().optional().describe('The API key credential or the registered client an access token was granted to'),
    roles: z.array(z.string()).optional(),
  })
  .meta({ id: 'Introspection', description: 'RFC 7662 §2.2; an inactive token is `{ "active": false }` only' });

const field = (max: number) => z.string().min(1).max(max);

/** The validated form of each grant; anything else is `invalid_request` or `unsupported_grant_type`. */
export const passwordGrantSchema = z.object({
  grant_type: z.literal('password'),
  username: field(320),
  password: field(1024),
  // A registered client naming itself (RFC 6749 §4.3.2): its tokens then say so (`client_id`).
  client_id: field(512).optional(),
  client_secret: field(512).optional(),
  scope: z.string().max(1024).optional(),
});
export const refreshGrantSchema = z.object({ grant_type: z.literal('refresh_token'), refresh_token: field(512) });
export const clientCredentialsGrantSchema = z.object({
  grant_type: z.literal('client_credentials'),
  client_id: field(512).optional(),
  client_secret: field(512).optional(),
});

export type PasswordGrant = z.infer<typeof passwordGrantSchema>;
export type RefreshGrant = z.infer<typeof refreshGrantSchema>;
export type ClientCredentialsGrant = z.infer<typeof clientCredentialsGrantSchema>;

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  /** authorization_code: the scope granted, and the ID token when it includes `openid`. */
  scope?: string;
  id_token?: string;
}
