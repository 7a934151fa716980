-- The transactional outbox (libs/platform/src/bus/outbox.ts): events are written here in the
-- same transaction as the change they describe, and the relay publishes them to the bus;
-- identity.created and identity.updated go through it.
-- "if not exists": the platform's migrator created this table itself before the service's
-- migrations owned it, so databases migrated then already have it.
create table if not exists "identity"."_outbox" (
  seq bigserial primary key,
  id uuid not null unique,
  subject text not null,
  payload jsonb not null,
  created_at timestamptz not null default now()
);
