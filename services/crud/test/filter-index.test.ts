import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createDomainRepository, type ListQuery } from '@app/crud';
import { encodeCursor, migrateService, pageOf, type SqlSession } from '@app/platform';
import { openTestDependencies, testModes } from '@app/testing';
import { crudService, product } from '../src/index.js';
import { createCrudPrisma } from '../src/repository.js';

/** Large enough that a sequential scan costs the planner far more than an index read. */
const ROWS = 100_000;

/**
 * A range filter on a column the domain indexes reads the index: the SQL the generic repository
 * runs for `?price=gte.10&price=lt.20` is EXPLAINed, with its own bound values, on 100k rows; so
 * is a page by cursor 20 000 rows into one category sorted by price, which the composite
 * index the domain declares (category, price, id) starts with one probe, in either direction.
 */
describe.each(testModes())('an indexed range filter (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let prisma: ReturnType<typeof createCrudPrisma>;
  /** The statements the repository ran, with their values. */
  const ran: { sql: string; values: unknown[] }[] = [];

  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    await migrateService(deps.database, crudService, deps.logger);
    prisma = createCrudPrisma(deps.database);
    // One script on the long-timeout path: on a loaded machine 100k rows outlast a request's 3 s query budget.
    await deps.database.exec(
      `insert into "crud"."product" ("name", "price", "stock", "category", "perishable")
       select 'Bulk ' || g, (g % 10000) / 100.0, g % 1000, (array['Fruits', 'Vegetables', 'Meats', 'Hygiene'])[g % 4 + 1], g % 2 = 0
       from generate_series(1, ${ROWS}) as g;
       analyze "crud"."product";`,
    );
  });
  afterAll(async () => {
    await prisma.$disconnect();
    await deps.dispose();
  });

  /** Lists through the generic repository, recording its SQL; answers the records and the plan of that SQL. */
  const listAndExplain = async (query: Record<string, unknown>) => {
    // Reads run on the database port: its statements are the ones to explain.
    const recording: SqlSession = {
      ...deps.database,
      query: (sql, values = []) => {
        ran.push({ sql, values });
        return deps.database.query(sql, values);
      },
    };
    const { page, filters } = pageOf(product.schemas.query.parse(query) as ListQuery);
    ran.length = 0;
    const { records } = await createDomainRepository(product, prisma, { schema: 'crud', database: recording }).list(page, filters as never);
    const [statement] = ran;
    const plan = await prisma.$queryRawUnsafe<Record<string, string>[]>(`explain ${statement!.sql}`, ...statement!.values);
    return { records, sql: statement!.sql, plan: plan.map((row) => row['QUERY PLAN']).join('\n') };
  };

  /** The cursor a list's Link would carry after the Fruits row `depth` rows into `query`'s order, as the route makes it. */
  const cursorAt = async (query: Record<string, unknown>, depth: number) => {
    const { page } = pageOf(product.schemas.query.parse(query) as ListQuery);
    const direction = page.sort.direction;
    const [row] = await prisma.$queryRawUnsafe<{ value: unknown; id: string }[]>(
      `select "${page.sort.field}" as value, "id"::text as id from "crud"."product" where "category" = 'Fruits' ` +
        `order by "${page.sort.field}" ${direction}, "id" ${direction} offset ${depth} limit 1`,
    );
    return encodeCursor(page.fingerprint, row!);
  };

  // createdAt too: its select-list entry is a formatted text under the same name, and the order must still be the column's.
  it.each(['price', '-price', 'createdAt', '-createdAt'])('starts a deep page of one category sorted by %s with one probe of its composite index', async (sort) => {
    const query = { category: 'Fruits', sort, limit: '100' };
    const cursor = await cursorAt(query, 20_000);
    const { records, sql, plan } = await listAndExplain({ ...query, cursor });
    expect(sql).toContain(`("${sort.replace('-', '')}", "id") ${sort.startsWith('-') ? '<' : '>'} (`);
    expect(records).toHaveLength(100);
    process.stdout.write(`EXPLAIN (${mode}), ?category=Fruits&sort=${sort}&cursor=<20 000 rows in>:\n${plan}\n`);
    // Every row here was made in one statement, so one createdAt: either of its indexes is one probe.
    const index = sort.endsWith('createdAt') ? '"?product_(category_)?createdAt_id_idx' : `product_category_${sort.replace('-', '')}_id_idx`;
    expect(plan).toMatch(new RegExp(`Index Scan (Backward )?using ${index}`));
    expect(plan).not.toMatch(/Seq Scan|Sort/);
  });

  it("answers count=estimated for a large list with the planner's estimate, near the exact count", async () => {
    const repository = createDomainRepository(product, prisma, { schema: 'crud', database: deps.database });
    const { filters } = pageOf(product.schemas.query.parse({ category: 'Fruits' }) as ListQuery);
    const exact = await repository.count(filters as never, 'exact');
    const estimated = await repository.count(filters as never, 'estimated');
    expect(exact).toBe(ROWS / 4);
    // Above the exact threshold: an estimate (ANALYZE samples), not a count, though close to it.
    expect(estimated).toBeGreaterThan(ROWS / 8);
    expect(estimated).toBeLessThan(ROWS / 2);
  });

  it('reads the price index for a price range sorted by price, with the values bound', async () => {
    const { records, sql, plan } = await listAndExplain({ price: ['gte.10', 'lt.20'], sort: 'price' });
    expect(sql).toContain('where "price" >= $1::numeric and "price" < $2::numeric order by "crud"."product"."price" asc');
    expect(records.map((record) => record.price)).toEqual(Array.from({ length: 20 }, (_, i) => 10 + Math.floor(i / 10) / 100));
    process.stdout.write(`EXPLAIN (${mode}), ?price=gte.10&price=lt.20&sort=price:\n${plan}\n`);
    expect(plan).toMatch(/Index Scan using product_price_id_idx/);
    expect(plan).not.toMatch(/Seq Scan/);
  });

  it('reads the price index for a narrow price range in the default order', async () => {
    const { records, plan } = await listAndExplain({ price: ['gte.10', 'lt.10.03'] });
    expect(records).toHaveLength(20);
    process.stdout.write(`EXPLAIN (${mode}), ?price=gte.10&price=lt.10.03:\n${plan}\n`);
    expect(plan).toMatch(/Index Scan (using|on) product_price_id_idx/);
    expect(plan).not.toMatch(/Seq Scan/);
  });
});
