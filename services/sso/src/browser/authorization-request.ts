import type { ClientService } from '../clients/service.js';
import type { StoredClient } from '../clients/repository.js';
import { SCOPES } from '../clients/schemas.js';
import type { RequestedAuthorization } from './repository.js';

/** RFC 6749 §4.1.2.1 and OpenID Connect Core §3.1.2.6 error codes the authorization endpoint answers with. */
export type AuthorizationErrorCode =
  | 'invalid_request'
  | 'unauthorized_client'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'login_required'
  | 'request_not_supported'
  | 'request_uri_not_supported'
  | 'server_error'
  | 'temporarily_unavailable';

/** An error the client can be told about: the redirect URI is registered, so the browser goes back there. */
export interface RedirectableError {
  kind: 'redirect';
  redirectUri: string;
  state: string | null;
  error: AuthorizationErrorCode;
  description: string;
}

/** An error only the user may see: the client or its redirect URI cannot be trusted (RFC 6749 §4.1.2.1). */
export interface PageError {
  kind: 'page';
  messageKey: string;
  detail?: string;
}

export type Prompt = 'none' | 'login';

export interface ValidAuthorization {
  kind: 'valid';
  client: StoredClient;
  request: RequestedAuthorization;
  prompt?: Prompt;
  /** OpenID Connect Core §3.1.2.1: a session older than this many seconds must sign in again. */
  maxAge?: number;
  loginHint?: string;
  idpHint?: string;
}

/** RFC 7636 §4.2: a base64url SHA-256, 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** Opaque values sent back as they came; longer than this is not a state, it is a payload. */
const MAX_STATE_LENGTH = 2048;
const MAX_NONCE_LENGTH = 512;
const KNOWN_PARAMETERS = new Set([
  'response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'nonce', 'code_challenge', 'code_challenge_method',
  'response_mode', 'prompt', 'login_hint', 'idp_hint', 'max_age', 'ui_locales', 'display', 'claims_locales', 'acr_values', 'request', 'request_uri',
]);
const KNOWN_SCOPES = new Set<string>(SCOPES);
/** The `prompt` values honoured (OpenID Connect Core §3.1.2.1); `select_account` needs a page not built yet. */
export const SUPPORTED_PROMPTS = new Set(['none', 'login', 'consent']);

/**
 * Checks an authorization request in the order RFC 6749 §4.1.2.1 demands: first whether the
 * client and its redirect URI can be trusted (if not, only the user is told, on a page), then
 * everything else, answered to the client through its redirect URI.
 */
export async function validateAuthorizationRequest(query: URLSearchParams, clients: ClientService): Promise<ValidAuthorization | RedirectableError | PageError> {
  const once = (name: string) => {
    const values = query.getAll(name);
    return values.length === 1 ? values[0] : values.length === 0 ? undefined : null;
  };
  const clientId = once('client_id');
  if (!clientId) return { kind: 'page', messageKey: 'sso.page.error.unknownClient' };
  const client = await clients.find(clientId);
  if (!client) return { kind: 'page', messageKey: 'sso.page.error.unknownClient' };
  // OpenID Connect requires redirect_uri; we require it of OAuth 2 clients too, and an exact match.
  const redirectUri = once('redirect_uri');
  if (!redirectUri || !client.redirectUris.includes(redirectUri)) return { kind: 'page', messageKey: 'sso.page.error.redirectUri' };

  const state = once('state');
  const fail = (error: AuthorizationErrorCode, description: string): RedirectableError => ({
    kind: 'redirect',
    redirectUri,
    state: typeof state === 'string' ? state.slice(0, MAX_STATE_LENGTH) : null,
    error,
    description,
  });
  // RFC 6749 §3.1: parameters must not be included more than once.
  for (const name of new Set(query.keys())) {
    if (KNOWN_PARAMETERS.has(name) && query.getAll(name).length > 1) return fail('invalid_request', `Parameter ${name} is repeated.`);
  }
  if (state !== undefined && state !== null && state.length > MAX_STATE_LENGTH) return fail('invalid_request', `state is longer than ${MAX_STATE_LENGTH} characters.`);
  if (query.has('request')) return fail('request_not_supported', 'Request objects are not supported.');
  if (query.has('request_uri')) return fail('request_uri_not_supported', 'request_uri is not supported.');
  const responseType = once('response_type');
  if (!responseType) return fail('invalid_request', 'Missing parameter: response_type.');
  if (responseType !== 'code') return fail('unsupported_response_type', 'Only response_type=code is supported.');
  const responseMode = once('response_mode');
  if (responseMode !== undefined && responseMode !== 'query') return fail('invalid_request', 'Only response_mode=query is supported.');
  if (!client.grantTypes.includes('authorization_code')) return fail('unauthorized_client', 'This client may not use the authorization code grant.');

  // PKCE S256 for every client, public and confidential alike (RFC 9700 §2.1.1); plain is refused.
  const method = once('code_challenge_method');
  const challenge = once('code_challenge');
  if (!challenge) return fail('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256.');
  if (method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256; plain is not accepted.');
  if (!S256_CHALLENGE.test(challenge)) return fail('invalid_request', 'code_challenge must be the base64url SHA-256 of the code verifier (43 characters).');

  const scope = once('scope');
  if (!scope) return fail('invalid_scope', 'Missing parameter: scope (e.g. "openid email profile").');
  const scopes = [...new Set(scope.split(' ').filter(Boolean))];
  const unknown = scopes.filter((name) => !KNOWN_SCOPES.has(name) || !client.scopes.includes(name as never));
  if (unknown.length > 0) return fail('invalid_scope', `Scope not allowed for this client: ${unknown.join(' ').slice(0, 200)}.`);

  const nonce = once('nonce');
  if (nonce === null || (nonce !== undefined && (nonce.length === 0 || nonce.length > MAX_NONCE_LENGTH))) return fail('invalid_request', 'nonce is empty, repeated or too long.');
  // OpenID Connect Core §3.1.2.1: a space-delimited list; `none` stands alone. `consent` asks
  // for nothing more: every client is first-party until consent pages exist (SECURITY.md).
  const prompts = once('prompt')?.split(' ').filter(Boolean);
  const unknownPrompts = prompts?.filter((value) => !SUPPORTED_PROMPTS.has(value)) ?? [];
  if (unknownPrompts.length > 0) return fail('invalid_request', `prompt may hold none, login or consent, not: ${unknownPrompts.join(' ').slice(0, 100)}.`);
  if (prompts?.includes('none') && prompts.length > 1) return fail('invalid_request', 'prompt=none cannot be combined with other values.');
  const prompt: Prompt | undefined = prompts?.includes('none') ? 'none' : prompts?.includes('login') ? 'login' : undefined;

  const maxAge = once('max_age');
  if (maxAge !== undefined && (maxAge === null || !/^\d{1,9}$/.test(maxAge))) return fail('invalid_request', 'max_age must be a whole number of seconds.');

  return {
    kind: 'valid',
    client,
    request: { clientId: client.id, redirectUri, scope: scopes.join(' '), state: state ?? null, nonce: nonce ?? null, codeChallenge: challenge },
    ...(prompt && { prompt }),
    ...(maxAge !== undefined && { maxAge: Number(maxAge) }),
    ...(once('login_hint') && { loginHint: once('login_hint')!.slice(0, 320) }),
    ...(once('idp_hint') && { idpHint: once('idp_hint')! }),
  };
}

/** The client's redirect URI with `parameters` added to its query (RFC 6749 §4.1.2, RFC 9207 `iss`). */
export function redirectWith(redirectUri: string, parameters: Record<string, string | null | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(parameters)) if (value !== null && value !== undefined) url.searchParams.append(name, value);
  return url.toString();
}
