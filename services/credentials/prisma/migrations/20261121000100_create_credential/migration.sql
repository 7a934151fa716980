-- Credentials: how an identity signs in. Secrets are stored only as hashes.
create table "credentials"."credential" (
  "id"           uuid not null default gen_random_uuid(),
  "identity_id"  uuid not null,
  "provider"     varchar(16) not null,
  "type"         varchar(16) not null,
  "secret_hash"  varchar(512),
  "key_prefix"   varchar(32),
  "subject"      varchar(255),
  "created_at"   timestamptz(3) not null default current_timestamp,
  "updated_at"   timestamptz(3) not null default current_timestamp,
  "activated"    boolean not null default true,
  "last_used_at" timestamptz(3),
  constraint "credential_pkey" primary key ("id"),
  -- The type follows from the provider; the service enforces the same pairs with a clear 400.
  constraint "credential_provider_type_check" check (
    ("provider" = 'LOCAL' and "type" = 'PASSWORD') or
    ("provider" in ('GOOGLE', 'GITHUB') and "type" = 'OAUTH') or
    ("provider" = 'API_KEY' and "type" = 'API_KEY')
  )
);

-- One account per external subject (NULL subjects, as LOCAL ones have, never collide).
create unique index "credential_provider_subject_key" on "credentials"."credential" ("provider", "subject");
create unique index "credential_key_prefix_key" on "credentials"."credential" ("key_prefix");
-- At most one password per identity.
create unique index "credential_one_local_per_identity" on "credentials"."credential" ("identity_id") where "provider" = 'LOCAL';
create index "credential_identity_id_idx" on "credentials"."credential" ("identity_id");
create index "credential_created_at_id_idx" on "credentials"."credential" ("created_at", "id");
