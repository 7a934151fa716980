import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * What an upstream sign-in needs from the hosted login (services/sso's browser sign-in): a
 * way to finish and a way to fail, both as the browser sees them. The federation routes find
 * out who signed in; the browser side owns sessions, pending authorization requests and pages.
 */
export interface BrowserSignIn {
  /**
   * Sets the browser session for the identity and continues the pending authorization request
   * (a redirect back to the client with a code, or the next step of the login page).
   * `credentialId` is the GOOGLE/GITHUB credential signed in with, so ending it ends the session.
   */
  completeSignIn(
    request: FastifyRequest,
    reply: FastifyReply,
    signIn: { requestId: string; identityId: string; credentialId: string | null },
  ): Promise<FastifyReply>;
  /**
   * A localized HTML error page: `message` is already in the person's language. With the
   * pending request's id, the page may offer to go back to its login form.
   */
  /**
   * The pending authorization request, while it still waits for a sign-in: the start checks it
   * before sending anyone upstream, so a stale or made-up request ends here, not after the
   * provider's login. Optional: without it the request is checked only at completeSignIn.
   */
  pendingRequest?(requestId: string): Promise<unknown>;
  renderSignInError(
    request: FastifyRequest,
    reply: FastifyReply,
    error: { requestId?: string; message: string; status?: number },
  ): Promise<FastifyReply> | FastifyReply;
}
