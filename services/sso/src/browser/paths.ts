/** The browser-facing endpoints (public at the edge: a browser brings no bearer token). */
export const AUTHORIZE_PATH = '/api/v1/sso/authorize';
export const LOGIN_PATH = '/api/v1/sso/login';
export const END_SESSION_PATH = '/api/v1/sso/logout';

/** Where the federation routes start an upstream sign-in for a pending request (federation/ serves it). */
export const federationStartPath = (provider: string, requestId: string) =>
  `/api/v1/sso/federation/${encodeURIComponent(provider)}/start?request=${encodeURIComponent(requestId)}`;

/** Every cookie of the hosted pages is scoped to sso's public prefix: no other service ever sees one. */
export const COOKIE_PATH = '/api/v1/sso';
