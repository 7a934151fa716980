import { errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ClientService } from '../clients/service.js';
import { SIGNING_ALGORITHM } from '../keys/service.js';
import { redirectWith } from './authorization-request.js';
import { clearCookie, cookieOf, sameDigest, SESSION_COOKIE, sha256 } from './cookies.js';
import { errorPage, logoutConfirmationPage, pageContext, sendPage, signedOutPage, type PageContext } from './pages.js';
import { END_SESSION_PATH } from './paths.js';
import type { BrowserSignIn } from './service.js';

export interface EndSessionOptions {
  browser: BrowserSignIn;
  clients: ClientService;
  /** sso's own keys: an id_token_hint must be an ID token this server signed. */
  verificationKeys: JWTVerifyGetKey;
  issuer: string;
}

/** The confirmation form's anti-forgery value: derived from the session cookie, which another site cannot read. */
const confirmationValue = (sessionCookie: string) => sha256(`logout:${sessionCookie}`);

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0). With a valid `id_token_hint`
 * the application proved it asked: its session ends at once. Without one, the user confirms
 * on a page first (§2: the OP should ask), so a link on another site cannot sign anyone out.
 * A `post_logout_redirect_uri` is followed only when registered for the client, exactly.
 */
export function createEndSession(options: EndSessionOptions) {
  const { browser, clients, issuer } = options;

  /** The hint's claims, expired or not (§2 accepts an expired one); undefined when it is not our ID token. */
  const verifyHint = async (token: string): Promise<JWTPayload | undefined> => {
    const verifyOptions = { issuer, algorithms: [SIGNING_ALGORITHM], typ: 'JWT' };
    try {
      return (await jwtVerify(token, options.verificationKeys, verifyOptions)).payload;
    } catch (error) {
      if (error instanceof errors.JWTExpired) return error.payload;
      return undefined;
    }
  };

  const invalid = (reply: FastifyReply, context: PageContext, detail: string, status = 400) =>
    sendPage(reply, context, errorPage(context, context.t('sso.page.logout.invalid', { detail }), status));

  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const context = pageContext(request);
    const parameters = (request.method === 'POST' ? request.body : request.query) as Record<string, unknown> | undefined;
    const text = (name: string) => {
      const value = parameters?.[name];
      return typeof value === 'string' && value.length > 0 && value.length <= 4096 ? value : undefined;
    };
    const hintToken = text('id_token_hint');
    const state = text('state');
    const postLogoutRedirectUri = text('post_logout_redirect_uri');

    const hint = hintToken === undefined ? undefined : await verifyHint(hintToken);
    if (hintToken !== undefined && !hint) return invalid(reply, context, 'id_token_hint is not an ID token issued here.');
    const hintClient = typeof hint?.aud === 'string' ? hint.aud : undefined;
    const clientId = text('client_id') ?? hintClient;
    if (hintClient !== undefined && clientId !== hintClient) return invalid(reply, context, 'client_id does not match id_token_hint.');
    if (postLogoutRedirectUri !== undefined) {
      const client = clientId === undefined ? undefined : await clients.find(clientId);
      // Never a redirect to an address the client did not register: an open redirector otherwise.
      if (!client || !client.postLogoutRedirectUris.includes(postLogoutRedirectUri)) {
        return invalid(reply, context, 'post_logout_redirect_uri is not registered for this client.');
      }
    }

    const finish = () => {
      reply.header('set-cookie', clearCookie(SESSION_COOKIE, browser.secureCookies));
      if (postLogoutRedirectUri === undefined) return sendPage(reply, context, signedOutPage(context));
      return reply.redirect(redirectWith(postLogoutRedirectUri, { state }), 303);
    };

    const session = await browser.currentSession(request);
    if (hint) {
      if (typeof hint.sid === 'string') await browser.endSession(hint.sid);
      // The browser's own session too, when it is the same person's (signed in again since).
      if (session && session.sessionId !== hint.sid && session.identityId === hint.sub) await browser.endSession(session.sessionId);
      return finish();
    }
    if (!session) return finish();
    const cookie = cookieOf(request, SESSION_COOKIE)!;
    if (request.method === 'POST') {
      const confirmation = text('confirmation');
      if (!confirmation || !sameDigest(confirmation, confirmationValue(cookie))) return invalid(reply, context, 'the confirmation did not come from this site.', 403);
      await browser.endSession(session.sessionId);
      return finish();
    }
    const fields: Record<string, string> = { confirmation: confirmationValue(cookie) };
    if (postLogoutRedirectUri !== undefined) fields.post_logout_redirect_uri = postLogoutRedirectUri;
    if (state !== undefined) fields.state = state;
    if (clientId !== undefined) fields.client_id = clientId;
    const targets = postLogoutRedirectUri === undefined ? [] : [new URL(postLogoutRedirectUri).origin];
    return sendPage(reply, context, logoutConfirmationPage(context, END_SESSION_PATH, fields, targets));
  };
}
