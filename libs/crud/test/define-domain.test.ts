import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { decimal, defineDomain } from '../src/index.js';

describe('defineDomain', () => {
  const gadget = defineDomain({
    name: 'gadget',
    columns: { label: z.string().max(10), weight: decimal({ precision: 5, scale: 1 }), notes: z.string().optional() },
    unique: ['label'],
  });

  it('derives the plural, prefix, tag, table and field order', () => {
    expect(gadget).toMatchObject({ plural: 'gadgets', prefix: '/api/v1/gadgets', tag: 'Gadget', table: 'gadget' });
    expect(gadget.fields).toEqual(['id', 'label', 'weight', 'notes', 'activated', 'createdAt', 'updatedAt']);
  });

  it('honours a custom plural and prefix', () => {
    const person = defineDomain({ name: 'person', plural: 'people', prefix: '/api/v2/people', columns: { name: z.string() } });
    expect(person).toMatchObject({ plural: 'people', prefix: '/api/v2/people' });
  });

  it('bounds a decimal column to what decimal(precision, scale) holds', () => {
    const create = gadget.schemas.create;
    expect(create.safeParse({ label: 'a', weight: 9999.9 }).success).toBe(true);
    expect(create.safeParse({ label: 'a', weight: 10000 }).success).toBe(false);
    expect(create.safeParse({ label: 'a', weight: 1.25 }).success).toBe(false);
  });

  it('bounds an integer column to a Postgres integer', () => {
    const counter = defineDomain({ name: 'counter', columns: { value: z.number().int() } });
    expect(counter.schemas.create.safeParse({ value: 2 ** 31 - 1 }).success).toBe(true);
    expect(counter.schemas.create.safeParse({ value: 2 ** 31 }).success).toBe(false);
  });

  it.each([
    ['a name that is not a plain identifier', { name: 'Bad-Name', columns: {} }],
    ['a column named like a common field', { name: 'x', columns: { createdAt: z.string() } }],
    ['a column named like a paging parameter', { name: 'x', columns: { limit: z.number().int() } }],
    ['a column name with a quote', { name: 'x', columns: { 'a"b': z.string() } }],
    ['a unique column that does not exist', { name: 'x', columns: { a: z.string() }, unique: ['b'] }],
    ['a column named cursor, the paging parameter', { name: 'x', columns: { cursor: z.string() } }],
    ['an indexed field that does not exist', { name: 'x', columns: { a: z.string() }, indexes: [['a', 'b']] }],
    ['an index that lists a field twice', { name: 'x', columns: { a: z.string() }, indexes: [['a', 'a']] }],
    ['an unsupported column type', { name: 'x', columns: { at: z.date() } }],
  ])('refuses %s', (_what, spec) => {
    expect(() => defineDomain(spec as never)).toThrow();
  });
});
