import { wholeNumber, type SharedConfig } from '@app/platform';
import { z } from 'zod';

/** crud's own variables, parsed beside the shared ones. */
export const crudConfig = z.object({
  /** Seconds a cached record or list page lives (DESIGN "Cache": 600); 0 turns the crud cache off. */
  CACHE_TTL_SECONDS: wholeNumber('a whole number of seconds, 0 or more', 0).default(600),
});

/** crud's configuration: the shared variables and its own. */
export type CrudConfig = SharedConfig & z.output<typeof crudConfig>;
