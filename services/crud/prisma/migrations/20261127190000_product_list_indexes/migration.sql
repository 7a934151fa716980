-- The product lists a storefront pages through (src/domains/product.ts, indexes): one category
-- sorted by price or newest first. Equality on category, then the sort field and id, so a page
-- by cursor starts with one probe of the index, at any depth, in either direction.
-- The migrator runs each file in a transaction, so these are not CONCURRENTLY: on a large live
-- table, create them CONCURRENTLY by hand first (the same names), and this file finds them.

create index if not exists "product_category_price_id_idx" on "crud"."product" ("category", "price", "id");
create index if not exists "product_category_createdAt_id_idx" on "crud"."product" ("category", "createdAt", "id");
