/* eslint-disable no-restricted-properties -- the one module that reads process.env */
import { DOMAIN_SERVICES, SERVICE_NAMES, SERVICES, type ServiceName } from '@app/contracts';
import { z } from 'zod';
import { replicaUrls } from './clients/replicas.js';
import { parseTrustedProxies } from './http/client-address.js';

/** A whole number from `min` (and up to `max`, when given); `what` is the message's object. */
const wholeNumber = (what: string, min: number, max?: number) => {
  const error = `expected ${what}`;
  const atLeast = z.coerce.number({ error }).int({ error }).min(min, { error });
  return max === undefined ? atLeast : atLeast.max(max, { error });
};

const positiveInt = (what: string) => wholeNumber(what, 1);

const port = wholeNumber('a port number from 0 to 65535', 0, 65535);

const urlWithProtocols = (protocols: string[]) =>
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

const isHttpUrl = (value: string) => {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
};

/** An origin as a browser sends it: http(s), a host, an optional port, nothing else (no path, no trailing slash). */
const isOrigin = (value: string) => {
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
const upstreamUrl = z.string().refine(
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
const serviceUrl = (defaultPort: number) =>
  z
    .string()
    .transform((value) => replicaUrls(value).join(','))
    .refine((value) => value !== '' && replicaUrls(value).every(isHttpUrl), {
      error: 'expected an http:// or https:// URL, or several separated by commas (one per replica)',
    })
    .default(`http://127.0.0.1:${defaultPort}`);

/** Every service's default port: the one it listens on when run alone (the registry's). */
export const DEFAULT_PORTS = Object.fromEntries(SERVICE_NAMES.map((name) => [name, SERVICES[name].port])) as {
  [K in ServiceName]: (typeof SERVICES)[K]['port'];
};

export { DOMAIN_SERVICES, type ServiceName };

const configShape = z.object({
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
  THREADPOOL_NICE: wholeNumber('a nice value from 0 to 19', 0, 19)
    .default(0),
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
  /** Seconds a cached record or list page lives (DESIGN "Cache": 600); 0 turns the crud cache off. */
  CACHE_TTL_SECONDS: wholeNumber('a whole number of seconds, 0 or more', 0)
    .default(600),
  NATS_URL: z
    .string()
    .refine((v) => v.split(',').every((s) => /^(nats|tls):\/\/[^\s]+$/.test(s.trim())), {
      error: 'expected nats:// or tls:// URLs, separated by commas',
    })
    .optional(),

  PLATFORM_SERVICES: z
    .string()
    .transform((value) => value.split(',').map((name) => name.trim()).filter(Boolean))
    .pipe(z.array(z.enum(SERVICE_NAMES as [ServiceName, ...ServiceName[]], { error: `expected a comma-separated list of: ${SERVICE_NAMES.join(', ')}` })))
    .optional()
    .transform((names) => names ?? [...DOMAIN_SERVICES]),

  GATEWAY_URL: serviceUrl(DEFAULT_PORTS.gateway),
  IDENTITY_URL: serviceUrl(DEFAULT_PORTS.identity),
  CREDENTIALS_URL: serviceUrl(DEFAULT_PORTS.credentials),
  SSO_URL: serviceUrl(DEFAULT_PORTS.sso),
  CRUD_URL: serviceUrl(DEFAULT_PORTS.crud),
  HEALTH_URL: serviceUrl(DEFAULT_PORTS.health),

  /** `iss` of every access token: sso signs with it, every verifier requires it. */
  JWT_ISSUER: z.string().min(1).default('http://localhost:3000'),
  /** `aud` of every access token. */
  JWT_AUDIENCE: z.string().min(1).default('api-platform'),
  /** Where verifiers fetch sso's public keys; defaults to sso's JWKS route on SSO_URL. */
  JWKS_URL: urlWithProtocols(['http', 'https']).optional(),

  /** Accepted clock difference between a token's signer and its verifiers. */
  JWT_CLOCK_TOLERANCE_SECONDS: wholeNumber('a whole number of seconds from 0 to 300', 0, 300)
    .default(30),
  /**
   * Least time between two JWKS fetches a verifier makes because of an unknown `kid`: bounds
   * what a flood of forged tokens can cost. sso waits longer than this before signing with a
   * new key (SSO_KEY_ACTIVATION_DELAY_SECONDS), so every verifier can fetch it first.
   */
  JWKS_COOLDOWN_SECONDS: positiveInt('a whole number of seconds, at least 1').default(30),
  /** Verified tokens each verifier (gateway and services) remembers until their `exp`; 0 verifies every request anew. */
  VERIFIED_TOKEN_CACHE_MAX: wholeNumber('a whole number of entries, 0 or more', 0)
    .default(10_000),

  /** Lifetime of an access token sso signs. */
  ACCESS_TOKEN_TTL_SECONDS: positiveInt('a whole number of seconds, at least 1').default(900),
  /** Lifetime of a refresh token; each use replaces it with a new one of the same lifetime. */
  REFRESH_TOKEN_TTL_SECONDS: positiveInt('a whole number of seconds, at least 1').default(2_592_000),
  /**
   * Encrypts sso's private signing keys at rest (AES-256-GCM, key derived with HKDF). Unset
   * keeps them in plain JWK form, protected only by the database's own access control.
   */
  SSO_KEY_ENCRYPTION_SECRET: z.string().min(32, { error: 'expected at least 32 characters of secret' }).optional(),
  /** How often sso replaces its signing key (a new key, the old one published until its tokens expire). */
  SSO_KEY_ROTATION_INTERVAL_SECONDS: positiveInt('a whole number of seconds, at least 1').default(2_592_000),
  /** How long a new key is published before sso signs with it; must exceed JWKS_COOLDOWN_SECONDS. */
  SSO_KEY_ACTIVATION_DELAY_SECONDS: wholeNumber('a whole number of seconds, 0 or more', 0)
    .default(60),
  /**
   * Peers whose `X-Forwarded-For` this process believes: comma-separated IPs, CIDRs or the
   * names loopback, linklocal, uniquelocal; `none` (the default) trusts nobody, so no client
   * can choose the address it is throttled under. At the edge (gateway, all-in-one) name the
   * load balancer in front, if any; behind the gateway (split mode) name the gateway's
   * address or network (deploy/ and docker-compose.yml do).
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
  /**
   * Sign-ups (POST /api/v1/identity) one client address may make per window, as
   * `<count>/<seconds>`: bounds account spam and probing which emails are taken (422).
   */
  SIGNUP_RATE_LIMIT: z
    .string()
    .default('100/600')
    .transform((value, ctx) => {
      const match = /^\s*(\d{1,9})\s*\/\s*(\d{1,9})\s*$/.exec(value);
      const [max, windowSeconds] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
      if (max < 1 || windowSeconds < 1) {
        ctx.addIssue({ code: 'custom', message: 'expected <count>/<seconds>, both whole numbers of at least 1 (e.g. 100/600)' });
        return z.NEVER;
      }
      return { max, windowSeconds };
    }),
  /**
   * Sign-in with Google (OpenID Connect): the OAuth client registered in Google's console,
   * whose redirect URI is `${JWT_ISSUER}/api/v1/sso/federation/google/callback`. Both set
   * turns it on; neither leaves it off.
   */
  GOOGLE_CLIENT_ID: z.string().min(1).max(512).optional(),
  GOOGLE_CLIENT_SECRET: z.string().min(1).max(512).optional(),
  /** Where Google's OpenID configuration is discovered (`/.well-known/openid-configuration` under it). */
  GOOGLE_ISSUER: upstreamUrl.default('https://accounts.google.com'),
  /**
   * Sign-in with GitHub (OAuth 2 and its user API): the OAuth app's client, whose callback URL
   * is `${JWT_ISSUER}/api/v1/sso/federation/github/callback`. Both set turns it on.
   */
  GITHUB_CLIENT_ID: z.string().min(1).max(512).optional(),
  GITHUB_CLIENT_SECRET: z.string().min(1).max(512).optional(),
  /** GitHub's endpoints; overridable for GitHub Enterprise Server (and tests). */
  GITHUB_AUTHORIZE_URL: upstreamUrl.default('https://github.com/login/oauth/authorize'),
  GITHUB_TOKEN_URL: upstreamUrl.default('https://github.com/login/oauth/access_token'),
  GITHUB_API_URL: upstreamUrl.default('https://api.github.com'),
  /** The first administrator, created once with a LOCAL password when it does not exist. */
  BOOTSTRAP_ADMIN_EMAIL: z.email({ pattern: z.regexes.html5Email, error: 'expected an email address' }).optional(),
  BOOTSTRAP_ADMIN_PASSWORD: z.string().min(12, { error: 'expected a password of at least 12 characters' }).max(1024).optional(),
  /** Set by the all-in-one launcher: enables development defaults such as a generated admin. */
  ALL_IN_ONE: z.stringbool({ error: 'expected true or false' }).default(false),
  /**
   * argon2id cost of LOCAL password hashes. The defaults are OWASP's second recommended
   * configuration (m=19 MiB, t=2, p=1); a weaker setting than OWASP's table is refused
   * below. Raising them is safe at any time: stored hashes are upgraded when their owner
   * next signs in (rehash on a successful verify).
   */
  ARGON2_MEMORY_KIB: positiveInt('a memory cost in KiB').default(19_456),
  ARGON2_TIME_COST: positiveInt('a number of argon2 passes, at least 1').default(2),
  ARGON2_PARALLELISM: positiveInt('a number of argon2 lanes, at least 1').default(1),
  /**
   * argon2 hashes run on libuv's thread pool (4 threads unless UV_THREADPOOL_SIZE says
   * otherwise), which WebCrypto (every JWT check), fs and dns share. At most this many run at
   * once, so a burst of sign-ins queues behind itself instead of stalling every token check.
   */
  ARGON2_CONCURRENCY: positiveInt('a number of concurrent argon2 hashes, at least 1').default(2),

  /**
   * The credentials service's key for API key hashes (HMAC-SHA256): at least 32 random bytes,
   * base64 or base64url encoded (`openssl rand -base64 32`). Unset: a key generated once and
   * kept in credentials' own database (stable across restarts and replicas). Changing it
   * invalidates every API key hashed under the previous one.
   */
  API_KEY_HASH_KEY: z
    .string()
    .refine((value) => /^[A-Za-z0-9+/_-]+={0,2}$/.test(value) && Buffer.from(value, 'base64').length >= 32, {
      error: 'expected at least 32 random bytes, base64 or base64url encoded (e.g. openssl rand -base64 32)',
    })
    .optional(),

  /** `off` serves no /metrics and records no request histogram (Prometheus exposition, on by default). */
  METRICS: z.enum(['on', 'off']).default('on'),
  /**
   * The management port: /metrics, apart from the public PORT so no gateway route or Ingress
   * reaches it (9464, the Prometheus exporter port OpenTelemetry's SDKs use). 0 picks a free
   * one, as PORT=0 does (runtime.ts).
   */
  MANAGEMENT_PORT: port.default(9464),
  /**
   * Origins browsers may call the API from, comma-separated, each exactly `scheme://host[:port]`
   * (what a browser sends in `Origin`). Unset: no CORS headers at all, so no page on another
   * origin can read an answer. Answered at the edge only (the gateway, or the all-in-one).
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
  /** How long the gateway waits for an upstream before answering 503. */
  UPSTREAM_TIMEOUT_MS: positiveInt('a duration in milliseconds').default(10_000),
  /** How long a draining process waits for in-flight requests before it exits anyway. */
  SHUTDOWN_TIMEOUT_MS: positiveInt('a duration in milliseconds').default(10_000),
});

type Shape = typeof configShape.shape;
/** The name of one configuration variable. */
export type ConfigKey = keyof Shape & string;

/**
 * Rules across variables, each applied when every variable it reads is validated (a service
 * that does not own ARGON2_* never fails on them).
 */
const CROSS_CHECKS: { keys: ConfigKey[]; check(config: z.output<typeof configShape>, ctx: z.RefinementCtx): void }[] = [
  {
    keys: ['ARGON2_MEMORY_KIB', 'ARGON2_TIME_COST'],
    // OWASP's argon2id table trades memory for passes: 47104x1, 19456x2, 12288x3, 9216x4,
    // 7168x5 KiB. Every row spends at least 35840 KiB-passes with at least 7 MiB of memory.
    check: (config, ctx) => {
      if (config.ARGON2_MEMORY_KIB < 7_168 || config.ARGON2_MEMORY_KIB * config.ARGON2_TIME_COST < 35_840) {
        ctx.addIssue({
          code: 'custom',
          path: ['ARGON2_MEMORY_KIB'],
          message:
            'expected argon2id costs at or above OWASP\'s minimum: ARGON2_MEMORY_KIB >= 7168 and ' +
            'ARGON2_MEMORY_KIB x ARGON2_TIME_COST >= 35840 (e.g. 19456 with ARGON2_TIME_COST=2)',
        });
      }
    },
  },
  ...(['GOOGLE', 'GITHUB'] as const).map((provider) => {
    const id = `${provider}_CLIENT_ID` as const;
    const secret = `${provider}_CLIENT_SECRET` as const;
    return {
      keys: [id, secret] as ConfigKey[],
      // One without the other is a half-done setup: say which is missing rather than run without it.
      check: (config: z.output<typeof configShape>, ctx: z.RefinementCtx) => {
        if ((config[id] === undefined) !== (config[secret] === undefined)) {
          const missing = config[id] === undefined ? id : secret;
          ctx.addIssue({ code: 'custom', path: [missing], message: `expected ${id} and ${secret} together` });
        }
      },
    };
  }),
  {
    keys: ['BOOTSTRAP_ADMIN_EMAIL', 'BOOTSTRAP_ADMIN_PASSWORD'],
    check: (config, ctx) => {
      if ((config.BOOTSTRAP_ADMIN_EMAIL === undefined) !== (config.BOOTSTRAP_ADMIN_PASSWORD === undefined)) {
        const missing = config.BOOTSTRAP_ADMIN_EMAIL === undefined ? 'BOOTSTRAP_ADMIN_EMAIL' : 'BOOTSTRAP_ADMIN_PASSWORD';
        ctx.addIssue({ code: 'custom', path: [missing], message: 'expected BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD together' });
      }
    },
  },
];

/**
 * Variables every process reads, whatever it runs: logging, where it listens, the backing
 * servers, token verification and request limits. A service's own variables come on top
 * (`defineService({ config: [...] })`).
 */
export const SHARED_CONFIG: readonly ConfigKey[] = [
  'NODE_ENV',
  'LOG_LEVEL',
  'HOST',
  'PORT',
  'DATABASE_URL',
  'DATABASE_POOL_MAX',
  'DATABASE_STATEMENT_TIMEOUT_MS',
  'DATA_DIR',
  'REDIS_URL',
  'CACHE_MAX_ENTRIES',
  'CACHE_KEY_PREFIX',
  'THREADPOOL_NICE',
  'NATS_URL',
  'NATS_STREAM',
  'JWT_ISSUER',
  'JWT_AUDIENCE',
  'JWKS_URL',
  'SSO_URL',
  'JWT_CLOCK_TOLERANCE_SECONDS',
  'JWKS_COOLDOWN_SECONDS',
  'VERIFIED_TOKEN_CACHE_MAX',
  'TRUST_PROXY',
  'BODY_LIMIT',
  'MAX_URL_LENGTH',
  'MAX_HEADER_SIZE',
  'JSON_MAX_DEPTH',
  'REQUEST_TIMEOUT_MS',
  'SHUTDOWN_TIMEOUT_MS',
  'ALL_IN_ONE',
  'METRICS',
  'MANAGEMENT_PORT',
  'CORS_ORIGINS',
];

/** Every configuration variable, in the schema's order. */
export const CONFIG_KEYS = Object.keys(configShape.shape) as ConfigKey[];

/**
 * Each variable's default as the schema declares it, before any transform (`100/600`, not
 * what it parses to); undefined for a variable without one. What the README's table documents.
 */
export function declaredDefaults(): Record<ConfigKey, unknown> {
  const defaultOf = (schema: z.core.$ZodType): unknown => {
    const def = schema._zod.def as { type: string; defaultValue?: unknown; innerType?: z.core.$ZodType; in?: z.core.$ZodType };
    if (def.type === 'default') return def.defaultValue;
    const inner = def.innerType ?? def.in;
    return def.type === 'optional' || !inner ? undefined : defaultOf(inner);
  };
  return Object.fromEntries(CONFIG_KEYS.map((key) => [key, defaultOf(configShape.shape[key])])) as Record<ConfigKey, unknown>;
}

/** The variable that tells where a service is in split mode (IDENTITY_URL, ...). */
export const urlVariableOf = (name: ServiceName): ConfigKey => SERVICES[name].urlVariable;

export type PlatformConfig = z.output<typeof configShape>;

/**
 * The JWKS verifiers use: JWKS_URL, or sso's own route on each of its replicas (SSO_URL may
 * list several), separated by commas; the verifier asks the next one when one is unreachable.
 */
export function jwksUrlOf(config: Pick<PlatformConfig, 'JWKS_URL' | 'SSO_URL'>): string {
  return config.JWKS_URL ?? replicaUrls(config.SSO_URL).map((url) => new URL('/api/v1/sso/jwks', url).toString()).join(',');
}
export type Env = Record<string, string | undefined>;

/**
 * Variables whose values are secrets: a complaint about one names it, never echoes it; the
 * deployments (deploy/, docker-compose.yml) give them from a Secret or the environment.
 */
export const SECRET_VARIABLES: ReadonlySet<ConfigKey> = new Set<ConfigKey>(['API_KEY_HASH_KEY', 'SSO_KEY_ENCRYPTION_SECRET', 'BOOTSTRAP_ADMIN_PASSWORD', 'GOOGLE_CLIENT_SECRET', 'GITHUB_CLIENT_SECRET']);

/** Thrown when the environment does not describe a runnable configuration. */
export class ConfigError extends Error {
  constructor(readonly problems: { variable: string; expected: string }[]) {
    super(
      `Invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.expected}`).join('\n')}`,
    );
    this.name = 'ConfigError';
  }
}

/**
 * Parses the environment once, at start-up. Empty values count as unset, so `FOO=` in an
 * env file falls back to the default instead of failing on an empty string. With `only`, just
 * those variables are validated (a service's slice plus SHARED_CONFIG); every other one takes
 * its default, so a bad value a process never reads cannot stop it.
 */
export function loadConfig(env: Env = process.env, only?: readonly ConfigKey[]): PlatformConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const keys = only ? new Set<ConfigKey>([...SHARED_CONFIG, ...only]) : undefined;
  const checked = keys ? configShape.pick(Object.fromEntries([...keys].map((key) => [key, true])) as Record<ConfigKey, true>) : configShape;
  const schema = checked.superRefine((config, ctx) => {
    for (const rule of CROSS_CHECKS) {
      if (!keys || rule.keys.every((key) => keys.has(key))) rule.check(config as PlatformConfig, ctx);
    }
  });
  const result = schema.safeParse(present);
  if (result.success) return keys ? { ...configShape.parse({}), ...result.data } : (result.data as PlatformConfig);
  throw new ConfigError(
    result.error.issues.map((issue) => {
      const variable = String(issue.path[0] ?? '(environment)');
      const received = present[variable];
      const expected =
        issue.code === 'invalid_value'
          ? `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`
          : issue.message;
      const echoed = received === undefined || SECRET_VARIABLES.has(variable as ConfigKey) ? expected : `${expected}, got ${JSON.stringify(received)}`;
      return { variable, expected: echoed };
    }),
  );
}
