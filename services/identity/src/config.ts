import { countPerWindow, type SharedConfig } from '@app/platform';
import { z } from 'zod';

/** identity's own variables, parsed beside the shared ones. */
export const identityConfig = z.object({
  /**
   * Sign-ups (POST /api/v1/identity) one client address may make per window, as
   * `<count>/<seconds>`: bounds account spam and probing which emails are taken (422).
   */
  SIGNUP_RATE_LIMIT: z.string().default('100/600').pipe(countPerWindow()),
});

/** identity's configuration: the shared variables and its own. */
export type IdentityConfig = SharedConfig & z.output<typeof identityConfig>;
