// What the bench measures: each scenario's label and, where it has one, its target.

/** A scenario's figures in one round. */
export interface Row {
  key: ScenarioKey;
  rps?: number;
  p50?: number;
  p99?: number;
  /** Times scenarios: the slowest sample, ms. */
  max?: number;
  failures: number;
  /** Ratio to the round's nginx baseline. */
  ratio?: number;
  /** Scenarios at a fixed rate: the rate asked for. */
  rate?: number;
  /** (a) at half rate beside logins: (a) at half rate's p99 without them. */
  idleP99?: number;
  /** (c) with 10,000 revocations: its rate over the plain (c)'s. */
  ofSplit?: number;
  /** (a) without a feature (METRICS=off, LOG_LEVEL=warn): (a) with it, its rate over this one's. */
  withFeature?: number;
  /** nginx serving (a)'s bytes as a static file: (a)'s rate over this one's. */
  readOver?: number;
}

export const LABELS = {
  baseline: 'nginx -> bare Fastify (baseline)',
  read: '(a) all-in-one: cached read-by-id, token',
  ping: '(b) all-in-one: ping, no token',
  half: '(a) at half its max rate',
  clientCredentials: '(d) all-in-one: client_credentials grant',
  refresh: '(e) all-in-one: refresh_token grant',
  logins: '(f) all-in-one: password grant (argon2id)',
  introspection: '(g) all-in-one: introspection, API key',
  authorizationCode: '(h) all-in-one: authorize, login, code, token',
  readDuringLogins: '(a) at half rate, with 40 logins/s',
  readMetricsOn: '(a) on a second all-in-one, METRICS=on',
  readMetricsOff: '(a) beside it, METRICS=off (metrics cost)',
  readLogsOn: '(a) on a third all-in-one, LOG_LEVEL=info',
  readLogsOff: '(a) beside it, LOG_LEVEL=warn (request log cost)',
  staticFile: "nginx: (a)'s bytes as a static file",
  split: '(c) split: cached read-by-id, gateway -> crud',
  split2: '(c) split, 2 crud replicas behind the gateway',
  splitRevoked: '(c) split, 10,000 revoked sessions in the set',
  splitList: 'split: list (limit 20), cached',
  splitCreate: 'split: create',
  splitUncached: 'split: read-by-id, uncached',
  splitListUncached: 'split: list (limit 20), uncached',
  revocationSpread: '(r) revoked -> refused on every replica (ms)',
  cutAnswered: '(u) crud cut -> gateway answers 502/503 (ms)',
  compareRead: 'compare: (a) all-in-one',
  compareSplit: 'compare: (c) split',
} as const;
export type ScenarioKey = keyof typeof LABELS;

/** The median figures of a scenario over the rounds, which a target's verdict is taken from. */
export interface Summary {
  rps?: number;
  max?: number;
  p50?: number;
  p99?: number;
  ratio?: number;
  idleP99?: number;
  ofSplit?: number;
  withFeature?: number;
  readOver?: number;
}

export interface Target {
  text: string;
  /** What the verdict is taken from besides the row itself (a ratio needs nginx's round). */
  needs?: 'ratio' | 'ofSplit' | 'withFeature' | 'readOver' | 'max';
  pass(summary: Summary): boolean;
}

const at = (value: number | undefined) => value ?? Number.NaN;

export const TARGETS: Partial<Record<ScenarioKey, Target>> = {
  read: { text: '>= 0.8x nginx', needs: 'ratio', pass: (row) => at(row.ratio) >= 0.8 },
  staticFile: { text: '(a) >= 0.3x this', needs: 'readOver', pass: (row) => at(row.readOver) >= 0.3 },
  ping: { text: '>= 0.7x nginx', needs: 'ratio', pass: (row) => at(row.ratio) >= 0.7 },
  split: { text: '>= 0.25x nginx', needs: 'ratio', pass: (row) => at(row.ratio) >= 0.25 },
  splitRevoked: { text: '>= 0.95x (c)', needs: 'ofSplit', pass: (row) => at(row.ofSplit) >= 0.95 },
  readMetricsOff: { text: '(a) >= 0.95x this', needs: 'withFeature', pass: (row) => at(row.withFeature) >= 0.95 },
  readLogsOff: { text: '(a) >= 0.98x this', needs: 'withFeature', pass: (row) => at(row.withFeature) >= 0.98 },
  half: { text: 'p99 <= 5 ms', pass: (row) => at(row.p99) <= 5 },
  clientCredentials: { text: '>= 1000 tokens/s', pass: (row) => at(row.rps) >= 1000 },
  refresh: { text: '>= 500 tokens/s', pass: (row) => at(row.rps) >= 500 },
  logins: { text: '>= 40 logins/s', pass: (row) => at(row.rps) >= 40 },
  introspection: { text: '>= 5000 introspections/s', pass: (row) => at(row.rps) >= 5000 },
  authorizationCode: { text: '>= 30 round trips/s', pass: (row) => at(row.rps) >= 30 },
  readDuringLogins: { text: 'p99 <= 2x (a) at half rate', pass: (row) => at(row.p99) <= 2 * at(row.idleP99) },
  // Times, not rates: the slowest of the round's samples (its median over the rounds).
  revocationSpread: { text: 'max <= 1000 ms', needs: 'max', pass: (row) => at(row.max) <= 1000 },
  cutAnswered: { text: 'max <= 1000 ms', needs: 'max', pass: (row) => at(row.max) <= 1000 },
};

/** The scenarios whose rows are times (ms), not rates. */
export const TIME_BOUNDS: readonly ScenarioKey[] = ['revocationSpread', 'cutAnswered'];

/** Password logins per second beside (a) at half rate: the target login rate. */
export const LOGIN_RATE = 40;
