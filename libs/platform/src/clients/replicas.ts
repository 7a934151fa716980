/**
 * A service's URL variable (the registry's `<NAME>_URL`) names one URL, or several separated by
 * commas: the replicas of that service when no load balancer stands in front of them (split
 * mode on one machine, `npm run start:split -- --replicas 2`). On Kubernetes it is one URL, the
 * Service's, and the cluster balances. Every caller of a service reads the list here and skips
 * a replica nobody answers at, while another does.
 */

/** The replicas `value` names, in order (a single URL is a list of one). */
export function replicaUrls(value: string): string[] {
  return value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/**
 * Socket errors meaning nobody answers at the address: the connection never opened, so nothing
 * of the request was sent and another replica may take it, whatever its method.
 */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** The error codes along `error`'s cause chain, outermost first. */
export function errorCodes(error: unknown): string[] {
  let current = error as { code?: unknown; cause?: unknown } | undefined;
  const codes: string[] = [];
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === 'string') codes.push(current.code);
    current = current.cause as typeof current;
  }
  return codes;
}

/** Whether `error` (or a cause of it) says nobody listens at the address called. */
export function isUnreachable(error: unknown): boolean {
  return errorCodes(error).some((code) => UNREACHABLE.has(code));
}

/**
 * Calls `attempt` with one replica after another, starting at the next in turn (round robin
 * across calls), until one is reachable; rethrows the last error when none is, or at once for
 * any error other than an unreachable address.
 */
export function roundRobin(urls: readonly string[]): <T>(attempt: (url: string) => Promise<T>) => Promise<T> {
  if (urls.length === 0) throw new Error('roundRobin needs at least one URL');
  let next = 0;
  return async (attempt) => {
    const first = next;
    next = (next + 1) % urls.length;
    for (let tried = 0; ; tried++) {
      try {
        return await attempt(urls[(first + tried) % urls.length]!);
      } catch (error) {
        if (tried + 1 >= urls.length || !isUnreachable(error)) throw error;
      }
    }
  };
}
