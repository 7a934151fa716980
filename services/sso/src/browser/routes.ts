import { isDependencyUnavailable, type App } from '@app/platform';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errorPage, pageContext, sendPage, sendUnavailablePage } from './pages.js';
import { AUTHORIZE_PATH, END_SESSION_PATH, LOGIN_PATH } from './paths.js';
import type { BrowserSignIn } from './service.js';

const FORM = 'application/x-www-form-urlencoded';
/**
 * The login and logout forms are a few short fields; a larger body is not one of them. The
 * gateway refuses a larger one itself, from these routes' declaration.
 */
const FORM_BODY_LIMIT = 16_384;

export interface BrowserRoutesOptions {
  browser: BrowserSignIn;
  endSession: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;
}

/**
 * A browser is never answered with JSON: a malformed form is the "start again" page, a
 * dependency that cannot answer (the database, the cache, a peer service) the "try again in a
 * moment" page with 503 and `Retry-After`, and anything else a 500 page that says nothing of
 * what broke (the error is logged).
 */
function pageErrorHandler(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  const context = pageContext(request);
  if (isDependencyUnavailable(error)) return sendUnavailablePage(reply, context);
  const status = (error as FastifyError).statusCode ?? 500;
  if (status >= 400 && status < 500) return sendPage(reply, context, errorPage(context, context.t('sso.page.error.expired'), status === 413 ? 413 : 400));
  request.log.error({ err: error }, 'browser sign-in failed');
  return sendPage(reply, context, errorPage(context, context.t('sso.page.signIn.unavailable'), 500));
}

/**
 * The authorization endpoint, the login form's target and the end-session endpoint. They
 * answer HTML and redirects, not JSON, so they are left out of the OpenAPI document; the
 * discovery document names them, as OpenID Connect relying parties expect.
 */
export async function browserRoutes(app: App, options: BrowserRoutesOptions): Promise<void> {
  const { browser } = options;
  app.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
    // A repeated field keeps its first value: the handlers read single strings only.
    const fields: Record<string, string> = {};
    for (const [name, value] of new URLSearchParams(body as string)) if (!Object.hasOwn(fields, name)) fields[name] = value;
    done(null, fields);
  });
  app.setErrorHandler(pageErrorHandler);
  const page = { config: { auth: 'public' }, schema: { hide: true } } as const;
  // No HEAD twin: an authorization request records a pending sign-in, which a HEAD must not do.
  const navigation = { ...page, exposeHeadRoute: false } as const;

  app.get(AUTHORIZE_PATH, navigation, (request, reply) => browser.authorize(request, reply));
  app.post(LOGIN_PATH, { ...page, bodyLimit: FORM_BODY_LIMIT }, (request, reply) => browser.login(request, reply));
  app.get(END_SESSION_PATH, navigation, (request, reply) => options.endSession(request, reply));
  app.post(END_SESSION_PATH, { ...page, bodyLimit: FORM_BODY_LIMIT }, (request, reply) => options.endSession(request, reply));
}
