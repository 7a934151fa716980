// 4. `npm start` itself, as a newcomer runs it (issue 10, items 7 and 8): readiness on a first
// start (empty data directory) and on a second start (same directory), the idle resident
// memory of the whole process tree (npm, its shell, node) after 100 requests and a 5 s pause,
// and Ctrl-C (SIGINT to the process group, as a terminal sends it) with a keep-alive client
// still connected.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@app/testing';
import { Pool } from 'undici';
import { broken, median } from './measure.js';
import { ADMIN_EMAIL, form, FORM, nodeEnv, PRODUCT } from './platform.js';
import { answers, interrupt, removeDir, sleep, startProcess, tempDir } from './processes.js';
import { HOME } from './settings.js';

export interface ProcessMemory {
  pid: number;
  name: string;
  mb: number;
}

/** Resident memory of `pid` and every process below it, from /proc (Linux), in MB, by process. */
export function processTree(pid: number): ProcessMemory[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name, which is in parentheses and may hold spaces: state, ppid, ...
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child);
  return tree.flatMap((member) => {
    try {
      const status = readFileSync(`/proc/${member}/status`, 'utf8');
      const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      const name = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? '?';
      return [{ pid: member, name, mb: kb / 1024 }];
    } catch {
      return [];
    }
  });
}

/** The node processes of a tree (a thread's name may show: MainThread). */
export const nodeMegabytes = (tree: ProcessMemory[]) => tree.filter((p) => p.name === 'node' || p.name === 'MainThread').reduce((sum, p) => sum + p.mb, 0);

type StartKey = 'firstStart' | 'secondStart' | 'rss' | 'nodeRss' | 'shutdown';
interface StartTarget {
  label: string;
  unit: 's' | 'MB';
  text?: string;
  pass?(value: number): boolean;
}

const START_TARGETS: Record<StartKey, StartTarget> = {
  firstStart: { label: 'npm start: readiness 200, empty data directory', unit: 's', text: '<= 6 s', pass: (v) => v <= 6 },
  secondStart: { label: 'npm start: readiness 200, second start', unit: 's', text: '<= 3 s', pass: (v) => v <= 3 },
  rss: { label: 'npm start: idle RSS of the process tree', unit: 'MB', text: '<= 250 MB', pass: (v) => v <= 250 },
  nodeRss: { label: '  of which the node process', unit: 'MB' },
  shutdown: { label: 'npm start: Ctrl-C to exit, keep-alive client', unit: 's', text: 'exit 0 <= 2 s', pass: (v) => v <= 2 },
};

export interface StartRow {
  key: StartKey;
  value: number;
  failures: number;
}

/** `npm start` from the checkout on a free port; resolves with the handle and the seconds to readiness. */
async function npmStart(name: string, dir: string, password: string) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const handle = await startProcess(name, 'npm', ['start'], {
    env: nodeEnv({ HOME, PORT: String(port), DATA_DIR: join(dir, 'data'), BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, BOOTSTRAP_ADMIN_PASSWORD: password }),
    log: join(dir, `${name.replace(/\W+/g, '-')}.log`),
    ready: answers(`${base}/api/v1/health/readiness`),
    pollMs: 20,
  });
  return { handle, base, seconds: (performance.now() - started) / 1000 };
}

/**
 * 100 requests on one keep-alive connection of `pool`: a sign-in of the bootstrap admin
 * (retried while it is being created), then writes and reads of products, a list, the
 * identities; then a 5 s pause, after which a process's memory is what it keeps idle.
 */
export async function hundredRequestsThenIdle(pool: Pool, password: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  let token: string | undefined;
  let sent = 0;
  while (!token) {
    sent++;
    const response = await pool.request({ path: '/api/v1/sso/token', method: 'POST', headers: FORM, body: form({ grant_type: 'password', username: ADMIN_EMAIL, password }) });
    const body = await response.body.text();
    if (response.statusCode === 200) token = (JSON.parse(body) as { access_token: string }).access_token;
    else if (Date.now() > deadline) throw new Error(`no token for the bootstrap admin within 20 s: ${response.statusCode} ${body.slice(0, 300)}`);
    else await sleep(100);
  }
  const auth = { authorization: `Bearer ${token}` };
  const ids: string[] = [];
  for (; sent < 100; sent++) {
    const kind = sent % 4;
    const request =
      kind === 0 || ids.length === 0
        ? { path: '/api/v1/products', method: 'POST' as const, headers: { ...auth, 'content-type': 'application/json' }, body: PRODUCT }
        : kind === 1
          ? { path: `/api/v1/products/${ids[sent % ids.length]}`, method: 'GET' as const, headers: auth }
          : kind === 2
            ? { path: '/api/v1/products?limit=20', method: 'GET' as const, headers: auth }
            : { path: '/api/v1/identity?limit=20', method: 'GET' as const, headers: auth };
    const response = await pool.request(request);
    const body = await response.body.text();
    if (response.statusCode >= 300) throw new Error(`${request.method} ${request.path}: ${response.statusCode} ${body.slice(0, 300)}`);
    if (request.method === 'POST') ids.push((JSON.parse(body) as { id: string }[])[0]!.id);
  }
  await sleep(5000);
}

export async function npmStartScenario(round: number): Promise<StartRow[]> {
  const dir = tempDir('npm-start');
  const rows: StartRow[] = [];
  const row = (key: StartKey, value: number, failures = 0) => {
    const target = START_TARGETS[key];
    console.log(`  ${target.label.padEnd(48)} ${value.toFixed(target.unit === 'MB' ? 0 : 2)} ${target.unit}${failures ? '  !!!!! BROKEN' : ''}`);
    rows.push({ key, value, failures });
  };
  try {
    const password = randomBytes(18).toString('base64url');
    const first = await npmStart('npm start (first)', dir, password);
    row('firstStart', first.seconds);
    const pool = new Pool(first.base, { connections: 1, keepAliveTimeout: 60_000 });
    try {
      await hundredRequestsThenIdle(pool, password);
      const tree = processTree(first.handle.child.pid!);
      row('rss', tree.reduce((sum, p) => sum + p.mb, 0));
      row('nodeRss', nodeMegabytes(tree));
      console.log(`    by process: ${tree.map((p) => `${p.name} ${p.mb.toFixed(0)} MB`).join(', ')}`);
      // Ctrl-C with this pool's keep-alive connection still open.
      const stopped = await interrupt(first.handle);
      row('shutdown', stopped.seconds, stopped.code === 0 ? 0 : 1);
      if (stopped.code !== 0) broken.push(`round ${round}: npm start exited with ${stopped.code} on Ctrl-C`);
    } finally {
      await pool.close();
    }
    const second = await npmStart('npm start (second)', dir, password);
    row('secondStart', second.seconds);
    await interrupt(second.handle);
  } finally {
    removeDir(dir);
  }
  return rows;
}

export function reportStart(rounds: StartRow[][]): void {
  const table = (Object.entries(START_TARGETS) as [StartKey, StartTarget][]).flatMap(([key, target]) => {
    const values = rounds.flatMap((rows) => rows.filter((row) => row.key === key && row.failures === 0).map((row) => row.value));
    if (values.length === 0 && !target.text) return [];
    const value = median(values);
    return [
      {
        measure: target.label,
        median: value === undefined ? '-' : `${value.toFixed(target.unit === 'MB' ? 0 : 2)} ${target.unit}`,
        target: target.text ?? '',
        verdict: !target.pass ? '' : value === undefined ? 'BROKEN' : target.pass(value) ? 'PASS' : 'FAIL',
        rounds: `${values.length}/${rounds.length}`,
      },
    ];
  });
  console.table(table);
}
