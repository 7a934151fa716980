/**
 * What sso's OAuth form endpoints (token, revoke) accept, shared with the gateway: in split
 * mode the edge refuses an oversized body itself, and must refuse it exactly as sso does in
 * the all-in-one (RFC 6749 §5.2 JSON, not a problem document), so clients see one API.
 */
export const OAUTH_FORM_PATHS = /^\/api\/v1\/sso\/(token|revoke)\/?$/;

/** Token and revoke requests are a few short parameters; a larger body (form or JSON) is not one. */
export const OAUTH_FORM_BODY_LIMIT = 16_384;

/** The 413's body: RFC 6749 §5.2 has no error code of its own for it. */
export const OAUTH_BODY_TOO_LARGE = { error: 'invalid_request', error_description: 'The request body is too large.' } as const;
