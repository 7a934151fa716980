-- The platform's own first-party client: the password grant's when a request names no
-- client, so every access token says which client it was issued to (RFC 9068 §2.2,
-- `client_id`). Public, no redirect URIs (it cannot use the browser flow), the password and
-- refresh_token grants. An admin may narrow it, or delete it to turn the password grant off
-- for every request that names no client (RFC 9700 §2.4). Its id is fixed: FIRST_PARTY_CLIENT_ID
-- in services/sso/src/clients/first-party.ts.
INSERT INTO "sso"."oauth_client" ("id", "name", "type", "secret_hash", "redirect_uris", "post_logout_redirect_uris", "grant_types", "scopes")
VALUES ('00000000-0000-4000-8000-00000000f1a7', 'Platform (password sign-ins that name no client)', 'public', NULL, '{}', '{}', '{password,refresh_token}', '{openid,email,profile,offline_access}')
ON CONFLICT ("id") DO NOTHING;
