// Split mode on one machine: every service as its own process, N replicas each, and the
// gateway in front on PORT balancing each prefix across a service's replicas (the comma
// separated URL lists of clients/replicas.ts). What Kubernetes does with Deployments and
// Services, this does with child processes and loopback ports, from the same built entries.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { PLATFORM_CONFIG } from '@app/all-in-one';
import { SERVICES, type ServiceName } from '@app/contracts';
import { loadConfig } from '@app/platform';

/** The services behind the gateway, each run as N replicas; the gateway runs once, on PORT. */
export const SPLIT_SERVICES = ['identity', 'credentials', 'sso', 'crud', 'health'] as const satisfies readonly ServiceName[];
type SplitService = (typeof SPLIT_SERVICES)[number];

/** The backing servers split mode needs: processes share nothing else. */
export const REQUIRED_VARIABLES = ['DATABASE_URL', 'REDIS_URL', 'NATS_URL'] as const;

/** Replica numbers go up to 9: replica r of a service listens on PORT + 100 r + its registry offset. */
export const MAX_REPLICAS = 9;

/** The gateway's management port (/metrics) when MANAGEMENT_PORT is not given; the replicas' follow from it as their ports do. */
export const DEFAULT_MANAGEMENT_PORT = 9464;

/** The platform's readiness through the gateway: every service, sso's bootstrap admin included. */
const AGGREGATED_READINESS_PATH = '/api/v1/health/readiness';

/** How long a process may take to answer its readiness probe (migrations run at start), by default. */
const READY_TIMEOUT_MS = 60_000;
/**
 * How long the processes may take to exit on SIGTERM before SIGKILL: longer than their own
 * SHUTDOWN_TIMEOUT_MS (10 s by default), so one that hangs says itself what it waited for.
 */
const STOP_TIMEOUT_MS = 15_000;
/** How long after a process exited its output may still be arriving. */
const EXIT_LINES_WAIT_MS = 2_000;

const root = fileURLToPath(new URL('../../..', import.meta.url));
const entryOf = (service: ServiceName) => `${root}services/${service}/dist/main.js`;

/**
 * Replica `replica` (1-based) of `service` with the gateway on `port`: the service's registry
 * port moved up by 100 per replica (crud, 3004 in the registry: 3104, 3204, ... for PORT 3000).
 */
export function replicaPort(port: number, service: SplitService, replica: number): number {
  return port + 100 * replica + (SERVICES[service].port - SERVICES.gateway.port);
}

export interface SplitOptions {
  /** Replicas per service, 1 to MAX_REPLICAS. */
  replicas: number;
  /** The gateway's port (the replicas' ports follow from it); 0 picks free ports, management ports too, for every process. */
  port: number;
  /**
   * The gateway's management port (/metrics); each replica's follows from it as its public
   * port does from `port`. Default: MANAGEMENT_PORT of `env`, else DEFAULT_MANAGEMENT_PORT.
   */
  managementPort?: number;
  /** The environment every process starts with: must name DATABASE_URL, REDIS_URL and NATS_URL. */
  env: Record<string, string | undefined>;
  /** Interface the processes bind (default 127.0.0.1). */
  host?: string;
  /** Where each process's output lines go, prefixed with its name (default: this process's stdout). */
  output?: (name: string, line: string) => void;
  /**
   * Whether a process that exits on its own is started again, as Kubernetes restarts a pod
   * (after 1 s, doubling to 30 s while it keeps failing within a minute of its start); default
   * true. Either way the others keep serving, and the gateway skips a replica that is down.
   */
  restart?: boolean;
  /** Called with every service's replica URLs once the ports are chosen, before any process starts. */
  onPlanned?: (replicas: Record<SplitService, string[]>) => void;
  /**
   * How long each process may take to answer its readiness probe (default 60 s); a machine
   * that other work keeps busy (a bench, a test run) needs longer to start a dozen processes.
   */
  readyTimeoutMs?: number;
}

export interface SplitProcess {
  /** `crud#2`, `gateway`. */
  name: string;
  service: ServiceName;
  url: string;
  /** Its management port's URL (/metrics). */
  managementUrl: string;
  /** The running process (a new one after a restart). */
  child: ChildProcess;
  /** Resolves with its exit code or signal when the current child exits. */
  exited: Promise<number | string | null>;
}

export interface SplitCluster {
  /** The gateway: the one address clients use. */
  url: string;
  /** Each service's replicas' URLs, in replica order. */
  replicas: Record<SplitService, string[]>;
  processes: SplitProcess[];
  /** SIGTERM to every process (the gateway first), SIGKILL after a timeout; resolves with whether all exited 0. */
  stop(): Promise<boolean>;
}

/** Says which of the backing servers' variables `env` lacks, in the order split mode needs them. */
export function missingVariables(env: Record<string, string | undefined>): string[] {
  return REQUIRED_VARIABLES.filter((name) => !env[name]);
}

/** A port taken by a placeholder listener until `release`, just before its process binds it. */
interface ReservedPort {
  port: number;
  release(): Promise<void>;
}

/**
 * A free loopback port, held: the processes start one after another over many seconds (the
 * gateway last), and a port merely found free at the start can be taken by then by anyone
 * else on the machine (another test's server, which would even answer the readiness probe).
 */
const reservePort = () =>
  new Promise<ReservedPort>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      resolve({ port, release: () => new Promise<void>((done) => server.close(() => done())) });
    });
  });

/** A fixed port (PORT given): nothing to hold. */
const fixedPort = (port: number): ReservedPort => ({ port, release: async () => undefined });

/**
 * Polls the process's readiness probe until it answers 200. A process that exits meanwhile is
 * waited for again once restarted (`restart`), as Kubernetes restarts a pod that fails at start
 * (a database too slow to answer under load, say); without restarts its exit is an error that
 * quotes its last lines.
 */
async function waitUntilReady(process: SplitProcess & { lastLines: string[] }, restart: boolean, timeoutMs: number, path = '/health/readiness'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { child } = process;
    if (!restart && (child.exitCode !== null || child.signalCode !== null)) {
      throw new Error(`${process.name} exited before it was ready (exit ${child.exitCode ?? child.signalCode}); its last lines:\n${process.lastLines.join('\n')}`);
    }
    const ready = await fetch(`${process.url}${path}`, { signal: AbortSignal.timeout(2_000) }).then(
      (response) => response.status === 200,
      () => false,
    );
    if (ready) return;
    if (Date.now() > deadline) {
      throw new Error(`${process.name} was not ready within ${timeoutMs / 1000} s (${process.url}${path}); its last lines:\n${process.lastLines.join('\n')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Starts every service's replicas, waits until each is ready, then the gateway, then the
 * platform's aggregated readiness; stops what it started when any of them fails to start.
 * Throws a ConfigError, starting nothing, when `env` is not a runnable configuration.
 * Without BOOTSTRAP_ADMIN_* and in development (NODE_ENV unset or `development`), sso creates
 * admin@localhost and prints its generated password once, as the all-in-one does.
 */
export async function startSplit(options: SplitOptions): Promise<SplitCluster> {
  const missing = missingVariables(options.env);
  if (missing.length > 0) throw new Error(`split mode needs ${missing.join(', ')} (the servers its processes share)`);
  if (!Number.isInteger(options.replicas) || options.replicas < 1 || options.replicas > MAX_REPLICAS) {
    throw new Error(`replicas must be a whole number from 1 to ${MAX_REPLICAS} (got ${options.replicas})`);
  }
  // Every variable of every process, checked once as the all-in-one checks them (a ConfigError
  // naming each bad one), before a dozen processes start and each stops on its own part of it.
  loadConfig(options.env, PLATFORM_CONFIG);
  const host = options.host ?? '127.0.0.1';
  const output = options.output ?? ((name, line) => process.stdout.write(`[${name}] ${line}\n`));
  const managementBase = options.managementPort ?? (options.env.MANAGEMENT_PORT ? Number(options.env.MANAGEMENT_PORT) : DEFAULT_MANAGEMENT_PORT);
  const portOf = async (service: SplitService | 'gateway', replica: number, base: number) =>
    options.port === 0 ? reservePort() : fixedPort(service === 'gateway' ? base : replicaPort(base, service, replica));

  const replicas = {} as Record<SplitService, string[]>;
  const plan: { name: string; service: ServiceName; port: number; managementPort: number }[] = [];
  // Held until each process is about to bind its own (released before a failed start's cleanup too).
  const reserved = new Map<number, ReservedPort>();
  const releasePort = async (port: number) => {
    await reserved.get(port)?.release();
    reserved.delete(port);
  };
  const releaseAll = () => Promise.all([...reserved.keys()].map(releasePort));
  const reserve = async (service: SplitService | 'gateway', replica: number, base = options.port) => {
    const held = await portOf(service, replica, base);
    reserved.set(held.port, held);
    return held.port;
  };
  let gatewayPort: number;
  let gatewayManagementPort: number;
  try {
    for (const service of SPLIT_SERVICES) {
      replicas[service] = [];
      for (let replica = 1; replica <= options.replicas; replica++) {
        const port = await reserve(service, replica);
        const managementPort = await reserve(service, replica, managementBase);
        replicas[service].push(`http://127.0.0.1:${port}`);
        plan.push({ name: `${service}#${replica}`, service, port, managementPort });
      }
    }
    gatewayPort = await reserve('gateway', 0);
    gatewayManagementPort = await reserve('gateway', 0, managementBase);
  } catch (error) {
    await releaseAll();
    throw error;
  }
  options.onPlanned?.(replicas);
  // Every process learns where every service's replicas are: sso calls identity and
  // credentials, verifiers fetch sso's keys, the gateway and health reach them all.
  const urls = Object.fromEntries(SPLIT_SERVICES.map((service) => [SERVICES[service].urlVariable, replicas[service].join(',')]));
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;

  const processes: SplitProcess[] = [];
  const restart = options.restart ?? true;
  const readyTimeoutMs = options.readyTimeoutMs ?? READY_TIMEOUT_MS;
  let stopping = false;
  const timers = new Set<NodeJS.Timeout>();

  type Member = SplitProcess & { backoffMs?: number; lastLines: string[] };
  /** What a member printed last, for an error that says why it did not start. */
  const remember = (member: Member, line: string) => {
    member.lastLines.push(line);
    if (member.lastLines.length > 20) member.lastLines.shift();
    output(member.name, line);
  };
  const spawnChild = (member: Member, port: number, managementPort: number) => {
    const child = spawn(process.execPath, [entryOf(member.service)], {
      cwd: root,
      env: {
        ...options.env,
        ...urls,
        GATEWAY_URL: gatewayUrl,
        PORT: String(port),
        MANAGEMENT_PORT: String(managementPort),
        HOST: host,
        // Behind the gateway a service believes the client address the gateway forwards (the
        // gateway calls it over loopback); the gateway itself keeps the TRUST_PROXY given.
        ...(member.service !== 'gateway' && { TRUST_PROXY: 'loopback' }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) remember(member, line);
      });
      stream.on('end', () => rest && remember(member, rest));
    }
    const startedAt = Date.now();
    member.child = child;
    member.exited = new Promise((resolve) => {
      let ended = false;
      const end = (code: number | null, signal: NodeJS.Signals | null) => {
        if (ended) return;
        ended = true;
        resolve(code ?? signal);
        if (stopping) return;
        // A crash loop backs off; a process that ran for a minute starts again from 1 s.
        member.backoffMs = Date.now() - startedAt > 60_000 ? 1_000 : Math.min((member.backoffMs ?? 500) * 2, 30_000);
        output(member.name, `exited on its own (${code ?? signal})${restart ? `; starting it again in ${member.backoffMs / 1000} s` : ''}`);
        if (!restart) return;
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!stopping) spawnChild(member, port, managementPort);
        }, member.backoffMs);
        timers.add(timer);
      };
      // 'close' (after 'exit'): by then the lines the process wrote as it exited are read too. A
      // pipe someone else still holds open must not hold the exit back for long, though.
      child.once('close', end);
      child.once('exit', (code, signal) => setTimeout(() => end(code, signal), EXIT_LINES_WAIT_MS).unref());
    });
  };

  const launch = async (name: string, service: ServiceName, port: number, managementPort: number): Promise<Member> => {
    const member = { name, service, url: `http://127.0.0.1:${port}`, managementUrl: `http://127.0.0.1:${managementPort}`, lastLines: [] as string[] } as Member;
    await Promise.all([releasePort(port), releasePort(managementPort)]);
    spawnChild(member, port, managementPort);
    processes.push(member);
    return member;
  };

  const stop = async (): Promise<boolean> => {
    stopping = true;
    for (const timer of timers) clearTimeout(timer);
    // The gateway first, so no request reaches a replica that is going away.
    const order = [...processes].sort((a, b) => Number(b.service === 'gateway') - Number(a.service === 'gateway'));
    const codes: (number | string | null)[] = [];
    for (const group of [order.filter((p) => p.service === 'gateway'), order.filter((p) => p.service !== 'gateway')]) {
      for (const member of group) if (member.child.exitCode === null && member.child.signalCode === null) member.child.kill('SIGTERM');
      codes.push(
        ...(await Promise.all(
          group.map(async (member) => {
            const exited = member.exited;
            let timer: NodeJS.Timeout | undefined;
            const outcome = await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, STOP_TIMEOUT_MS, 'timeout')))]);
            // Cleared, or the caller's process would stay up for STOP_TIMEOUT_MS after a clean stop.
            clearTimeout(timer);
            if (outcome === 'timeout') member.child.kill('SIGKILL');
            const code = await exited;
            if (code !== 0) output(member.name, outcome === 'timeout' ? `did not stop within ${STOP_TIMEOUT_MS / 1000} s of SIGTERM: killed` : `stopped on SIGTERM with ${code}, not 0`);
            return code;
          }),
        )),
      );
    }
    return codes.every((code) => code === 0);
  };

  try {
    const started = await Promise.all(plan.map(({ name, service, port, managementPort }) => launch(name, service, port, managementPort)));
    await Promise.all(started.map((member) => waitUntilReady(member, restart, readyTimeoutMs)));
    const gateway = await launch('gateway', 'gateway', gatewayPort, gatewayManagementPort);
    await waitUntilReady(gateway, restart, readyTimeoutMs);
    // Ready means the platform serves every flow: the aggregated readiness, which waits for
    // sso's signing key and bootstrap admin too (each process's own probe leaves the admin out).
    await waitUntilReady(gateway, restart, readyTimeoutMs, AGGREGATED_READINESS_PATH);
  } catch (error) {
    await releaseAll();
    await stop();
    throw error;
  }
  return { url: gatewayUrl, replicas, processes, stop };
}
