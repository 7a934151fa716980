// `--profile`: scenario (a) against an all-in-one under --cpu-prof, and the top 10 functions by self time.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { topSelfTime, type CpuProfile } from './cpu-profile.js';
import { broken, failuresOf } from './measure.js';
import { startAllInOne } from './platform.js';
import { removeDir, tempDir } from './processes.js';
import { CONNECTIONS, DURATION, ROOT, WARMUP } from './settings.js';

const nowMicros = () => Number(process.hrtime.bigint() / 1000n);

export async function profile(): Promise<void> {
  console.log(`\nCPU profile: scenario (a) for ${DURATION} s against an all-in-one started with --cpu-prof`);
  const profileDir = tempDir('cpu-profile');
  const platform = await startAllInOne({ nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] });
  let window: { from: number; to: number } | undefined;
  try {
    const options = { url: `${platform.base}/api/v1/products/${platform.id}`, headers: { authorization: `Bearer ${platform.token}` }, connections: CONNECTIONS };
    await autocannon({ ...options, duration: WARMUP });
    // Startup (migrations, PGlite) would fill the profile otherwise: only samples taken
    // between these two instants count. Node's hrtime and V8's profile timestamps both read
    // the monotonic clock in microseconds, so they compare across processes (Linux).
    const from = nowMicros();
    const result = await autocannon({ ...options, duration: DURATION });
    window = { from, to: nowMicros() };
    const failures = failuresOf(result);
    console.log(`  under the profiler: ${Math.round(result.requests.average)} rps, p99 ${result.latency.p99} ms`);
    if (failures > 0) {
      console.log(`  !!!!! BROKEN: ${failures} non-2xx answers, errors or timeouts under the profiler !!!!!`);
      broken.push(`profile run (${failures} failures)`);
    }
  } finally {
    await platform.stop();
  }
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error('the all-in-one wrote no .cpuprofile (did it exit through its SIGTERM handler?)');
  const parsed = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as CpuProfile;
  let top = topSelfTime(parsed, { limit: 10, window });
  if (top.busyMs === 0) {
    console.log("  (no samples inside the load window: this clock does not match the profile's; showing the whole process life, startup included)");
    top = topSelfTime(parsed, { limit: 10 });
  }
  removeDir(profileDir);
  const where = (url: string) => url.replace(/^file:\/\//, '').replace(ROOT, '');
  console.log(`  ${top.busyMs.toFixed(0)} ms busy, ${top.idleMs.toFixed(0)} ms idle in the load window; top 10 by self time (% of busy):`);
  console.table(
    top.functions.map((fn) => ({
      function: fn.name,
      where: fn.url ? `${where(fn.url)}:${fn.line}` : '(native)',
      'self ms': Number(fn.selfMs.toFixed(1)),
      '%': Number(fn.percent.toFixed(1)),
    })),
  );
}
