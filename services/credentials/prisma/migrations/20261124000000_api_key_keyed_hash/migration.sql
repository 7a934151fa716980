-- API keys are the client's own secret, stored as HMAC-SHA256 under a server key and found
-- by that hash (unique, so O(1)). Keys issued before keep key_prefix and their SHA-256 in
-- secret_hash until first used, when the service moves them to key_hash.
alter table "credentials"."credential" add column "key_hash" char(64);
create unique index "credential_key_hash_key" on "credentials"."credential" ("key_hash");

-- The server key when API_KEY_HASH_KEY is unset: generated once by the first replica to start
-- (insert ... on conflict do nothing), read by every other.
create table "credentials"."server_key" (
  "name"       varchar(64) not null,
  "key"        bytea not null,
  "created_at" timestamptz(3) not null default current_timestamp,
  constraint "server_key_pkey" primary key ("name")
);
