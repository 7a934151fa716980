import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { decimal, defineDomain, describeColumn, exampleOf } from '../src/index.js';

const example = (schema: z.ZodType) => exampleOf(describeColumn('field', schema));
const metaExamples = (schema: z.ZodType) => z.globalRegistry.get(schema)?.examples;

describe('examples fitted to a column’s bounds', () => {
  it('keeps a decimal within its precision, scale and bounds (never 99999999.99000001)', () => {
    expect(example(decimal({ precision: 10, scale: 2 }).min(0))).toBe(9.99);
    expect(example(decimal({ precision: 3, scale: 2 }))).toBe(9.99);
    expect(example(decimal({ precision: 2, scale: 1 }))).toBe(9.9);
    expect(example(decimal({ precision: 6, scale: 3 }).min(123.4567))).toBe(123.457);
    expect(example(decimal({ precision: 10, scale: 0 }).max(-5))).toBe(-5);
  });

  it('keeps an integer, a text, an enum and a boolean within theirs', () => {
    expect(example(z.number().int().min(20))).toBe(20);
    expect(example(z.number().int().max(3))).toBe(3);
    expect(example(z.string().min(40))).toHaveLength(40);
    expect(example(z.string().max(4))).toBe('Exam');
    expect(example(z.string().regex(/^[a-z-]+$/))).toBe('example-field');
    expect(example(z.enum(['b', 'a']))).toBe('b');
    expect(example(z.boolean())).toBe(true);
  });

  it('offers none where no candidate fits, rather than a wrong one', () => {
    expect(example(z.string().regex(/^\d{5}$/))).toBeUndefined();
  });

  it('gives a domain examples its own schemas accept, or none when a required column has no example', () => {
    const shop = defineDomain({ name: 'shop', columns: { name: z.string().min(1).max(20), rating: decimal({ precision: 2, scale: 1 }).min(1) } });
    const [created] = metaExamples(shop.schemas.create) as unknown[];
    expect(created).toEqual({ name: 'Example name', rating: 9.9 });
    expect(shop.schemas.create.safeParse(created).success).toBe(true);
    expect(shop.schemas.record.safeParse((metaExamples(shop.schemas.record) as unknown[])[0]).success).toBe(true);
    const zip = defineDomain({ name: 'zip', columns: { code: z.string().regex(/^\d{5}$/), note: z.string().optional() } });
    expect(metaExamples(zip.schemas.create)).toBeUndefined();
  });
});
