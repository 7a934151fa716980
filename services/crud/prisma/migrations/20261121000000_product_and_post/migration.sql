-- The generic domains product and post (src/domains/product.ts, src/domains/post.ts).
-- Each declared index ends in "id", so an equality filter or a sort on its column, with ties
-- broken by id, reads only the rows of one page.

-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "crud";

-- CreateTable
CREATE TABLE "crud"."product" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "name" VARCHAR(50) NOT NULL,
    "price" DECIMAL(10,2) NOT NULL,
    "description" VARCHAR(400),
    "stock" INTEGER NOT NULL,
    "category" VARCHAR(20) NOT NULL,
    "perishable" BOOLEAN NOT NULL,
    "activated" BOOLEAN NOT NULL DEFAULT true,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "product_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "crud"."post" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "title" VARCHAR(255) NOT NULL,
    "content" TEXT NOT NULL,
    "authorId" VARCHAR(36) NOT NULL,
    "slug" VARCHAR(255) NOT NULL,
    "activated" BOOLEAN NOT NULL DEFAULT true,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "post_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "product_name_id_idx" ON "crud"."product"("name", "id");

-- CreateIndex
CREATE INDEX "product_price_id_idx" ON "crud"."product"("price", "id");

-- CreateIndex
CREATE INDEX "product_category_id_idx" ON "crud"."product"("category", "id");

-- CreateIndex
CREATE INDEX "product_createdAt_id_idx" ON "crud"."product"("createdAt", "id");

-- CreateIndex
CREATE UNIQUE INDEX "post_slug_key" ON "crud"."post"("slug");

-- CreateIndex
CREATE INDEX "post_authorId_id_idx" ON "crud"."post"("authorId", "id");

-- CreateIndex
CREATE INDEX "post_createdAt_id_idx" ON "crud"."post"("createdAt", "id");
