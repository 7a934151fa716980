-- Identities: who someone is, never how they sign in (see the credentials service).
create table "identity"."identity" (
  "id"         uuid not null default gen_random_uuid(),
  "name"       varchar(200) not null,
  -- Emails are stored lower-cased, so the plain unique index below is case-insensitive
  -- without citext (which the embedded database does not ship).
  "email"      varchar(320) not null,
  "avatar"     varchar(2048),
  "roles"      text[] not null default '{}',
  "created_at" timestamptz(3) not null default current_timestamp,
  "updated_at" timestamptz(3) not null default current_timestamp,
  "activated"  boolean not null default true,
  constraint "identity_pkey" primary key ("id"),
  constraint "identity_email_lower_check" check ("email" = lower("email"))
);

create unique index "identity_email_key" on "identity"."identity" ("email");
-- The default list order (-createdAt, ties by id) reads an index instead of sorting the table.
create index "identity_created_at_id_idx" on "identity"."identity" ("created_at", "id");
