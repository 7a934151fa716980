-- sso's record of what it revoked, the source every verifier seeds its revocation set from
-- (libs/platform/src/auth/revocations.ts): the cache only ever held a copy, which a restarted
-- Redis forgot. A row is written in the transaction of the change that causes it, beside its
-- event in the outbox, and outlives every token it matches until `expires_at`; then it is pruned.
-- One row per revoked session (`sid`), identity (`sub`) or API key (`client_id`): a later
-- revocation of the same one only moves its cut-off and expiry later.
create table "sso"."revocation" (
  kind text not null check (kind in ('session', 'subject', 'client')),
  id text not null,
  -- Epoch seconds, as in the tokens' `iat`: tokens issued earlier are revoked (subject, client).
  issued_before bigint,
  -- Epoch seconds: every token the row can match has expired by then.
  expires_at bigint not null,
  primary key (kind, id)
);

create index "revocation_expires_at_idx" on "sso"."revocation" (expires_at);
