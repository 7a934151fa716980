import { defineCounter } from '@app/platform';
import type { GRANT_TYPES } from './service.js';

type GrantType = (typeof GRANT_TYPES)[number];

const tokensIssued = defineCounter({
  name: 'sso_tokens_issued_total',
  help: 'Access tokens the token endpoint issued, by grant type.',
  labelNames: ['grant_type'] as const,
});

const failedLogins = defineCounter({
  name: 'sso_failed_logins_total',
  help: 'Sign-ins refused for wrong credentials (password or API key) or an inactive identity, by grant type.',
  labelNames: ['grant_type'] as const,
});

const throttledAnswers = defineCounter({
  name: 'sso_throttled_total',
  help: 'Token requests answered 429 by the login throttle, by grant type.',
  labelNames: ['grant_type'] as const,
});

/** What the token endpoint counts, one counter child per grant type bound once (no label object per request). */
export interface TokenMetrics {
  issued(grantType: GrantType): void;
  failedLogin(grantType: GrantType): void;
  throttled(grantType: GrantType): void;
}

function perGrant(counter: typeof tokensIssued): (grantType: GrantType) => void {
  const children = new Map<string, { inc(): void }>();
  return (grantType) => {
    let child = children.get(grantType);
    if (!child) children.set(grantType, (child = counter.labels(grantType)));
    child.inc();
  };
}

export const tokenMetrics: TokenMetrics = {
  issued: perGrant(tokensIssued),
  failedLogin: perGrant(failedLogins),
  throttled: perGrant(throttledAnswers),
};
