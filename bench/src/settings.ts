// The bench's knobs (BENCH_* and the servers' URLs), read once. A bad value stops the bench
// with a message that names the variable, before anything starts.
import { fileURLToPath } from 'node:url';

/** The checkout the bench runs from: its built entries are what it measures. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function wholeNumber(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min) {
    console.error(`${name} must be a whole number >= ${min} (got ${JSON.stringify(raw)})`);
    process.exit(2);
  }
  return value;
}

export const ROUNDS = wholeNumber('BENCH_ROUNDS', 3, 0);
export const DURATION = wholeNumber('BENCH_DURATION', 5, 1);
export const WARMUP = wholeNumber('BENCH_WARMUP', 2, 1);
export const CONNECTIONS = wholeNumber('BENCH_CONNECTIONS', 10, 1);
export const NGINX_WORKERS = wholeNumber('BENCH_NGINX_WORKERS', 1, 1);
export const LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'info';
export const EXTRA = process.env.BENCH_EXTRA === '1';
export const PROFILE = process.env.BENCH_PROFILE === '1' || process.argv.includes('--profile');
/** Node options for the platform's processes (BENCH_NODE_ARGS, space-separated): split's, and the all-in-one's where a phase sets none; NODE_OPTIONS refuses some, like --cpu-prof. */
export const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);

/**
 * The systems a round measures (BENCH_ONLY, comma-separated; default all but `compare` and
 * `lists`, which run only when named: `lists` loads a million rows each round).
 */
export const SYSTEMS = ['nginx', 'all-in-one', 'embedded', 'split', 'npm-start', 'bounds', 'peer', 'compare', 'lists'] as const;
export type System = (typeof SYSTEMS)[number];
const DEFAULT_SYSTEMS = SYSTEMS.filter((name) => name !== 'compare' && name !== 'lists').join(',');
const only = (process.env.BENCH_ONLY || DEFAULT_SYSTEMS).split(',').map((name) => name.trim());
if (only.some((name) => !(SYSTEMS as readonly string[]).includes(name))) {
  console.error(`BENCH_ONLY takes a comma-separated list of ${SYSTEMS.join(', ')} (got ${JSON.stringify(process.env.BENCH_ONLY)})`);
  process.exit(2);
}
export const ONLY = only as System[];
export const runs = (system: System): boolean => ONLY.includes(system);

/**
 * `compare` (BENCH_ONLY=nginx,compare): the headline figures of variants of the platform,
 * alternated within each round. A is this checkout as `npm start` runs it. B, C, ... are each
 * of BENCH_B_ROOT's `;`-separated checkouts (built; default this one) started as each of
 * BENCH_B_START's `;`-separated start scripts says (shaped like package.json's, `env
 * VAR=value node --flag ...`; default that checkout's own start script).
 */
const list = (value: string | undefined) => (value ?? '').split(';').map((entry) => entry.trim()).filter(Boolean);
export const B_ROOTS = list(process.env.BENCH_B_ROOT).length > 0 ? list(process.env.BENCH_B_ROOT) : [ROOT];
export const B_STARTS = list(process.env.BENCH_B_START);
/** Whether compare measures (c) in split mode too, when a variant is another build (BENCH_COMPARE_SPLIT=0: not). */
export const COMPARE_SPLIT = process.env.BENCH_COMPARE_SPLIT !== '0';

/** The databases the peer phase runs the platform on (BENCH_PEER_DATABASES, comma-separated; default both). */
export const PEER_DATABASE_NAMES = ['embedded', 'postgres'] as const;
export type PeerDatabase = (typeof PEER_DATABASE_NAMES)[number];
const peerDatabases = (process.env.BENCH_PEER_DATABASES || PEER_DATABASE_NAMES.join(',')).split(',').map((name) => name.trim());
if (peerDatabases.some((name) => !(PEER_DATABASE_NAMES as readonly string[]).includes(name))) {
  console.error(`BENCH_PEER_DATABASES takes a comma-separated list of ${PEER_DATABASE_NAMES.join(', ')} (got ${JSON.stringify(process.env.BENCH_PEER_DATABASES)})`);
  process.exit(2);
}
export const PEER_DATABASES = peerDatabases as PeerDatabase[];

/** The peer phase's scenarios to run (BENCH_PEER_SCENARIOS, comma-separated keys; default all): checked against the list in peer.ts. */
export const PEER_SCENARIOS = (process.env.BENCH_PEER_SCENARIOS ?? '').split(',').map((name) => name.trim()).filter(Boolean);

export const BASE_DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
export const NATS_URL = process.env.NATS_URL || 'nats://127.0.0.1:4222';
export const NGINX = '/usr/sbin/nginx';

/** ARGON2_* and THREADPOOL_NICE pass through to the platform, to compare password-hashing settings. */
export const PASSED_THROUGH = Object.fromEntries(
  Object.entries(process.env).filter((entry): entry is [string, string] => (entry[0].startsWith('ARGON2_') || entry[0] === 'THREADPOOL_NICE') && entry[1] !== undefined),
);
export const PATH = process.env.PATH ?? '';
export const HOME = process.env.HOME ?? '';
