-- A sign-in remembers the credential it was made with: deactivating or deleting that
-- credential ends exactly those sessions (their refresh tokens, and their access tokens by sid).
ALTER TABLE "sso"."refresh_token" ADD COLUMN "credential_id" UUID;

CREATE INDEX "refresh_token_credential_id_idx" ON "sso"."refresh_token"("credential_id");
