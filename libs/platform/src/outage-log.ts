import type { Logger } from './logger.js';

/**
 * The log of one dependency as one user of it sees it (the pool, the login throttle, a record
 * cache): a line when it goes down and a line when it is back, never one per failed call. In
 * an outage every request meets the failure; a line each would bury everything else (and cost
 * the CPU the outage leaves).
 */
export interface OutageLog {
  /**
   * A call to the dependency failed because it could not answer. The first failure of an
   * outage is logged (`warn`, with its error); the ones after it are only counted.
   */
  failed(error: unknown): void;
  /** A call succeeded: ends an outage with one `info` line carrying its count of failures and how long it lasted. */
  succeeded(): void;
  /** Whether the last call failed. */
  readonly down: boolean;
}

export interface OutageLogOptions {
  /** What the `down` line says; defaults to "<dependency> unavailable". */
  down?: string;
  /** What the `up` line says; defaults to "<dependency> available again". */
  up?: string;
  /** Fields every line of this log carries (the domain of a record cache, ...). */
  fields?: Record<string, unknown>;
}

export function createOutageLog(logger: Logger, dependency: string, options: OutageLogOptions = {}): OutageLog {
  const fields = { dependency, ...options.fields };
  let down = false;
  let failures = 0;
  let since = 0;
  return {
    failed: (error) => {
      failures += 1;
      if (down) return;
      down = true;
      since = Date.now();
      logger.warn({ ...fields, err: error }, options.down ?? `${dependency} unavailable`);
    },
    succeeded: () => {
      if (!down) return;
      logger.info({ ...fields, failures, downMs: Date.now() - since }, options.up ?? `${dependency} available again`);
      down = false;
      failures = 0;
    },
    get down() {
      return down;
    },
  };
}
