-- Browser sign-in (OpenID Connect authorization code with PKCE): registered clients, the
-- authorization requests and their codes, and the browser sessions behind them.

-- An OAuth client an admin registered. A confidential client's secret is 256 random bits,
-- kept as its SHA-256 only (enough for a value nobody can guess; no salt or stretching needed).
CREATE TABLE "sso"."oauth_client" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "secret_hash" TEXT,
    "redirect_uris" TEXT[] NOT NULL,
    "post_logout_redirect_uris" TEXT[] NOT NULL,
    "grant_types" TEXT[] NOT NULL,
    "scopes" TEXT[] NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "oauth_client_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "oauth_client_type_check" CHECK ("type" IN ('public', 'confidential')),
    CONSTRAINT "oauth_client_secret_check" CHECK (("type" = 'confidential') = ("secret_hash" IS NOT NULL))
);

-- A signed-in browser: the cookie's value is never stored, only its SHA-256. Its id is the
-- `sid` of every token issued through it, so ending it revokes them as one.
CREATE TABLE "sso"."browser_session" (
    "id" UUID NOT NULL,
    "token_hash" TEXT NOT NULL,
    "identity_id" UUID NOT NULL,
    "credential_id" UUID,
    "auth_time" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3),

    CONSTRAINT "browser_session_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "browser_session_token_hash_key" ON "sso"."browser_session"("token_hash");
CREATE INDEX "browser_session_expires_at_idx" ON "sso"."browser_session"("expires_at");

-- An authorization request: pending while the user signs in (the login form's anti-forgery
-- value is bound to it by hash), then holding its code (by hash) until the client redeems it
-- once, which starts a token family (`family_id`, the tokens' `sid`). A redeemed row is kept
-- as long as its tokens may live: a second redemption is seen as the reuse it is and revokes
-- that family, and signing the browser session out revokes the families of all its codes.
CREATE TABLE "sso"."authorization_request" (
    "id" UUID NOT NULL,
    "client_id" UUID NOT NULL,
    "redirect_uri" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "state" TEXT,
    "nonce" TEXT,
    "code_challenge" TEXT NOT NULL,
    "csrf_hash" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "code_hash" TEXT,
    "code_expires_at" TIMESTAMPTZ(3),
    "code_used_at" TIMESTAMPTZ(3),
    "session_id" UUID,
    "identity_id" UUID,
    "credential_id" UUID,
    "auth_time" TIMESTAMPTZ(3),
    "family_id" UUID,

    CONSTRAINT "authorization_request_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "authorization_request_code_hash_key" ON "sso"."authorization_request"("code_hash");
CREATE INDEX "authorization_request_expires_at_idx" ON "sso"."authorization_request"("expires_at");
CREATE INDEX "authorization_request_session_id_idx" ON "sso"."authorization_request"("session_id");

-- Tokens from a registered client keep saying so when refreshed (RFC 9068 `client_id`, `scope`).
ALTER TABLE "sso"."refresh_token" ADD COLUMN "client_id" TEXT;
ALTER TABLE "sso"."refresh_token" ADD COLUMN "scope" TEXT;
