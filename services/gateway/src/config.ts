import { positiveInt, type SharedConfig } from '@app/platform';
import { z } from 'zod';

/** The gateway's own variables, parsed beside the shared ones (which name where every service is). */
export const gatewayConfig = z.object({
  /** How long the gateway waits for an upstream before answering 503. */
  UPSTREAM_TIMEOUT_MS: positiveInt('a duration in milliseconds').default(10_000),
});

/** The gateway's configuration: the shared variables and its own. */
export type GatewayConfig = SharedConfig & z.output<typeof gatewayConfig>;
