import { DEPENDENCY_RETRY_AFTER_SECONDS, isDependencyUnavailable, negotiateLocale, translate, type App, type Logger } from '@app/platform';
import { pageContext, sendUnavailablePage } from '../browser/pages.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { BrowserSignIn } from '../browser/service.js';
import { federationPath, type Federation } from './federation.js';
import { FAILURE_MESSAGE } from './messages.js';
import { FAILURE_STATUS, FederationError } from './provider.js';
import { UPSTREAM_STATE_TTL_SECONDS } from './state-store.js';

export const FEDERATION_START_PATH = federationPath(':provider', 'start');
export const FEDERATION_CALLBACK_PATH = federationPath(':provider', 'callback');

/**
 * The cookie that binds an upstream round trip to the browser that started it (its value is
 * the state): a callback URL carried to another browser signs nobody in there. Scoped to the
 * federation routes, so no other route ever receives it.
 */
const STATE_COOKIE = 'sso_federation_state';
const COOKIE_PATH = '/api/v1/sso/federation/';

/** An HTML page of the browser sign-in, as the docs describe it. */
const htmlPage = (description: string) => ({ description, content: { 'text/html': { schema: z.string() } } });

const ERROR_PAGES = {
  400: htmlPage('Error page: the request or the state is missing, unknown, expired, used, or from another browser'),
  403: htmlPage('Error page: declined at the provider, no verified email, or a deactivated account'),
  404: htmlPage('Error page: no such provider is configured'),
  409: htmlPage('Error page: an account has this email already; it is not linked (sign in with the password)'),
  502: htmlPage('Error page: the provider failed, timed out, or answered something that did not check out'),
  503: htmlPage('Error page: sign-in is temporarily unavailable'),
};

/** The 503 page says when to retry (documented per route, since it is no problem document). */
const responseHeaders = { 503: ['Retry-After'] } as const;

// No length limit here: any name that is not a configured provider gets the HTML 404 page, not a JSON problem.
const providerParamsSchema = z.object({ provider: z.string().describe('`google` or `github`, when configured') });

export interface FederationRoutesOptions {
  federation: Federation;
  /** The hosted login's side of an upstream sign-in: finish it, fail it, check its pending request. */
  browser: Pick<BrowserSignIn, 'completeSignIn' | 'renderSignInError' | 'pendingRequest'>;
  /** Where failures are logged: their detail is never shown, it may carry what a provider said. */
  logger?: Logger;
}

/** The value of one cookie from the Cookie header (RFC 6265 §5.4), if sent. */
function cookieValue(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator !== -1 && part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

/** The query of a request as the URL carried it, every parameter kept (openid-client reads `iss` and the rest). */
const queryOf = (request: FastifyRequest) => new URLSearchParams(request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '');

/**
 * Sign-in with Google or GitHub: `start` (from the login page's button or `idp_hint`) sends the
 * browser to the provider; `callback`, the redirect URI registered there, signs it in here and
 * hands over to the browser sign-in to continue the pending authorization. Every failure is a
 * localized HTML page, never a redirect to an unknown place and never a 500.
 */
export async function federationRoutes(app: App, options: FederationRoutesOptions): Promise<void> {
  const { federation, browser } = options;
  // Secure whenever the issuer is https: only a loopback development issuer is plain http.
  const secure = federation.issuer.startsWith('https:');
  const cookie = (value: string, maxAge: number) =>
    `${STATE_COOKIE}=${value}; Path=${COOKIE_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;

  const fail = (request: FastifyRequest, reply: FastifyReply, provider: string, error: unknown) => {
    const failure = error instanceof FederationError ? error : new FederationError('unavailable', (error as Error).message);
    const log = options.logger ?? request.log;
    log[failure.failure === 'unavailable' ? 'error' : 'warn']({ provider: provider.slice(0, 32), failure: failure.failure, detail: failure.detail }, 'upstream sign-in failed');
    const locale = negotiateLocale(request.headers['accept-language']);
    const message = translate(locale, FAILURE_MESSAGE[failure.failure], { provider: federation.labelOf(provider), ...failure.params });
    const status = FAILURE_STATUS[failure.failure];
    // Our own dependencies are down: the person (or a script) may retry shortly.
    if (status === 503) reply.header('retry-after', String(DEPENDENCY_RETRY_AFTER_SECONDS));
    return browser
      .renderSignInError(request, reply, { ...(failure.requestId ? { requestId: failure.requestId } : {}), message, status })
      .catch((renderError: unknown) => {
        // The pending request could not be read (the database is down): still a page, never JSON.
        if (isDependencyUnavailable(renderError)) return sendUnavailablePage(reply, pageContext(request));
        throw renderError;
      });
  };

  app.get(
    FEDERATION_START_PATH,
    {
      config: { auth: 'public' },
      // No HEAD twin: a start records an upstream round trip and a callback uses one up.
      exposeHeadRoute: false,
      schema: {
        tags: ['SSO'],
        operationId: 'startFederatedSignIn',
        summary: 'Sign in with Google or GitHub: redirects the browser to the provider',
        description:
          'Part of the hosted login: `request` is the pending authorization request the sign-in continues. ' +
          'Answers 302 to the provider (state, nonce, PKCE S256 and redirect_uri), or an HTML error page ' +
          '(404 for a provider that is not configured).',
        params: providerParamsSchema,
        // Read from the raw query: a malformed one gets the HTML error page, not a JSON problem.
        querystring: z.object({ request: z.union([z.string(), z.array(z.string())]).optional().describe('The pending authorization request') }),
        response: { 302: z.null().describe("To the provider's authorization endpoint"), ...ERROR_PAGES },
        responseHeaders,
      },
    },
    async (request, reply) => {
      const { provider } = request.params;
      try {
        const isPending = async (requestId: string) => (await browser.pendingRequest(requestId)) !== undefined;
        const { location, state } = await federation.start(provider, queryOf(request).get('request') ?? undefined, isPending);
        reply.header('set-cookie', cookie(state, UPSTREAM_STATE_TTL_SECONDS)).header('cache-control', 'no-store');
        return reply.redirect(location.toString(), 302);
      } catch (error) {
        return fail(request, reply, provider, error);
      }
    },
  );

  app.get(
    FEDERATION_CALLBACK_PATH,
    {
      config: { auth: 'public' },
      // No HEAD twin: a start records an upstream round trip and a callback uses one up.
      exposeHeadRoute: false,
      schema: {
        tags: ['SSO'],
        operationId: 'completeFederatedSignIn',
        summary: 'Where Google or GitHub sends the browser back (the registered redirect URI)',
        description:
          'Checks state (single use, bound to the browser that started), exchanges the code with the PKCE verifier, ' +
          'and signs in as the identity of the account (created when neither its subject nor its verified email is known). ' +
          'Continues the pending authorization request, or answers an HTML error page.',
        params: providerParamsSchema,
        // Everything the provider sends is read from the raw query (code, state, error, iss, ...).
        querystring: z.object({}).catchall(z.unknown()),
        response: {
          200: htmlPage('A page of the browser sign-in'),
          302: z.null().describe('On to the next step of the pending authorization request'),
          303: z.null().describe('On to the next step of the pending authorization request'),
          ...ERROR_PAGES,
        },
        responseHeaders,
      },
    },
    async (request, reply) => {
      const { provider } = request.params;
      // Used up either way: the browser never brings this state back again.
      reply.header('set-cookie', cookie('', 0)).header('cache-control', 'no-store');
      try {
        const signIn = await federation.finish(provider, queryOf(request), cookieValue(request, STATE_COOKIE));
        return await browser.completeSignIn(request, reply, signIn);
      } catch (error) {
        return fail(request, reply, provider, error);
      }
    },
  );
}
