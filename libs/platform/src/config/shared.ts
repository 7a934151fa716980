import { DOMAIN_SERVICES, SERVICE_NAMES, SERVICES, TOKEN_ISSUER, type ServiceName, type ServiceUrlVariable } from '@app/contracts';
import { z } from 'zod';
import { replicaUrls } from '../clients/replicas.js';
import { parseTrustedProxies } from '../http/client-address.js';
import { isOrigin, port, positiveInt, serviceUrl, urlWithProtocols, wholeNumber } from './building-blocks.js';

/** Every service's default port: the one it listens on when run alone (the registry's). */
export const DEFAULT_PORTS = Object.fromEntries(SERVICE_NAMES.map((name) => [name, SERVICES[name].port])) as {
  [K in ServiceName]: (typeof SERVICES)[K]['port'];
};

export { DOMAIN_SERVICES, type ServiceName };

/**
 * Where each service is (its replicas), for the kit's clients of its peers and the edge's
 * routes: the registry's `<NAME>_URL` of every service, by default its own port on loopback.
 */
const serviceUrls = Object.fromEntries(SERVICE_NAMES.map((name) => [SERVICES[name].urlVariable, serviceUrl(SERVICES[name].port)])) as {
  [Variable in ServiceUrlVariable]: ReturnType<typeof serviceUrl>;
};

/**
 * Variables every process reads, whatever it runs: logging, where it listens, the backing
 * servers, where every service is, token verification and request limits. A service's own
 * variables come on top, from its own schema (`defineService({ config })`).
 */
export const sharedConfig = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Interface the process binds. */
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: port.optional(),

  DATABASE_URL: urlWithProtocols(['postgres', 'postgresql']).optional(),
  /** Connections per service process; Postgres' default max_connections is 100. */
  DATABASE_POOL_MAX: positiveInt('a whole number of connections, at least 1').default(10),
  /**
   * The statement budget: how long a statement, or a wait for a pool connection, may take
   * before the request answers 503. A burst that only queues for a busy pool waits within it.
   */
  DATABASE_STATEMENT_TIMEOUT_MS: positiveInt('a duration in milliseconds').default(3_000),
  /** Where the embedded database (PGlite) keeps its files when DATABASE_URL is unset. */
  DATA_DIR: z.string().min(1).default('.data'),
  REDIS_URL: urlWithProtocols(['redis', 'rediss']).optional(),
  /** Entries the in-process cache holds before it evicts the least recently used. */
  CACHE_MAX_ENTRIES: positiveInt('a whole number of entries, at least 1').default(10_000),
  /**
   * The nice value (0-19) of libuv's thread pool threads, which hash passwords (argon2id),
   * compress, sign and do file I/O: above the event loop's 0, CPU-heavy work there takes the
   * cores the loop leaves. Off (0) by default: on a machine busy with other processes a high
   * value starves the pool's file and DNS work too (a service then takes minutes to start).
   * Linux only; ignored elsewhere.
   */
  THREADPOOL_NICE: wholeNumber('a nice value from 0 to 19', 0, 19).default(0),
  /**
   * Put before every Redis key, so two platforms can share one Redis server (a test run, a
   * staging beside production); every process of one platform must use the same one.
   */
  CACHE_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{0,64}$/, { error: 'expected up to 64 letters, digits or _ . : -' })
    .default(''),
  /**
   * The JetStream stream that holds the platform's events (its subjects are the name in lower
   * case, then `.>`), so two platforms can share one NATS server; the same for every process.
   */
  NATS_STREAM: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'expected 1 to 64 letters, digits, _ or -' })
    .default('EVENTS'),
  NATS_URL: z
    .string()
    .refine((v) => v.split(',').every((s) => /^(nats|tls):\/\/[^\s]+$/.test(s.trim())), {
      error: 'expected nats:// or tls:// URLs, separated by commas',
    })
    .optional(),

  /** The domain services of the platform: the ones the all-in-one runs, the health report and the edge's routes cover. */
  PLATFORM_SERVICES: z
    .string()
    .transform((value) => value.split(',').map((name) => name.trim()).filter(Boolean))
    .pipe(z.array(z.enum(SERVICE_NAMES as [ServiceName, ...ServiceName[]], { error: `expected a comma-separated list of: ${SERVICE_NAMES.join(', ')}` })))
    .optional()
    .transform((names) => names ?? [...DOMAIN_SERVICES]),

  ...serviceUrls,

  /** `iss` of every access token: the token issuer signs with it, every verifier requires it. */
  JWT_ISSUER: z.string().min(1).default('http://localhost:3000'),
  /** `aud` of every access token. */
  JWT_AUDIENCE: z.string().min(1).default('api-platform'),
  /** Where verifiers fetch the token issuer's public keys; defaults to its JWKS route on its URL variable (the registry's TOKEN_ISSUER). */
  JWKS_URL: urlWithProtocols(['http', 'https']).optional(),

  /** Accepted clock difference between a token's signer and its verifiers. */
  JWT_CLOCK_TOLERANCE_SECONDS: wholeNumber('a whole number of seconds from 0 to 300', 0, 300).default(30),
  /**
   * Least time between two JWKS fetches a verifier makes because of an unknown `kid`: bounds
   * what a flood of forged tokens can cost. The token issuer must wait longer than this before
   * signing with a new key, so every verifier can fetch it first.
   */
  JWKS_COOLDOWN_SECONDS: positiveInt('a whole number of seconds, at least 1').default(30),
  /** Verified tokens each verifier (the edge and every service) remembers until their `exp`; 0 verifies every request anew. */
  VERIFIED_TOKEN_CACHE_MAX: wholeNumber('a whole number of entries, 0 or more', 0).default(10_000),
  /**
   * Peers whose `X-Forwarded-For` this process believes: comma-separated IPs, CIDRs or the
   * names loopback, linklocal, uniquelocal; `none` (the default) trusts nobody, so no client
   * can choose the address it is throttled under. At the edge name the load balancer in
   * front, if any; behind the edge (split mode) name the edge's address or network (deploy/
   * and docker-compose.yml do).
   */
  TRUST_PROXY: z
    .string()
    .default('none')
    .superRefine((value, ctx) => {
      try {
        parseTrustedProxies(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message.replace(/^TRUST_PROXY: /, 'expected IPs, CIDR ranges, loopback, linklocal, uniquelocal or none; ') });
      }
    }),
  /** Set by the all-in-one launcher: enables development defaults such as a generated admin. */
  ALL_IN_ONE: z.stringbool({ error: 'expected true or false' }).default(false),

  /** `off` serves no /metrics and records no request histogram (Prometheus exposition, on by default). */
  METRICS: z.enum(['on', 'off']).default('on'),
  /**
   * The management port: /metrics, apart from the public PORT so no edge route or Ingress
   * reaches it (9464, the Prometheus exporter port OpenTelemetry's SDKs use). 0 picks a free
   * one, as PORT=0 does (runtime.ts).
   */
  MANAGEMENT_PORT: port.default(9464),
  /**
   * Origins browsers may call the API from, comma-separated, each exactly `scheme://host[:port]`
   * (what a browser sends in `Origin`). Unset: no CORS headers at all, so no page on another
   * origin can read an answer. Answered at the edge only.
   */
  CORS_ORIGINS: z
    .string()
    .transform((value, ctx) => {
      const origins = value.split(',').map((origin) => origin.trim()).filter(Boolean);
      const invalid = origins.filter((origin) => !isOrigin(origin));
      if (origins.length === 0 || invalid.length > 0) {
        ctx.addIssue({ code: 'custom', message: `expected comma-separated origins, each scheme://host[:port] with no path (e.g. https://app.example.com)${invalid.length > 0 ? `; not an origin: ${invalid.join(', ')}` : ''}` });
        return z.NEVER;
      }
      return origins;
    })
    .optional(),
  /** Largest request body a service accepts (bytes). */
  BODY_LIMIT: positiveInt('a size in bytes').default(1_048_576),
  /** Longest request target (path and query) accepted; longer ones get 414 (nginx and Apache stop near 8 KiB). */
  MAX_URL_LENGTH: positiveInt('a length in characters').default(8_192),
  /** Largest request line plus headers Node's parser accepts (bytes); more gets 431 (414 when the URL alone is). */
  MAX_HEADER_SIZE: positiveInt('a size in bytes').default(16_384),
  /** Deepest nesting of arrays and objects a JSON body may have; deeper gets 400 before it is parsed. */
  JSON_MAX_DEPTH: positiveInt('a number of levels').default(64),
  /** How long a client may take to send a whole request (headers and body); slower gets 408 and is closed. */
  REQUEST_TIMEOUT_MS: positiveInt('a duration in milliseconds').default(30_000),
  /** How long a draining process waits for in-flight requests before it exits anyway. */
  SHUTDOWN_TIMEOUT_MS: positiveInt('a duration in milliseconds').default(10_000),
});

/** What every process reads (`sharedConfig`), parsed; a service's context adds its own on top. */
export type SharedConfig = z.output<typeof sharedConfig>;

/** The variable that tells where a service is in split mode (the registry's `urlVariable`). */
export const urlVariableOf = (name: ServiceName) => SERVICES[name].urlVariable;

/**
 * The JWKS verifiers use: JWKS_URL, or the token issuer's own route on each of its replicas
 * (its URL variable may list several), separated by commas; the verifier asks the next one
 * when one is unreachable.
 */
export function jwksUrlOf(config: Pick<SharedConfig, 'JWKS_URL' | ServiceUrlVariable>): string {
  const issuerUrls = replicaUrls(config[SERVICES[TOKEN_ISSUER.service].urlVariable]);
  return config.JWKS_URL ?? issuerUrls.map((url) => new URL(TOKEN_ISSUER.jwksPath, url).toString()).join(',');
}
