import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { openTestDependencies, testModes } from '@app/testing';
import { z } from 'zod';
import { checkDomainTables, decimal, defineDomain, DomainTableMismatchError, domainTableSql, loadDomains } from '../src/index.js';

const coupon = defineDomain({
  name: 'coupon',
  columns: {
    code: z.string().min(4).max(20),
    percent: decimal({ precision: 5, scale: 2 }).min(0).max(100),
    uses: z.number().int().min(0),
    kind: z.enum(['gift', 'promotion']),
    stackable: z.boolean(),
    note: z.string().optional(),
  },
  unique: ['code'],
  indexes: ['percent', ['kind', 'percent']],
});

describe('domainTableSql', () => {
  it('writes the table a declaration needs: narrowest types, not null unless optional, defaults, and its indexes', () => {
    expect(domainTableSql(coupon, 'shop')).toBe(
      [
        'create table "shop"."coupon" (',
        '  "id" uuid not null default gen_random_uuid(),',
        '  "code" varchar(20) not null,',
        '  "percent" numeric(5,2) not null,',
        '  "uses" integer not null,',
        '  "kind" varchar(9) not null,',
        '  "stackable" boolean not null,',
        '  "note" text,',
        '  "activated" boolean not null default true,',
        '  "createdAt" timestamptz(3) not null default current_timestamp,',
        '  "updatedAt" timestamptz(3) not null default current_timestamp,',
        '  constraint "coupon_pkey" primary key ("id")',
        ');',
        'create unique index "coupon_code_key" on "shop"."coupon" ("code");',
        'create index "coupon_percent_id_idx" on "shop"."coupon" ("percent", "id");',
        'create index "coupon_kind_percent_id_idx" on "shop"."coupon" ("kind", "percent", "id");',
        'create index "coupon_createdAt_id_idx" on "shop"."coupon" ("createdAt", "id");',
      ].join('\n'),
    );
  });
});

describe('loadDomains', () => {
  const fixtures = (name: string) => fileURLToPath(new URL(`./fixtures/${name}/`, import.meta.url));

  it('loads the one domain of each module of a folder, in file-name order', async () => {
    expect((await loadDomains(fixtures('domains'))).map((domain) => domain.name)).toEqual(['article', 'gadget']);
  });

  it('refuses a module that exports more than one domain', async () => {
    await expect(loadDomains(fixtures('two-domains'))).rejects.toThrow(/both\.ts must export exactly one domain .*, and exports 2/);
  });
});

describe.each(testModes())('checkDomainTables (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
  });
  afterAll(() => deps.dispose());
  beforeEach(async () => {
    await deps.database.exec('drop schema if exists "shop" cascade; create schema "shop";');
    await deps.database.exec(domainTableSql(coupon, 'shop'));
  });

  /** The problems the check reports after `alter`, as `domain: problem => fix`. */
  const problemsAfter = async (alter: string) => {
    if (alter) await deps.database.exec(alter);
    try {
      await checkDomainTables(deps.database, 'shop', [coupon]);
      return [];
    } catch (error) {
      expect(error).toBeInstanceOf(DomainTableMismatchError);
      return (error as DomainTableMismatchError).problems.map((p) => `${p.domain}: ${p.problem} => ${p.fix}`);
    }
  };

  it('accepts the table domainTableSql writes', async () => {
    expect(await problemsAfter('')).toEqual([]);
  });

  it('accepts wider columns than the declaration needs, and undeclared columns a create can leave empty', async () => {
    expect(
      await problemsAfter(`alter table "shop"."coupon" alter column "code" type text, alter column "kind" type varchar(20),
        alter column "percent" type numeric(10,3), add column "legacy" text, add column "origin" text not null default 'web';`),
    ).toEqual([]);
  });

  it.each([
    ['a missing table', 'drop table "shop"."coupon";', /^coupon: table "shop"."coupon" does not exist => create table "shop"."coupon" \(/],
    [
      'a missing column',
      'alter table "shop"."coupon" drop column "uses";',
      'coupon: column "uses" of "shop"."coupon" does not exist => alter table "shop"."coupon" add column "uses" integer not null;',
    ],
    [
      'another type',
      'alter table "shop"."coupon" alter column "uses" type bigint;',
      'coupon: column "uses" of "shop"."coupon" is bigint, not integer => alter table "shop"."coupon" alter column "uses" type integer;',
    ],
    [
      'a text column shorter than the declared maximum',
      'alter table "shop"."coupon" alter column "code" type varchar(10);',
      'coupon: column "code" of "shop"."coupon" holds at most 10 characters, and the declaration accepts 20 => alter table "shop"."coupon" alter column "code" type varchar(20);',
    ],
    [
      'a decimal column with fewer digits',
      'alter table "shop"."coupon" alter column "percent" type numeric(4,2);',
      'coupon: column "percent" of "shop"."coupon" is numeric(4,2), and the declaration accepts numeric(5,2) => alter table "shop"."coupon" alter column "percent" type numeric(5,2);',
    ],
    [
      'a not null column the declaration makes optional',
      'alter table "shop"."coupon" alter column "note" set not null;',
      'coupon: column "note" of "shop"."coupon" is not null, and the declaration makes it optional => alter table "shop"."coupon" alter column "note" drop not null;',
    ],
    [
      'a nullable column the declaration requires',
      'alter table "shop"."coupon" alter column "stackable" drop not null;',
      'coupon: column "stackable" of "shop"."coupon" is nullable, and the declaration requires it => alter table "shop"."coupon" alter column "stackable" set not null;',
    ],
    [
      'a lost default',
      'alter table "shop"."coupon" alter column "activated" drop default;',
      'coupon: column "activated" of "shop"."coupon" has no default, and creates leave it to the database => alter table "shop"."coupon" alter column "activated" set default true;',
    ],
    [
      'an undeclared column every create would fail on',
      'alter table "shop"."coupon" add column "owner" text not null;',
      'coupon: column "owner" of "shop"."coupon" is not declared, and is not null without a default: every create would fail => declare it in defineDomain, or: alter table "shop"."coupon" drop column "owner";',
    ],
    [
      'a missing unique index',
      'drop index "shop"."coupon_code_key";',
      'coupon: column "code" is declared unique, and "shop"."coupon" has no unique index on it => create unique index "coupon_code_key" on "shop"."coupon" ("code");',
    ],
    [
      'an undeclared unique index',
      'create unique index "coupon_kind_key" on "shop"."coupon" ("kind");',
      'coupon: "shop"."coupon" has a unique index "coupon_kind_key" on (kind), which the declaration does not list in unique => list it in unique, or: drop index "shop"."coupon_kind_key";',
    ],
    [
      'a missing declared index',
      'drop index "shop"."coupon_percent_id_idx";',
      'coupon: "shop"."coupon" has no index on (percent, id), which the declaration lists => create index "coupon_percent_id_idx" on "shop"."coupon" ("percent", "id");',
    ],
    [
      'a missing declared index of several fields (one added to the declaration of an existing table)',
      'drop index "shop"."coupon_kind_percent_id_idx";',
      'coupon: "shop"."coupon" has no index on (kind, percent, id), which the declaration lists => create index "coupon_kind_percent_id_idx" on "shop"."coupon" ("kind", "percent", "id");',
    ],
    [
      'an index of the declared fields in another order',
      'drop index "shop"."coupon_kind_percent_id_idx"; create index "coupon_percent_kind_idx" on "shop"."coupon" ("percent", "kind", "id");',
      'coupon: "shop"."coupon" has no index on (kind, percent, id), which the declaration lists => create index "coupon_kind_percent_id_idx" on "shop"."coupon" ("kind", "percent", "id");',
    ],
  ])('reports %s, with the migration that fixes it', async (_what, alter, expected) => {
    const problems = await problemsAfter(alter);
    expect(problems).toEqual([expected instanceof RegExp ? expect.stringMatching(expected) : expected]);
  });

  it('names every problem of every domain in one message', async () => {
    await deps.database.exec('alter table "shop"."coupon" alter column "uses" type bigint, alter column "note" set not null;');
    const check = checkDomainTables(deps.database, 'shop', [coupon, defineDomain({ name: 'absent', columns: { a: z.string() } })]);
    await expect(check).rejects.toThrow(/^Generic domains' tables do not match their declarations/);
    await expect(check).rejects.toThrow('- domain "coupon": column "uses" of "shop"."coupon" is bigint, not integer');
    await expect(check).rejects.toThrow('- domain "coupon": column "note" of "shop"."coupon" is not null');
    await expect(check).rejects.toThrow('- domain "absent": table "shop"."absent" does not exist\n    fix: create table "shop"."absent" (');
  });
});
