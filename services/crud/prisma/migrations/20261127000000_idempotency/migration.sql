-- Idempotency keys (libs/platform/src/http/idempotency.ts): the answer of a create sent with
-- an Idempotency-Key, written in the create's own transaction and replayed to a retry with the
-- same key and body for 24 hours. scope is the SHA-256 of the caller, method and path; the
-- fingerprint the SHA-256 of the canonical body (a secret in it replaced by its keyed hash).
create table "crud"."_idempotency" (
  scope text not null,
  key text not null,
  fingerprint text not null,
  status integer not null,
  body text not null,
  headers jsonb not null,
  created_at timestamptz not null default now(),
  primary key (scope, key)
);
-- Expired keys are pruned oldest first as new ones are stored.
create index "_idempotency_created_at_idx" on "crud"."_idempotency" (created_at);
