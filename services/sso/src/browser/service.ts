import { randomUUID } from 'node:crypto';
import type { BlockList } from 'node:net';
import { UpstreamError, type CredentialsClient, type IdentityClient } from '@app/contracts';
import { clientAddress, type Logger } from '@app/platform';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { StoredClient } from '../clients/repository.js';
import type { ClientService } from '../clients/service.js';
import type { Revoker } from '../tokens/revocations.js';
import type { LoginThrottle } from '../tokens/throttle.js';
import { redirectWith, validateAuthorizationRequest } from './authorization-request.js';
import { clearCookie, cookieOf, formCookieName, randomToken, sameDigest, SESSION_COOKIE, setCookie, sha256 } from './cookies.js';
import { errorPage, loginPage, pageContext, sendPage, type UpstreamProvider } from './pages.js';
import { federationStartPath, LOGIN_PATH } from './paths.js';
import type { BrowserSession, BrowserSignInRepository, PendingAuthorization, RequestedAuthorization } from './repository.js';

/** How long a user has to fill the login form (or finish an upstream sign-in) once sent to it. */
export const PENDING_REQUEST_SECONDS = 600;
/** A code is redeemed by the client's back end at once; a minute covers a slow network, not a thief (RFC 6749 §4.1.2 says at most 10 minutes). */
export const CODE_SECONDS = 60;
/** A browser stays signed in for a working day; after that the form is shown again. */
export const BROWSER_SESSION_SECONDS = 8 * 3600;
/** The longest username and password the form accepts, as the token endpoint does. */
const MAX_USERNAME_LENGTH = 320;
const MAX_PASSWORD_LENGTH = 1024;
/** The nil UUID: no identity has it, so a password check against it always fails (in full time). */
const NO_IDENTITY = '00000000-0000-0000-0000-000000000000';

/** Who signed in, as the login form or an upstream provider established it. */
export interface CompletedSignIn {
  /** The pending authorization request the sign-in answers. */
  requestId: string;
  identityId: string;
  /** The credential used (LOCAL, GOOGLE or GITHUB): deactivating it ends this session. */
  credentialId: string | null;
}

export interface SignInError {
  /** The pending request, when known: while it is still valid the form is shown again with the message. */
  requestId?: string;
  /** Already localized (see pageContext). */
  message: string;
  status?: number;
}

/**
 * Browser sign-in: the authorization endpoint, the hosted login form and the browser session.
 * `completeSignIn` and `renderSignInError` are the seam for upstream providers (federation/):
 * once a callback knows who signed in, it hands over here and the flow continues as after a
 * password.
 */
export interface BrowserSignIn {
  authorize(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
  login(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
  completeSignIn(request: FastifyRequest, reply: FastifyReply, signIn: CompletedSignIn): Promise<FastifyReply>;
  renderSignInError(request: FastifyRequest, reply: FastifyReply, error: SignInError): Promise<FastifyReply>;
  /** A pending authorization request still waiting for its sign-in (an upstream start checks it first). */
  pendingRequest(requestId: string): Promise<PendingAuthorization | undefined>;
  /** The live browser session of the request's cookie, if any. */
  currentSession(request: FastifyRequest): Promise<BrowserSession | undefined>;
  /** Ends a browser session and every token issued through it (each code's family), everywhere within a second. */
  endSession(sessionId: string): Promise<void>;
  /** Whether the session cookie is Secure (the issuer is https). */
  readonly secureCookies: boolean;
}

export interface BrowserSignInOptions {
  clients: ClientService;
  repository: BrowserSignInRepository;
  identities: IdentityClient;
  credentials: CredentialsClient;
  throttle: LoginThrottle;
  revoker: Revoker;
  issuer: string;
  trustedProxies: BlockList;
  logger: Logger;
  /** The upstream providers configured (federation/); the login page offers each. */
  upstream: readonly UpstreamProvider[];
}

export function createBrowserSignIn(options: BrowserSignInOptions): BrowserSignIn {
  const { clients, repository, identities, credentials, throttle, revoker, issuer, logger } = options;
  const secure = new URL(issuer).protocol === 'https:';
  const secondsFromNow = (seconds: number) => new Date(Date.now() + seconds * 1000);

  const currentSession = async (request: FastifyRequest) => {
    const token = cookieOf(request, SESSION_COOKIE);
    return token ? repository.liveSession(sha256(token), new Date()) : undefined;
  };

  /** Shows the form for `pending`, with a fresh anti-forgery value bound to it and to this browser. */
  const showForm = async (
    request: FastifyRequest,
    reply: FastifyReply,
    pending: RequestedAuthorization & { id: string },
    shown: { fresh?: boolean; message?: string; status?: number; username?: string; retryAfter?: number; client?: StoredClient } = {},
  ): Promise<FastifyReply> => {
    const context = pageContext(request);
    const client = shown.client ?? (await clients.find(pending.clientId));
    if (!client) return sendPage(reply, context, errorPage(context, context.t('sso.page.error.unknownClient')));
    const csrf = randomToken();
    if (shown.fresh) await repository.insertRequest({ ...pending, csrfHash: sha256(csrf), expiresAt: secondsFromNow(PENDING_REQUEST_SECONDS) });
    else await repository.rebindForm(pending.id, sha256(csrf));
    reply.header('set-cookie', setCookie(formCookieName(pending.id), csrf, { maxAgeSeconds: PENDING_REQUEST_SECONDS, secure }));
    if (shown.retryAfter !== undefined) reply.header('retry-after', String(shown.retryAfter));
    return sendPage(
      reply,
      context,
      loginPage(context, {
        action: LOGIN_PATH,
        requestId: pending.id,
        csrf,
        clientName: client.name,
        redirectOrigin: new URL(pending.redirectUri).origin,
        username: shown.username,
        message: shown.message,
        status: shown.status,
        upstream: options.upstream,
        upstreamLink: (provider) => federationStartPath(provider, pending.id),
      }),
    );
  };

  /** The code for a request, to its redirect URI, with `state` and the issuer (RFC 9207). */
  const redirectWithCode = (reply: FastifyReply, request: RequestedAuthorization, code: string) =>
    reply.redirect(redirectWith(request.redirectUri, { code, state: request.state, iss: issuer }), 303);

  const newCode = (signedIn: { sessionId: string; identityId: string; credentialId: string | null; authTime: Date }) => {
    const code = randomToken();
    return { code, issued: { codeHash: sha256(code), codeExpiresAt: secondsFromNow(CODE_SECONDS), ...signedIn } };
  };

  /** The form was served by us to this browser for this request: the cookie and the field agree, and the request knows the value. */
  const formIsOurs = (request: FastifyRequest, pending: PendingAuthorization, csrf: unknown) => {
    if (typeof csrf !== 'string' || csrf.length === 0 || csrf.length > 100 || !pending.csrfHash) return false;
    const cookie = cookieOf(request, formCookieName(pending.id));
    return cookie !== undefined && sameDigest(sha256(cookie), sha256(csrf)) && sameDigest(sha256(csrf), pending.csrfHash);
  };

  const completeSignIn = async (request: FastifyRequest, reply: FastifyReply, signIn: CompletedSignIn) => {
    const now = new Date();
    const sessionToken = randomToken();
    const session = { sessionId: randomUUID(), identityId: signIn.identityId, credentialId: signIn.credentialId, authTime: now };
    const { code, issued } = newCode(session);
    const answered = await repository.startSession(
      { ...session, tokenHash: sha256(sessionToken), expiresAt: secondsFromNow(BROWSER_SESSION_SECONDS) },
      signIn.requestId,
      now,
      issued,
    );
    reply.header('set-cookie', [
      setCookie(SESSION_COOKIE, sessionToken, { maxAgeSeconds: BROWSER_SESSION_SECONDS, secure }),
      clearCookie(formCookieName(signIn.requestId), secure),
    ]);
    if (!answered) {
      // Signed in, but the request expired or was answered already (a second submit): the
      // user is told to start again, and will find the session live when they do.
      const context = pageContext(request);
      return sendPage(reply, context, errorPage(context, context.t('sso.page.error.expired')));
    }
    return redirectWithCode(reply, answered, code);
  };

  return {
    secureCookies: secure,
    currentSession,
    pendingRequest: (requestId) => repository.pendingRequest(requestId, new Date()),

    authorize: async (request, reply) => {
      const context = pageContext(request);
      const query = new URLSearchParams(request.url.slice(request.url.indexOf('?') + 1 || request.url.length));
      const verdict = await validateAuthorizationRequest(query, clients);
      if (verdict.kind === 'page') return sendPage(reply, context, errorPage(context, context.t(verdict.messageKey, { detail: verdict.detail ?? '' })));
      if (verdict.kind === 'redirect') {
        const { redirectUri, error, description, state } = verdict;
        return reply.header('cache-control', 'no-store').redirect(redirectWith(redirectUri, { error, error_description: description, state, iss: issuer }), 303);
      }
      const pending = { id: randomUUID(), ...verdict.request };
      const live = verdict.prompt === 'login' ? undefined : await currentSession(request);
      // A session signed in longer ago than max_age allows counts as none: the user signs in again.
      const session = live && (verdict.maxAge === undefined || Date.now() - live.authTime.getTime() <= verdict.maxAge * 1000) ? live : undefined;
      if (session) {
        // Signed in already: answer at once, without the form (OpenID Connect Core §3.1.2.3).
        const { code, issued } = newCode(session);
        await repository.insertRequest({ ...pending, csrfHash: null, expiresAt: secondsFromNow(PENDING_REQUEST_SECONDS), ...issued });
        return redirectWithCode(reply, pending, code);
      }
      if (verdict.prompt === 'none') {
        const { redirectUri, state } = pending;
        return reply.redirect(redirectWith(redirectUri, { error: 'login_required', error_description: 'The user is not signed in.', state, iss: issuer }), 303);
      }
      const upstream = options.upstream.find((provider) => provider.id === verdict.idpHint);
      if (upstream) {
        await repository.insertRequest({ ...pending, csrfHash: null, expiresAt: secondsFromNow(PENDING_REQUEST_SECONDS) });
        return reply.redirect(federationStartPath(upstream.id, pending.id), 303);
      }
      return showForm(request, reply, pending, { fresh: true, username: verdict.loginHint, client: verdict.client });
    },

    login: async (request, reply) => {
      const context = pageContext(request);
      const form = (request.body ?? {}) as Record<string, unknown>;
      const pending = typeof form.request === 'string' ? await repository.pendingRequest(form.request, new Date()) : undefined;
      if (!pending) return sendPage(reply, context, errorPage(context, context.t('sso.page.error.expired')));
      // Login CSRF: a form posted from elsewhere has no cookie (SameSite) or not this request's value.
      if (!formIsOurs(request, pending, form.csrf)) return sendPage(reply, context, errorPage(context, context.t('sso.page.error.forgery'), 403));
      const username = typeof form.username === 'string' ? form.username.trim().slice(0, MAX_USERNAME_LENGTH) : '';
      const password = typeof form.password === 'string' ? form.password : '';
      const again = (messageKey: string, status: number, params: Record<string, number> = {}, retryAfter?: number) =>
        showForm(request, reply, pending, { message: context.t(messageKey, params), status, username, retryAfter });
      if (!username || !password || password.length > MAX_PASSWORD_LENGTH) return again('sso.page.signIn.wrongPassword', 400);

      const address = clientAddress(options.trustedProxies, request.socket.remoteAddress, request.headers['x-forwarded-for']);
      const retryAfter = await throttle.blocked(address, username);
      if (retryAfter !== undefined) return again('sso.page.signIn.throttled', 429, { seconds: retryAfter }, retryAfter);
      let signedIn: { identityId: string; credentialId: string | null } | undefined;
      try {
        // As the password grant: one identity read, and a full-time check for unknown emails.
        const identity = await identities.lookup({ email: username });
        const verdict = await credentials.verifyPassword({ identityId: identity?.id ?? NO_IDENTITY, password });
        if (identity && verdict.valid && identity.activated) signedIn = { identityId: identity.id, credentialId: verdict.credentialId ?? null };
        else if (!identity || !verdict.valid) await throttle.recordFailure(address, username);
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        logger.error({ err: error }, 'browser sign-in failed: an upstream service did not answer');
        return again('sso.page.signIn.unavailable', 503, {}, 1);
      }
      if (!signedIn) return again('sso.page.signIn.wrongPassword', 400);
      await throttle.recordSuccess(address, username);
      return completeSignIn(request, reply, { requestId: pending.id, ...signedIn });
    },

    completeSignIn,

    renderSignInError: async (request, reply, error) => {
      const pending = error.requestId ? await repository.pendingRequest(error.requestId, new Date()) : undefined;
      if (pending) return showForm(request, reply, pending, { message: error.message, status: error.status ?? 400 });
      const context = pageContext(request);
      return sendPage(reply, context, errorPage(context, error.message, error.status ?? 400));
    },

    endSession: async (sessionId) => {
      await repository.endSession(sessionId, new Date());
      for (const familyId of await repository.familiesOfSession(sessionId)) await revoker.endSessions({ familyId }, [familyId]);
    },
  };
}
