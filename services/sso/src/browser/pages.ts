import { createHash } from 'node:crypto';
import { DEPENDENCY_RETRY_AFTER_SECONDS, negotiateLocale, translate, varyWith, type Locale, type MessageParams } from '@app/platform';
import type { FastifyReply, FastifyRequest } from 'fastify';
import './messages.js';

/** An upstream identity provider shown on the login page (federation/ registers them). */
export interface UpstreamProvider {
  id: 'google' | 'github';
  label: string;
}

/** The pages' only styling, inline and allowed by its hash: the CSP allows no other style and no script at all. */
const STYLE = `
body{font-family:system-ui,sans-serif;background:#f4f5f7;color:#1d2330;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center}
main{background:#fff;border-radius:8px;box-shadow:0 1px 4px rgba(0,0,0,.15);padding:2rem;width:min(22rem,90vw)}
h1{font-size:1.35rem;margin:0 0 1.25rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input{box-sizing:border-box;width:100%;padding:.55rem;border:1px solid #8a93a6;border-radius:4px;font-size:1rem}
input:focus,button:focus,a:focus{outline:3px solid #2d6cdf;outline-offset:2px}
button,.upstream{display:block;box-sizing:border-box;width:100%;margin-top:1.25rem;padding:.65rem;border:0;border-radius:4px;background:#2d5bd0;color:#fff;font-size:1rem;text-align:center;text-decoration:none;cursor:pointer}
.upstream{background:#1d2330;margin-top:.75rem}
.alert{background:#fdecec;border:1px solid #c62828;color:#8e1b1b;border-radius:4px;padding:.6rem;margin:0 0 1rem}
.or{text-align:center;color:#5c6475;margin:1rem 0 0}
`.trim();
const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** Text and attribute values alike: every character that could end either is escaped. */
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (character) => ESCAPES[character]!);

/** A translator bound to the request's locale, the same negotiation as problem+json. */
export interface PageContext {
  locale: Locale;
  t(key: string, params?: MessageParams): string;
}

export function pageContext(request: FastifyRequest): PageContext {
  const locale = negotiateLocale(request.headers['accept-language']);
  return { locale, t: (key, params) => translate(locale, key, params) };
}

export interface Page {
  status: number;
  title: string;
  /** Trusted markup: every value in it was escaped where it was put in. */
  body: string;
  /**
   * Origins a form on the page may post to, besides this one. Browsers apply `form-action`
   * to the redirects that follow a submission too, so the login form names the client's
   * redirect origin, where the successful sign-in sends the browser.
   */
  formTargets?: string[];
}

/**
 * Sends a hosted page: no script may run (`default-src 'none'`), the one style by its hash, an
 * empty icon (so browsers do not ask for /favicon.ico, which is not public),
 * forms only to us (and the redirect target), never in a frame, never cached, no referrer
 * (the URL holds the authorization request).
 */
export function sendPage(reply: FastifyReply, context: PageContext, page: Page): FastifyReply {
  const formAction = ["'self'", ...(page.formTargets ?? [])].join(' ');
  const csp = `default-src 'none'; style-src ${STYLE_HASH}; img-src data:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`;
  const html = `<!doctype html>
<html lang="${context.locale}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${escapeHtml(page.title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${page.body}
</main>
</body>
</html>
`;
  return reply
    .code(page.status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-language', context.locale)
    .header('vary', varyWith(reply.getHeader('vary'), 'Accept-Language'))
    .header('content-security-policy', csp)
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .send(html);
}

const alert = (message: string | undefined) => (message ? `<p class="alert" role="alert">${escapeHtml(message)}</p>` : '');
const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;

export interface LoginForm {
  action: string;
  requestId: string;
  csrf: string;
  clientName: string;
  /** Where the browser goes once signed in: the form's submission ends there. */
  redirectOrigin: string;
  username?: string;
  message?: string;
  status?: number;
  upstream: readonly UpstreamProvider[];
  upstreamLink(provider: UpstreamProvider['id']): string;
}

/** The login form: plain HTML, labelled fields, works without JavaScript. */
export function loginPage(context: PageContext, form: LoginForm): Page {
  const { t } = context;
  const upstream = form.upstream.length
    ? `<p class="or">${escapeHtml(t('sso.page.signIn.or'))}</p>\n` +
      form.upstream
        .map((provider) => `<a class="upstream" href="${escapeHtml(form.upstreamLink(provider.id))}">${escapeHtml(t('sso.page.signIn.upstream', { provider: provider.label }))}</a>`)
        .join('\n')
    : '';
  return {
    status: form.status ?? 200,
    title: t('sso.page.signIn.title'),
    formTargets: [form.redirectOrigin],
    body: `<h1>${escapeHtml(t('sso.page.signIn.heading', { client: form.clientName }))}</h1>
${alert(form.message)}
<form method="post" action="${escapeHtml(form.action)}">
${hidden('request', form.requestId)}
${hidden('csrf', form.csrf)}
<label for="username">${escapeHtml(t('sso.page.signIn.email'))}</label>
<input id="username" name="username" type="email" autocomplete="username" required value="${escapeHtml(form.username ?? '')}"${form.username ? '' : ' autofocus'}>
<label for="password">${escapeHtml(t('sso.page.signIn.password'))}</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${form.username ? ' autofocus' : ''}>
<button type="submit">${escapeHtml(t('sso.page.signIn.submit'))}</button>
</form>
${upstream}`,
  };
}

/** An error the user can only read: nothing to follow, since no address here can be trusted. */
export function errorPage(context: PageContext, message: string, status = 400): Page {
  return {
    status,
    title: context.t('sso.page.error.title'),
    body: `<h1>${escapeHtml(context.t('sso.page.error.title'))}</h1>\n${alert(message)}`,
  };
}

/**
 * A dependency (the database, the cache, a peer service) cannot answer now: 503 with the
 * platform's `Retry-After`, so a person retries in a moment and a script knows when.
 */
export function sendUnavailablePage(reply: FastifyReply, context: PageContext): FastifyReply {
  reply.header('retry-after', String(DEPENDENCY_RETRY_AFTER_SECONDS));
  return sendPage(reply, context, errorPage(context, context.t('sso.page.signIn.unavailable'), 503));
}

/** RP-initiated logout without proof the application asked: the user confirms. */
export function logoutConfirmationPage(context: PageContext, action: string, fields: Record<string, string>, postTargets: string[]): Page {
  const { t } = context;
  return {
    status: 200,
    title: t('sso.page.logout.title'),
    formTargets: postTargets,
    body: `<h1>${escapeHtml(t('sso.page.logout.question'))}</h1>
<form method="post" action="${escapeHtml(action)}">
${Object.entries(fields)
  .map(([name, value]) => hidden(name, value))
  .join('\n')}
<button type="submit">${escapeHtml(t('sso.page.logout.submit'))}</button>
</form>`,
  };
}

export function signedOutPage(context: PageContext): Page {
  return { status: 200, title: context.t('sso.page.logout.title'), body: `<h1>${escapeHtml(context.t('sso.page.logout.done'))}</h1>` };
}
