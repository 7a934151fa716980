import { isUuid, type SqlSession } from '@app/platform';

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
   * Records a sign-in's browser session and gives the pending request its code, in one
   * statement. The session is kept whatever becomes of the request; the code is given once: of
   * two completions of one request (a double submit, a replayed form) only the first gets the
   * row back.
   */
  startSession(session: BrowserSession & { tokenHash: string }, requestId: string, now: Date, code: IssuedCode): Promise<PendingAuthorization | undefined>;
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
  liveSession(tokenHash: string, now: Date): Promise<BrowserSession | undefined>;
  /** Ends a browser session (no new code comes from it); true when it was live. */
  endSession(sessionId: string, now: Date): Promise<boolean>;
  /**
   * Forgets sessions that expired before `before`, and requests that expired before it unless
   * their session is still known (logout still needs their families).
   */
  purge(before: Date): Promise<void>;
}

interface RequestRow {
  id: string;
  client_id: string;
  redirect_uri: string;
  scope: string;
  state: string | null;
  nonce: string | null;
  code_challenge: string;
  csrf_hash: string | null;
  expires_at: Date;
  session_id: string | null;
  identity_id: string | null;
  credential_id: string | null;
  auth_time: Date | null;
}

/** The columns a RequestRow is read from. */
const REQUEST_COLUMNS = `"id", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge", "csrf_hash", "expires_at",
  "session_id", "identity_id", "credential_id", "auth_time"`;

const pendingOf = (row: RequestRow): PendingAuthorization => ({
  id: row.id,
  clientId: row.client_id,
  redirectUri: row.redirect_uri,
  scope: row.scope,
  state: row.state,
  nonce: row.nonce,
  codeChallenge: row.code_challenge,
  csrfHash: row.csrf_hash,
  expiresAt: row.expires_at,
});

/**
 * Every statement of a browser sign-in (the authorization request, the form, the code, the
 * session) runs on the database port itself, as the refresh tokens' do: through Prisma each
 * would also pay its query pipeline and driver adapter on the main thread, and a sign-in makes
 * six of them.
 */
export function createBrowserSignInRepository(sql: SqlSession): BrowserSignInRepository {
  return {
    insertRequest: async (request) => {
      await sql.query(
        `INSERT INTO "sso"."authorization_request" ("id", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge", "csrf_hash",
           "expires_at", "code_hash", "code_expires_at", "session_id", "identity_id", "credential_id", "auth_time")
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
        [
          request.id,
          request.clientId,
          request.redirectUri,
          request.scope,
          request.state,
          request.nonce,
          request.codeChallenge,
          request.csrfHash,
          request.expiresAt,
          request.codeHash ?? null,
          request.codeExpiresAt ?? null,
          request.sessionId ?? null,
          request.identityId ?? null,
          request.credentialId ?? null,
          request.authTime ?? null,
        ],
      );
    },
    rebindForm: async (id, csrfHash) => {
      if (!isUuid(id)) return;
      await sql.query(`UPDATE "sso"."authorization_request" SET "csrf_hash" = $2 WHERE "id" = $1 AND "code_hash" IS NULL`, [id, csrfHash]);
    },
    pendingRequest: async (id, now) => {
      if (!isUuid(id)) return undefined;
      const rows = await sql.query<RequestRow>(
        `SELECT ${REQUEST_COLUMNS} FROM "sso"."authorization_request" WHERE "id" = $1 AND "code_hash" IS NULL AND "expires_at" > $2`,
        [id, now],
      );
      return rows[0] ? pendingOf(rows[0]) : undefined;
    },
    startSession: async ({ sessionId, tokenHash, identityId, credentialId, authTime, expiresAt }, requestId, now, code) => {
      const session = [sessionId, tokenHash, identityId, credentialId, authTime, expiresAt];
      const insertSession = `INSERT INTO "sso"."browser_session" ("id", "token_hash", "identity_id", "credential_id", "auth_time", "expires_at") VALUES ($1, $2, $3, $4, $5, $6)`;
      // A request id that is no UUID names no request: the session alone is recorded.
      if (!isUuid(requestId)) {
        await sql.query(insertSession, session);
        return undefined;
      }
      // Both run whatever the other finds (a data-modifying WITH always runs to its end).
      const rows = await sql.query<RequestRow>(
        `WITH "session" AS (${insertSession})
         UPDATE "sso"."authorization_request"
         SET "code_hash" = $9, "code_expires_at" = $10, "session_id" = $11, "identity_id" = $12, "credential_id" = $13, "auth_time" = $14, "csrf_hash" = NULL
         WHERE "id" = $7 AND "code_hash" IS NULL AND "expires_at" > $8
         RETURNING ${REQUEST_COLUMNS}`,
        [...session, requestId, now, code.codeHash, code.codeExpiresAt, code.sessionId, code.identityId, code.credentialId, code.authTime],
      );
      return rows[0] ? pendingOf(rows[0]) : undefined;
    },
    redeemCode: async (codeHash, now, binding, familyId) => {
      if (!isUuid(binding.clientId)) return undefined;
      const rows = await sql.query<RequestRow>(
        `UPDATE "sso"."authorization_request" SET "code_used_at" = $2, "family_id" = $6
         WHERE "code_hash" = $1 AND "code_used_at" IS NULL AND "code_expires_at" > $2
           AND "client_id" = $3 AND "redirect_uri" = $4 AND "code_challenge" = $5
         RETURNING ${REQUEST_COLUMNS}`,
        [codeHash, now, binding.clientId, binding.redirectUri, binding.codeChallenge, familyId],
      );
      const row = rows[0];
      if (!row || !row.session_id || !row.identity_id || !row.auth_time) return undefined;
      return { ...pendingOf(row), sessionId: row.session_id, identityId: row.identity_id, credentialId: row.credential_id, authTime: row.auth_time, familyId };
    },
    familyOfSpentCode: async (codeHash) =>
      (
        await sql.query<{ family_id: string | null }>(
          `SELECT "family_id" FROM "sso"."authorization_request" WHERE "code_hash" = $1 AND "code_used_at" IS NOT NULL`,
          [codeHash],
        )
      )[0]?.family_id ?? undefined,
    familiesOfSession: async (sessionId) =>
      (
        await sql.query<{ family_id: string }>(
          `SELECT "family_id" FROM "sso"."authorization_request" WHERE "session_id" = $1 AND "family_id" IS NOT NULL`,
          [sessionId],
        )
      ).map((row) => row.family_id),
    liveSession: async (tokenHash, now) => {
      const rows = await sql.query<{ id: string; identity_id: string; credential_id: string | null; auth_time: Date; expires_at: Date }>(
        `SELECT "id", "identity_id", "credential_id", "auth_time", "expires_at" FROM "sso"."browser_session"
         WHERE "token_hash" = $1 AND "ended_at" IS NULL AND "expires_at" > $2`,
        [tokenHash, now],
      );
      const row = rows[0];
      return row ? { sessionId: row.id, identityId: row.identity_id, credentialId: row.credential_id, authTime: row.auth_time, expiresAt: row.expires_at } : undefined;
    },
    endSession: async (sessionId, now) => {
      if (!isUuid(sessionId)) return false;
      const ended = await sql.query(`UPDATE "sso"."browser_session" SET "ended_at" = $2 WHERE "id" = $1 AND "ended_at" IS NULL RETURNING "id"`, [sessionId, now]);
      return ended.length === 1;
    },
    purge: async (before) => {
      await sql.query(`DELETE FROM "sso"."browser_session" WHERE "expires_at" < $1`, [before]);
      await sql.query(
        `DELETE FROM "sso"."authorization_request" AS "request"
         WHERE "expires_at" < $1
           AND ("session_id" IS NULL OR NOT EXISTS (SELECT 1 FROM "sso"."browser_session" WHERE "id" = "request"."session_id"))`,
        [before],
      );
    },
  };
}
