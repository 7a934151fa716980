-- sso: signing keys and refresh tokens.
CREATE SCHEMA IF NOT EXISTS "sso";

CREATE TABLE "sso"."signing_key" (
    "kid" TEXT NOT NULL,
    "algorithm" TEXT NOT NULL DEFAULT 'ES256',
    "public_jwk" JSONB NOT NULL,
    "private_key" TEXT NOT NULL,
    "private_key_encrypted" BOOLEAN NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "activates_at" TIMESTAMPTZ(3) NOT NULL,
    "retired_at" TIMESTAMPTZ(3),
    "not_after" TIMESTAMPTZ(3),

    CONSTRAINT "signing_key_pkey" PRIMARY KEY ("kid")
);

CREATE INDEX "signing_key_not_after_idx" ON "sso"."signing_key"("not_after");

CREATE TABLE "sso"."refresh_token" (
    "id" UUID NOT NULL,
    "token_hash" TEXT NOT NULL,
    "family_id" UUID NOT NULL,
    "identity_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "refresh_token_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "refresh_token_token_hash_key" ON "sso"."refresh_token"("token_hash");
CREATE INDEX "refresh_token_family_id_idx" ON "sso"."refresh_token"("family_id");
CREATE INDEX "refresh_token_identity_id_idx" ON "sso"."refresh_token"("identity_id");
