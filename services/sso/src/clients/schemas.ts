import { isLoopbackHost, issueKey, listQuerySchema } from '@app/platform';
import { z } from 'zod';

export const CLIENT_TYPES = ['public', 'confidential'] as const;
export type ClientType = (typeof CLIENT_TYPES)[number];

/**
 * The grants a registered client may use: browser sign-in, refreshing what it gave, and the
 * password grant for a first-party app an admin trusts with its users' passwords (RFC 9700
 * §2.4 says not to; it is never a default, only granted by name).
 */
export const CLIENT_GRANT_TYPES = ['authorization_code', 'refresh_token', 'password'] as const;
export type ClientGrantType = (typeof CLIENT_GRANT_TYPES)[number];

/**
 * The scopes sso understands (OpenID Connect Core §5.4 and §11): `openid` for an ID token,
 * `email` and `profile` for userinfo's claims, `offline_access` for a refresh token.
 */
export const SCOPES = ['openid', 'email', 'profile', 'offline_access'] as const;
export type Scope = (typeof SCOPES)[number];

/** A URI longer than this is abuse, not an address; browsers cap whole URLs not far above. */
const MAX_URI_LENGTH = 2048;
/** Enough for the environments of one app; a client with more is better registered twice. */
const MAX_URIS = 20;

/**
 * Whether `value` may be a redirect target: absolute, https (or http on a loopback host), no
 * fragment (RFC 6749 §3.1.2), no credentials in it. Matched later by exact string comparison,
 * so what is stored is exactly what was sent.
 */
export function isAllowedRedirectUri(value: string): boolean {
  if (value.includes('#')) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.username || url.password) return false;
  if (url.protocol === 'https:') return url.hostname !== '';
  return url.protocol === 'http:' && isLoopbackHost(url.hostname);
}

const redirectUrisField = z
  .array(
    z
      .string()
      .max(MAX_URI_LENGTH)
      .refine(isAllowedRedirectUri, issueKey('sso.client.redirectUri')),
  )
  .max(MAX_URIS);

const clientFields = {
  name: z.string().trim().min(1).max(200),
  redirect_uris: redirectUrisField.min(1).describe('Absolute https URIs (http only on localhost or a loopback address), no fragment; matched exactly'),
  post_logout_redirect_uris: redirectUrisField.describe('Where RP-initiated logout may return to; the same rules as redirect_uris'),
  grant_types: z
    .array(z.enum(CLIENT_GRANT_TYPES))
    .min(1)
    // refresh_token alone signs no one in.
    .refine((grants) => grants.includes('authorization_code') || grants.includes('password'), issueKey('sso.client.codeGrant'))
    .describe('authorization_code (or password, for a first-party app only), and refresh_token to keep signed in (with the offline_access scope)'),
  scopes: z.array(z.enum(SCOPES)).min(1).describe('The scopes the client may ask for'),
};

export const createClientBodySchema = z
  .strictObject({
    ...clientFields,
    type: z.enum(CLIENT_TYPES).describe('confidential: has a secret (a server-side app); public: none, PKCE alone (a browser or mobile app)'),
    post_logout_redirect_uris: clientFields.post_logout_redirect_uris.default([]),
    grant_types: clientFields.grant_types.default(['authorization_code', 'refresh_token']),
    scopes: clientFields.scopes.default([...SCOPES]),
  })
  .meta({
    id: 'CreateOAuthClient',
    examples: [{ name: 'My web app', type: 'confidential', redirect_uris: ['https://app.example.com/callback'], post_logout_redirect_uris: ['https://app.example.com/'] }],
  });

/** Every field but the type, which decides whether a secret exists: a new type is a new client. */
export const updateClientBodySchema = z.strictObject(clientFields).meta({ id: 'UpdateOAuthClient' });

export const clientSchema = z
  .object({
    id: z.uuid().describe('The client_id'),
    name: z.string(),
    type: z.enum(CLIENT_TYPES),
    redirect_uris: z.array(z.string()),
    post_logout_redirect_uris: z.array(z.string()),
    grant_types: z.array(z.enum(CLIENT_GRANT_TYPES)),
    scopes: z.array(z.enum(SCOPES)),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'OAuthClient' });

export const createdClientSchema = clientSchema
  .extend({ client_secret: z.string().optional().describe('Confidential clients only, shown this once: it is stored hashed') })
  .meta({ id: 'CreatedOAuthClient' });

export const clientIdParamsSchema = z.object({ id: z.uuid() });
/** A page of the clients as every list pages (cursor or offset, `sort`, `Prefer: count`), by when or what they were named. */
export const listClientsQuerySchema = listQuerySchema(['createdAt', 'updatedAt', 'name'], {});

export type CreateClientBody = z.infer<typeof createClientBodySchema>;
export type UpdateClientBody = z.infer<typeof updateClientBodySchema>;
export type ClientRecord = z.infer<typeof clientSchema>;
