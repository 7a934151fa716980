import type { PrismaClient } from '../generated/prisma/client.js';

/** What a client asked for at the authorization endpoint, validated (see authorization-request.ts). */
export interface RequestedAuthorization {
  clientId: string;
  redirectUri: string;
  scope: string;
  state: string | null;
  nonce: string | null;
  /** The S256 PKCE challenge (RFC 7636 §4.2). */
  codeChallenge: string;
}

/** An authorization request waiting for its user to sign in. */
export interface PendingAuthorization extends RequestedAuthorization {
  id: string;
  /** SHA-256 of the login form's anti-forgery value; null when the form was never shown. */
  csrfHash: string | null;
  expiresAt: Date;
}

/** Who signed in and how: what a code carries to the token endpoint. */
export interface SignedIn {
  sessionId: string;
  identityId: string;
  credentialId: string | null;
  authTime: Date;
}

/** A code the client just redeemed: the request it answered, the sign-in behind it, the token family it starts. */
export interface RedeemedCode extends RequestedAuthorization, SignedIn {
  familyId: string;
}

export type IssuedCode = { codeHash: string; codeExpiresAt: Date } & SignedIn;

export interface BrowserSession extends SignedIn {
  expiresAt: Date;
}

export interface BrowserSignInRepository {
  /** Records a request: pending (a form to show), or with its code at once (a live browser session). */
  insertRequest(request: RequestedAuthorization & { id: string; csrfHash: string | null; expiresAt: Date } & Partial<IssuedCode>): Promise<void>;
  /** Binds a new anti-forgery value to a pending request (the form shown again). */
  rebindForm(id: string, csrfHash: string): Promise<void>;
  /** A request whose form is still good: no code yet, not expired. */
  pendingRequest(id: string, now: Date): Promise<PendingAuthorization | undefined>;
  /**
   * Gives a pending request its code, once: of two completions of one request (a double
   * submit, a replayed form) only the first gets the row back.
   */
  issueCode(requestId: string, now: Date, code: IssuedCode): Promise<PendingAuthorization | undefined>;
  /**
   * Marks a code used, in one statement, when it is live and was issued to this client, for
   * this redirect URI and PKCE challenge; undefined otherwise (nothing changes then).
   */
  redeemCode(
    codeHash: string,
    now: Date,
    binding: { clientId: string; redirectUri: string; codeChallenge: string },
    familyId: string,
  ): Promise<RedeemedCode | undefined>;
  /** The token family a code that was already redeemed started: a second redemption means someone else holds it. */
  familyOfSpentCode(codeHash: string): Promise<string | undefined>;
  /** The token families started by the codes of a browser session. */
  familiesOfSession(sessionId: string): Promise<string[]>;
  insertSession(session: BrowserSession & { tokenHash: string }): Promise<void>;
  liveSession(tokenHash: string, now: Date): Promise<BrowserSession | undefined>;
  /** Ends a browser session (no new code comes from it); true when it was live. */
  endSession(sessionId: string, now: Date): Promise<boolean>;
  /**
   * Forgets sessions that expired before `before`, and requests that expired before it unless
   * their session is still known (logout still needs their families).
   */
  purge(before: Date): Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type RequestRow = Awaited<ReturnType<PrismaClient['authorizationRequest']['findFirstOrThrow']>>;

const pendingOf = (row: RequestRow): PendingAuthorization => ({
  id: row.id,
  clientId: row.clientId,
  redirectUri: row.redirectUri,
  scope: row.scope,
  state: row.state,
  nonce: row.nonce,
  codeChallenge: row.codeChallenge,
  csrfHash: row.csrfHash,
  expiresAt: row.expiresAt,
});

export function createBrowserSignInRepository(prisma: PrismaClient): BrowserSignInRepository {
  return {
    insertRequest: async (request) => {
      await prisma.authorizationRequest.create({ data: request });
    },
    rebindForm: async (id, csrfHash) => {
      await prisma.authorizationRequest.updateMany({ where: { id, codeHash: null }, data: { csrfHash } });
    },
    pendingRequest: async (id, now) => {
      if (!UUID.test(id)) return undefined;
      const row = await prisma.authorizationRequest.findFirst({ where: { id, codeHash: null, expiresAt: { gt: now } } });
      return row ? pendingOf(row) : undefined;
    },
    issueCode: async (requestId, now, code) => {
      if (!UUID.test(requestId)) return undefined;
      const rows = await prisma.authorizationRequest.updateManyAndReturn({
        where: { id: requestId, codeHash: null, expiresAt: { gt: now } },
        data: { ...code, csrfHash: null },
      });
      return rows[0] ? pendingOf(rows[0]) : undefined;
    },
    redeemCode: async (codeHash, now, binding, familyId) => {
      if (!UUID.test(binding.clientId)) return undefined;
      const rows = await prisma.authorizationRequest.updateManyAndReturn({
        where: { codeHash, codeUsedAt: null, codeExpiresAt: { gt: now }, ...binding },
        data: { codeUsedAt: now, familyId },
      });
      const row = rows[0];
      if (!row || !row.sessionId || !row.identityId || !row.authTime) return undefined;
      return { ...pendingOf(row), sessionId: row.sessionId, identityId: row.identityId, credentialId: row.credentialId, authTime: row.authTime, familyId };
    },
    familyOfSpentCode: async (codeHash) =>
      (await prisma.authorizationRequest.findFirst({ where: { codeHash, codeUsedAt: { not: null } }, select: { familyId: true } }))?.familyId ?? undefined,
    familiesOfSession: async (sessionId) =>
      (await prisma.authorizationRequest.findMany({ where: { sessionId, familyId: { not: null } }, select: { familyId: true } })).map((row) => row.familyId!),
    insertSession: async ({ sessionId, ...session }) => {
      await prisma.browserSession.create({ data: { id: sessionId, ...session } });
    },
    liveSession: async (tokenHash, now) => {
      const row = await prisma.browserSession.findFirst({ where: { tokenHash, endedAt: null, expiresAt: { gt: now } } });
      return row ? { sessionId: row.id, identityId: row.identityId, credentialId: row.credentialId, authTime: row.authTime, expiresAt: row.expiresAt } : undefined;
    },
    endSession: async (sessionId, now) => {
      if (!UUID.test(sessionId)) return false;
      return (await prisma.browserSession.updateMany({ where: { id: sessionId, endedAt: null }, data: { endedAt: now } })).count === 1;
    },
    purge: async (before) => {
      await prisma.browserSession.deleteMany({ where: { expiresAt: { lt: before } } });
      await prisma.$executeRaw`
        DELETE FROM "sso"."authorization_request" AS "request"
        WHERE "expires_at" < ${before}
          AND ("session_id" IS NULL OR NOT EXISTS (SELECT 1 FROM "sso"."browser_session" WHERE "id" = "request"."session_id"))`;
    },
  };
}
