-- A refresh-token family (one sign-in) gets its own row, and a token its generation in it: the
-- family's `generation` is the one token that may still be used. A refresh then claims its token
-- by moving the family's generation on, in one statement that reads the token by hash and the
-- family by primary key, whatever the family's size; reuse (a token of an older generation) and
-- revocation (the family's `revoked_at`) are read from the same row. Before this, a refresh
-- checked every token of the family for a revoked one, and grew slower with each rotation.
-- The family's row is also where concurrent claims meet: the second waits on the first's row
-- lock, then finds the generation moved and claims nothing.
CREATE TABLE "sso"."refresh_family" (
    "id" UUID NOT NULL,
    "identity_id" UUID NOT NULL,
    -- The LOCAL credential the sign-in used; null for sign-ins from before it was recorded.
    "credential_id" UUID,
    -- The registered client a browser sign-in issued it to, and the scope granted (null otherwise).
    "client_id" TEXT,
    "scope" TEXT,
    -- The generation of the family's one usable token; older ones are spent.
    "generation" INTEGER NOT NULL,
    -- When its latest token was issued: a family revoked later than an access token's lifetime
    -- after this has no live access token to announce.
    "issued_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "refresh_family_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "refresh_family_identity_id_idx" ON "sso"."refresh_family"("identity_id");
CREATE INDEX "refresh_family_credential_id_idx" ON "sso"."refresh_family"("credential_id");

-- Back-fill: a family's tokens in the order they were used, the unused one (if any) last.
ALTER TABLE "sso"."refresh_token" ADD COLUMN "generation" INTEGER;
UPDATE "sso"."refresh_token" AS "token" SET "generation" = "numbered"."generation"
FROM (
  SELECT "id", row_number() OVER (PARTITION BY "family_id" ORDER BY "used_at" IS NULL, "used_at", "created_at", "id")::int AS "generation"
  FROM "sso"."refresh_token"
) AS "numbered"
WHERE "numbered"."id" = "token"."id";

-- A family whose tokens are all spent (its last refresh's successor was never written) keeps
-- none usable: its generation is one past the last. One revoked token revoked its whole family.
INSERT INTO "sso"."refresh_family" ("id", "identity_id", "credential_id", "client_id", "scope", "generation", "issued_at", "revoked_at")
SELECT "family_id",
       (array_agg("identity_id" ORDER BY "generation" DESC))[1],
       (array_agg("credential_id" ORDER BY "generation" DESC))[1],
       (array_agg("client_id" ORDER BY "generation" DESC))[1],
       (array_agg("scope" ORDER BY "generation" DESC))[1],
       max("generation") + CASE WHEN bool_and("used_at" IS NOT NULL) THEN 1 ELSE 0 END,
       max("created_at"),
       max("revoked_at")
FROM "sso"."refresh_token"
GROUP BY "family_id";

ALTER TABLE "sso"."refresh_token" ALTER COLUMN "generation" SET NOT NULL;
-- What the family row now says once, no longer on each token.
DROP INDEX "sso"."refresh_token_identity_id_idx";
DROP INDEX "sso"."refresh_token_credential_id_idx";
DROP INDEX "sso"."refresh_token_family_id_idx";
ALTER TABLE "sso"."refresh_token"
    DROP COLUMN "identity_id",
    DROP COLUMN "credential_id",
    DROP COLUMN "client_id",
    DROP COLUMN "scope",
    DROP COLUMN "used_at",
    DROP COLUMN "revoked_at";
-- One token per generation of a family: a second claim of one generation could not write its successor.
CREATE UNIQUE INDEX "refresh_token_family_id_generation_key" ON "sso"."refresh_token"("family_id", "generation");
ALTER TABLE "sso"."refresh_token" ADD CONSTRAINT "refresh_token_family_id_fkey"
    FOREIGN KEY ("family_id") REFERENCES "sso"."refresh_family"("id") ON DELETE CASCADE;
