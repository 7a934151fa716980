import { describe, expect, it } from '@jest/globals';
import { pageOf } from '@app/platform';
import { z } from 'zod';
import { decimal, defineDomain, normalizeQuery, type ListQuery, type RecordFilters } from '../src/index.js';

const gadget = defineDomain({ name: 'gadget', columns: { label: z.string().max(10), weight: decimal({ precision: 5, scale: 1 }) } });
/** The cache key of a list query string, as the list route computes it. */
const keyOf = (search: string) => {
  const raw: Record<string, string | string[]> = {};
  for (const [key, value] of new URLSearchParams(search)) raw[key] = key in raw ? [raw[key]!].flat().concat(value) : value;
  const { page, filters } = pageOf(gadget.schemas.query.parse(raw) as ListQuery);
  return normalizeQuery(page, filters as RecordFilters, undefined);
};

describe('the cache key of a filtered list', () => {
  it('is the same for one filter set in any parameter order, and for a bare value and its eq', () => {
    expect(keyOf('weight=gte.1&weight=lt.2&label=like.a*')).toBe(keyOf('label=like.a*&weight=lt.2&weight=gte.1'));
    expect(keyOf('label=a')).toBe(keyOf('label=eq.a'));
    expect(keyOf('limit=20&weight=1')).toBe(keyOf('weight=eq.1.0'));
  });

  it('differs for every different filter set', () => {
    const queries = ['', 'weight=gte.1', 'weight=gt.1', 'weight=not.gte.1', 'weight=gte.1&weight=lt.2', 'weight=in.(1,2)', 'weight=in.(1)', 'label=like.a*', 'label=ilike.a*', 'label=a*', 'label=is.null', 'label=not.is.null'];
    expect(new Set(queries.map(keyOf)).size).toBe(queries.length);
  });
});
