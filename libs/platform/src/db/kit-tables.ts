import { quoteIdent } from './database.js';

/**
 * The tables the kit itself reads and writes in a service's schema, named by what the service
 * declares (`outbox: true`, `idempotency: true` in `defineService`).
 *  - outbox: the transactional outbox (bus/outbox.ts). Events are written in the same
 *    transaction as the change they describe, and the relay publishes them to the bus.
 *  - idempotency: the answers of creates sent with an Idempotency-Key (http/idempotency.ts),
 *    replayed to a retry with the same key and body for 24 hours. scope is the SHA-256 of the
 *    caller, method and path; fingerprint the SHA-256 of the canonical body (a secret in it
 *    replaced by its keyed hash).
 */
export type KitTable = 'outbox' | 'idempotency';

/** A migration of the kit, written for the schema it is applied to. */
export interface KitMigration {
  /** Recorded in the service's `_migrations` with a prefix (`KIT_MIGRATION_PREFIX`), apart from its own. */
  name: string;
  sql(schema: string): string;
}

/** Marks the kit's migrations in a service's history: no file of a service's own folder starts so. */
export const KIT_MIGRATION_PREFIX = '@app/platform/';

/**
 * The migrations of each kit table, in order. Applied migrations are immutable, as a service's
 * are: a change to a table is a new entry here.
 *
 * "if not exists" throughout: these tables were created before by the services' own
 * migrations (`<timestamp>_outbox`, `<timestamp>_idempotency`, and earlier by the migrator
 * itself), with this very definition, so a database migrated then takes these as no-ops.
 */
export const KIT_MIGRATIONS: Readonly<Record<KitTable, readonly KitMigration[]>> = {
  outbox: [
    {
      name: '20261123000000_outbox',
      sql: (schema) => `create table if not exists ${quoteIdent(schema)}."_outbox" (
  seq bigserial primary key,
  id uuid not null unique,
  subject text not null,
  payload jsonb not null,
  created_at timestamptz not null default now()
);`,
    },
  ],
  idempotency: [
    {
      name: '20261127000000_idempotency',
      sql: (schema) => `create table if not exists ${quoteIdent(schema)}."_idempotency" (
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
create index if not exists "_idempotency_created_at_idx" on ${quoteIdent(schema)}."_idempotency" (created_at);`,
    },
  ],
};
