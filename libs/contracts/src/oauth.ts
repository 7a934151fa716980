/**
 * The 413 of sso's OAuth endpoints (RFC 6749 §5.2 has no error code of its own for it),
 * shared with the gateway: in split mode the edge refuses an oversized body itself, and must
 * refuse it exactly as sso does in the all-in-one (this JSON, not a problem document).
 */
export const OAUTH_BODY_TOO_LARGE = { error: 'invalid_request', error_description: 'The request body is too large.' } as const;
