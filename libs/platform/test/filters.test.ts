import { describe, expect, it } from '@jest/globals';
import { booleanFilterValue, filterParam, filtersWhere, integerFilterValue, likePattern, splitInList } from '@app/platform';
import { z } from 'zod';

const stock = filterParam({ name: 'stock', kind: 'ordered', value: integerFilterValue(z.number().int().min(0)) });
const name = filterParam({ name: 'name', kind: 'text', value: z.string().max(20) });
const flag = filterParam({ name: 'flag', kind: 'boolean', value: booleanFilterValue });
const query = z.strictObject({ stock, name, flag });
const keyOf = (input: Record<string, unknown>) => {
  const result = query.safeParse(input);
  return result.success ? undefined : result.error.issues.map((issue) => [issue.path.join('.'), (issue as { params?: { key?: string } }).params?.key ?? issue.code]);
};

describe('filterParam', () => {
  it('reads op.value, a bare value as eq, not. before an operator, and the parameter repeated', () => {
    expect(query.parse({ stock: ['gte.1', 'not.lt.5'], name: 'Ada', flag: 'is.null' })).toEqual({
      stock: [
        { operator: 'gte', value: 1, negated: false },
        { operator: 'lt', value: 5, negated: true },
      ],
      name: [{ operator: 'eq', value: 'Ada', negated: false }],
      flag: [{ operator: 'is', value: null, negated: false }],
    });
  });

  it('keeps a text value whose prefix is no operator as a bare value, and reads one that is', () => {
    expect(query.parse({ name: 'john.doe' }).name).toEqual([{ operator: 'eq', value: 'john.doe', negated: false }]);
    expect(query.parse({ name: 'eq.like.x' }).name).toEqual([{ operator: 'eq', value: 'like.x', negated: false }]);
  });

  it.each([
    [{ stock: 'between.1' }, 'filter.unknownOperator'],
    [{ stock: 'like.1*' }, 'filter.operatorNotAllowed'],
    [{ flag: 'lte.true' }, 'filter.operatorNotAllowed'],
    [{ stock: 'gt.one' }, 'filter.notAnInteger'],
    [{ flag: 'eq.yes' }, 'filter.notABoolean'],
    [{ stock: 'is.false' }, 'filter.isNull'],
    [{ flag: 'is.nil' }, 'filter.isNullOrBoolean'],
    [{ stock: 'in.()' }, 'filter.emptyList'],
    [{ stock: 'in.1,2' }, 'filter.malformedList'],
    [{ name: 'in.("a,b)' }, 'filter.malformedList'],
    [{ name: 'in.("a"b)' }, 'filter.malformedList'],
    [{ stock: `in.(${Array.from({ length: 101 }, () => '1').join(',')})` }, 'filter.tooManyValues'],
    [{ stock: Array.from({ length: 11 }, () => 'gt.1') }, 'filter.tooManyConditions'],
    [{ name: `eq.${'x'.repeat(21)}` }, 'too_big'],
    [{ stock: 'gt.-1' }, 'too_small'],
  ])('rejects %j on the field (%s)', (input, key) => {
    const [field] = Object.keys(input);
    expect(keyOf(input)).toEqual([[field, key]]);
  });
});

describe('splitInList', () => {
  it('splits on commas, keeps quoted commas, parentheses and escaped quotes', () => {
    expect(splitInList('(a,b)')).toEqual(['a', 'b']);
    expect(splitInList('("a,b",c)')).toEqual(['a,b', 'c']);
    expect(splitInList('("(x)","say \\"hi\\"","back\\\\slash")')).toEqual(['(x)', 'say "hi"', 'back\\slash']);
    expect(splitInList('(a,,b)')).toEqual(['a', '', 'b']);
    expect(splitInList('()')).toEqual([]);
    expect(splitInList('(a')).toBeUndefined();
    expect(splitInList('a)')).toBeUndefined();
  });
});

describe('filtersWhere', () => {
  const columns = { stock: { column: 'stock', type: 'integer' }, name: { column: 'name', type: 'text' }, roles: { column: 'roles', type: 'text', array: true } };

  it('binds every value as a numbered parameter with a cast, fields in a fixed order', () => {
    const params: unknown[] = [];
    const where = filtersWhere(
      {
        stock: [{ operator: 'in', value: [1, 2], negated: true }],
        name: [
          { operator: 'ilike', value: "*'; drop table x; --*", negated: false },
          { operator: 'is', value: null, negated: true },
        ],
        roles: [{ operator: 'eq', value: 'admin', negated: false }],
      },
      columns,
      params,
    );
    expect(where).toBe(
      ` where "name" ilike $1::text escape '\\' and not ("name" is null) and $2::text = any("roles") and not ("stock" in ($3::integer, $4::integer))`,
    );
    expect(params).toEqual(["%'; drop table x; --%", 'admin', 1, 2]);
  });

  it('refuses a field no column is declared for', () => {
    expect(() => filtersWhere({ 'x" or true --': [{ operator: 'eq', value: 1, negated: false }] }, columns, [])).toThrow(/no column/);
  });
});

describe('likePattern', () => {
  it('makes * the only wildcard: %, _ and \\ match themselves', () => {
    expect(likePattern('*100%_a\\b*')).toBe('%100\\%\\_a\\\\b%');
  });
});
