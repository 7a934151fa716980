export { decimal, describeColumn, exampleOf, type Column, type ColumnKind } from './columns.js';
export {
  COMMON_FIELDS,
  defineDomain,
  domainTag,
  isDomain,
  type Domain,
  type DomainSchemas,
  type DomainSpec,
  type ListQuery,
} from './define-domain.js';
export { checkDomainTables, DomainTableMismatchError, domainTableSql } from './domain-table.js';
export { recordNotFound, uniqueConflict } from './errors.js';
export { loadDomains } from './load-domains.js';
export { createRecordCache, type ListPage, type RecordCache, type RecordCacheOptions } from './record-cache.js';
export {
  createDomainRepository,
  type DomainRecord,
  type DomainRepository,
  type PrismaRawClient,
  type PrismaRawSession,
  type RecordFilters,
  type RecordValues,
} from './repository.js';
export { createDomainPlugin, type CrudPluginOptions } from './routes.js';
export { createDomainService, normalizeQuery, type DomainService, type DomainServiceDependencies } from './service.js';
