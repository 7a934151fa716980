import { negotiateLocale, translate } from '@app/platform';
import './messages.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BrowserSignIn } from './browser-sign-in.js';

/** Nothing on these pages loads or runs anything, and no other site may frame them. */
const CONTENT_SECURITY_POLICY = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

function page(request: FastifyRequest, reply: FastifyReply, status: number, titleKey: string, message: string): FastifyReply {
  const locale = negotiateLocale(request.headers['accept-language']);
  const title = escapeHtml(translate(locale, titleKey));
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('cache-control', 'no-store')
    .header('content-language', locale)
    .send(
      `<!doctype html><html lang="${locale}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
        `<title>${title}</title></head><body><main><h1>${title}</h1><p role="alert">${escapeHtml(message)}</p></main></body></html>`,
    );
}

/**
 * The browser side of an upstream sign-in until the hosted login (sessions, pending
 * authorization requests: issue 14, items 2 to 4) is wired in its place: it shows the outcome
 * as a page and sets no session, so an upstream sign-in can be run and tested end to end up to
 * the account it resolves. Replaced by the hosted login's own object, which has the same shape.
 */
export const interimBrowserSignIn: BrowserSignIn = {
  async completeSignIn(request, reply) {
    const locale = negotiateLocale(request.headers['accept-language']);
    return page(request, reply, 200, 'sso.federation.signedInTitle', translate(locale, 'sso.federation.signedIn'));
  },
  renderSignInError: (request, reply, error) => page(request, reply, error.status ?? 400, 'sso.federation.errorTitle', error.message),
};
