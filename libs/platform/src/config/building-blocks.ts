// The pieces config schemas are made of: the shared schema (shared.ts) and each service's own
// (services/<name>/src/config.ts) compose their variables from these, so the same kind of
// value is parsed, and complained about, the same way everywhere.
import { z } from 'zod';
import { replicaUrls } from '../clients/replicas.js';

/** A whole number from `min` (and up to `max`, when given); `what` is the message's object. */
export const wholeNumber = (what: string, min: number, max?: number) => {
  const error = `expected ${what}`;
  const atLeast = z.coerce.number({ error }).int({ error }).min(min, { error });
  return max === undefined ? atLeast : atLeast.max(max, { error });
};

/** A whole number of at least 1; `what` is the message's object. */
export const positiveInt = (what: string) => wholeNumber(what, 1);

/** A TCP port (0 picks a free one). */
export const port = wholeNumber('a port number from 0 to 65535', 0, 65535);

/** A URL whose scheme is one of `protocols` (without `://`). */
export const urlWithProtocols = (protocols: string[]) =>
  z
    .string()
    .refine(
      (value) => {
        try {
          const url = new URL(value);
          return protocols.includes(url.protocol.slice(0, -1));
        } catch {
          return false;
        }
      },
      { error: `expected a URL starting with ${protocols.map((p) => `${p}://`).join(' or ')}` },
    );

/** Whether `value` is an http(s) URL. */
export const isHttpUrl = (value: string): boolean => {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
};

/** An origin as a browser sends it: http(s), a host, an optional port, nothing else (no path, no trailing slash). */
export const isOrigin = (value: string): boolean => {
  try {
    const url = new URL(value);
    return ['http:', 'https:'].includes(url.protocol) && url.origin === value;
  } catch {
    return false;
  }
};

/**
 * Whether `host` (a URL's hostname) is this machine (`localhost`, 127.0.0.0/8, `[::1]`): where
 * plain http is acceptable, for an upstream provider and for a client's redirect URI (RFC 8252 §7.3).
 */
export const isLoopbackHost = (host: string): boolean => host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);

/**
 * An upstream identity provider's URL: https, or http on loopback only (a provider on this
 * machine, in development and tests); an authorization code must never cross a network in clear.
 */
export const upstreamUrl = z.string().refine(
  (value) => {
    try {
      const url = new URL(value);
      return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
    } catch {
      return false;
    }
  },
  { error: 'expected an https:// URL (http:// only on localhost or 127.0.0.1)' },
);

/**
 * Where a service is: one http(s) URL, or several separated by commas, its replicas, which its
 * callers balance across (clients/replicas.ts). Kept as the text, spaces around commas removed.
 */
export const serviceUrl = (defaultPort: number) =>
  z
    .string()
    .transform((value) => replicaUrls(value).join(','))
    .refine((value) => value !== '' && replicaUrls(value).every(isHttpUrl), {
      error: 'expected an http:// or https:// URL, or several separated by commas (one per replica)',
    })
    .default(`http://127.0.0.1:${defaultPort}`);

/** A rate as `<count>/<seconds>` (`100/600`), parsed to `{ max, windowSeconds }`, both at least 1. */
export const countPerWindow = () =>
  z.string().transform((value, ctx) => {
    const match = /^\s*(\d{1,9})\s*\/\s*(\d{1,9})\s*$/.exec(value);
    const [max, windowSeconds] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
    if (max < 1 || windowSeconds < 1) {
      ctx.addIssue({ code: 'custom', message: 'expected <count>/<seconds>, both whole numbers of at least 1 (e.g. 100/600)' });
      return z.NEVER;
    }
    return { max, windowSeconds };
  });

/** The schemas of the variables whose values are secrets (`secret(...)`). */
const secrets = new WeakSet<z.ZodType>();

/**
 * Marks a variable's schema as a secret: a complaint about its value names the variable and
 * never echoes the value; the deployments (deploy/, docker-compose.yml) give it from a Secret.
 */
export const secret = <T extends z.ZodType>(schema: T): T => {
  secrets.add(schema);
  return schema;
};

/** Whether a variable's schema was marked with `secret(...)`. */
export const isSecret = (schema: z.ZodType): boolean => secrets.has(schema);

/**
 * A rule of a schema (for `.superRefine`) across two optional variables that make sense only
 * together: one without the other is a half-done setup, so it names the missing one rather
 * than run without it.
 */
export const together =
  <First extends string, Second extends string>(first: First, second: Second) =>
  (config: Partial<Record<First | Second, unknown>>, ctx: z.RefinementCtx): void => {
    if ((config[first] === undefined) !== (config[second] === undefined)) {
      const missing = config[first] === undefined ? first : second;
      ctx.addIssue({ code: 'custom', path: [missing], message: `expected ${first} and ${second} together` });
    }
  };
