// `npm run start:split -- --replicas N`: every service as its own process, N replicas each,
// the gateway on PORT (3000). Needs DATABASE_URL, REDIS_URL and NATS_URL: the processes share
// nothing else. A process that exits on its own is started again; Ctrl-C stops every process
// and exits 0 when all of them stopped cleanly.
import { parseArgs } from 'node:util';
import { ConfigError } from '@app/platform';
import { MAX_REPLICAS, missingVariables, SPLIT_SERVICES, startSplit } from './split.js';

const EX_USAGE = 64;
const EX_CONFIG = 78;

function fail(code: number, message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

let replicas = 1;
try {
  const { values } = parseArgs({ options: { replicas: { type: 'string', short: 'r' } }, strict: true });
  if (values.replicas !== undefined) {
    replicas = Number(values.replicas);
    if (!/^\d+$/.test(values.replicas) || replicas < 1 || replicas > MAX_REPLICAS) throw new Error(`--replicas takes a whole number from 1 to ${MAX_REPLICAS} (got ${JSON.stringify(values.replicas)})`);
  }
} catch (error) {
  fail(EX_USAGE, `${(error as Error).message}\nusage: npm run start:split -- [--replicas N]`);
}

// eslint-disable-next-line no-restricted-properties -- the launcher hands its environment to the processes it starts
const env = process.env;
const missing = missingVariables(env);
if (missing.length > 0) {
  fail(
    EX_CONFIG,
    `split mode runs every service as its own process, so they share a database, a cache and a bus:\n` +
      `  missing: ${missing.join(', ')}\n` +
      `  e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379 \\\n` +
      `       NATS_URL=nats://127.0.0.1:4222 npm run start:split -- --replicas ${replicas}\n` +
      `  (\`npm start\` runs the whole platform in one process on an embedded database, with none of them)`,
  );
}
const port = env.PORT === undefined || env.PORT === '' ? 3000 : Number(env.PORT);
if (!Number.isInteger(port) || port < 1 || port + 100 * replicas + 10 > 65535) fail(EX_CONFIG, `PORT: expected a port number from 1 to ${65525 - 100 * replicas} (got ${JSON.stringify(env.PORT)})`);

const cluster = await startSplit({ replicas, port, env }).catch((error: Error) =>
  error instanceof ConfigError ? fail(EX_CONFIG, error.message) : fail(1, `split mode failed to start: ${error.message}`),
);

process.stdout.write(
  `\nsplit mode ready: gateway on ${cluster.url} (docs at ${cluster.url}/docs), ${replicas} replica(s) per service:\n` +
    SPLIT_SERVICES.map((service) => `  ${service.padEnd(12)} ${cluster.replicas[service].join(', ')}`).join('\n') +
    `\n  admin        ${env.BOOTSTRAP_ADMIN_EMAIL ? `${env.BOOTSTRAP_ADMIN_EMAIL} (BOOTSTRAP_ADMIN_EMAIL, BOOTSTRAP_ADMIN_PASSWORD)` : env.NODE_ENV === undefined || env.NODE_ENV === 'development' ? 'admin@localhost (on its first start sso printed its generated password above)' : 'none configured: set BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD'}` +
    `\n  metrics      ${cluster.processes.map((member) => `${member.name} ${member.managementUrl}/metrics`).join(', ')}` +
    `\nCtrl-C stops every process.\n\n`,
);

let stopping = false;
const shutdown = (signal: NodeJS.Signals) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`${signal}: stopping every process...\n`);
  void cluster.stop().then((clean) => process.exit(clean ? 0 : 1));
};
// A terminal's Ctrl-C reaches the children too (one process group); stop() waits for them.
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
